"""OffsetFetch (9), with batched groups from v8, a consumer-protocol member's id and epoch from v9,
and topics named by id from v10 (Kafka 4.2+ advertises it)."""

from __future__ import annotations

import uuid
from typing import Any

from kafka.protocol.consumer.group import OffsetFetchResponse

from ...error_codes import ErrorCode
from ..group.offsets import fetch_offsets
from ..storage.group_store import CommittedOffset, TopicPartition
from .context import Handler, RequestContext

OldTopic = OffsetFetchResponse.OffsetFetchResponseTopic
OldPartition = OldTopic.OffsetFetchResponsePartition
Group = OffsetFetchResponse.OffsetFetchResponseGroup
GroupTopic = Group.OffsetFetchResponseTopics
GroupPartition = GroupTopic.OffsetFetchResponsePartitions

BY_TOPIC_ID = 10  # the first version that names topics by id only

Offsets = dict[TopicPartition, CommittedOffset | None]


def _requested(topics: Any) -> list[TopicPartition] | None:
    if topics is None:
        return None
    return [(t.name, p) for t in topics for p in t.partition_indexes]


def _partition(partition_cls: Any, partition: int, committed: CommittedOffset | None, error: int = 0) -> Any:
    return partition_cls(
        partition_index=partition,
        committed_offset=committed.offset if committed else -1,
        committed_leader_epoch=committed.leader_epoch if committed else -1,
        metadata=(committed.metadata or "") if committed else "",
        error_code=error,
    )


def _topics(offsets: Offsets, topic_cls: Any, partition_cls: Any,
            ids: dict[str, uuid.UUID] | None = None) -> list[Any]:
    """The answer's topics; with ``ids`` (v10) named by id, leaving out those no topic has the
    name of now (a deleted topic's offsets, in an answer of all of them: Kafka's KafkaApis)."""
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), committed in offsets.items():
        if ids is None or topic in ids:
            by_topic.setdefault(topic, []).append(_partition(partition_cls, partition, committed))
    if ids is None:
        return [topic_cls(name=name, partitions=parts) for name, parts in by_topic.items()]
    return [topic_cls(name="", topic_id=ids[name], partitions=parts) for name, parts in by_topic.items()]


def _group(ctx: RequestContext, g: Any) -> Any:
    """One group's answer, from v8."""
    coordinator = ctx.node.coordinator
    member = (g.member_id, g.member_epoch) if ctx.api_version >= 9 else (None, -1)
    if ctx.api_version < BY_TOPIC_ID:
        error, offsets = fetch_offsets(coordinator, g.group_id, _requested(g.topics), *member)
        return Group(group_id=g.group_id, error_code=int(error), topics=_topics(offsets, GroupTopic, GroupPartition))
    log = ctx.core.topics
    ids = {name: topic_id for name, (topic_id, _) in log.ids_and_counts().items()}
    wanted: list[TopicPartition] | None = None
    unknown: list[Any] = []  # topics by an id no topic has: UNKNOWN_TOPIC_ID, after the others
    if g.topics is not None:
        wanted = []
        for t in g.topics:
            name = log.name_of(t.topic_id)
            if name is None:
                unknown.append(GroupTopic(name="", topic_id=t.topic_id, partitions=[
                    _partition(GroupPartition, p, None, int(ErrorCode.UNKNOWN_TOPIC_ID)) for p in t.partition_indexes]))
            else:
                wanted += [(name, p) for p in t.partition_indexes]
    error, offsets = fetch_offsets(coordinator, g.group_id, wanted, *member)
    if error:
        return Group(group_id=g.group_id, error_code=int(error), topics=[])
    return Group(group_id=g.group_id, error_code=0, topics=_topics(offsets, GroupTopic, GroupPartition, ids) + unknown)


async def handle(ctx: RequestContext, req: Any) -> Any:
    if ctx.api_version < 8:
        error, offsets = fetch_offsets(ctx.node.coordinator, req.group_id, _requested(req.topics))
        if error:
            return error_response(req, error)
        return OffsetFetchResponse(version=req.version, throttle_time_ms=0, error_code=0,
                                   topics=_topics(offsets, OldTopic, OldPartition))
    return OffsetFetchResponse(version=req.version, throttle_time_ms=0, groups=[_group(ctx, g) for g in req.groups])


def error_response(req: Any, error: ErrorCode) -> Any:
    if req.version < 8:
        # before v2 there is no top-level error: report it on every partition asked for
        topics = [OldTopic(name=t.name, partitions=[
            OldPartition(partition_index=p, committed_offset=-1, committed_leader_epoch=-1,
                         metadata="", error_code=int(error)) for p in t.partition_indexes])
            for t in (req.topics or [])]
        return OffsetFetchResponse(version=req.version, throttle_time_ms=0, error_code=int(error), topics=topics)
    groups = [Group(group_id=g.group_id, error_code=int(error), topics=[]) for g in req.groups]
    return OffsetFetchResponse(version=req.version, throttle_time_ms=0, groups=groups)


HANDLER = Handler(handle, error_response)
