"""OffsetFetch (9), with batched groups from v8, and a consumer-protocol member's id and epoch from v9."""

from __future__ import annotations

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

Offsets = dict[TopicPartition, CommittedOffset | None]


def _requested(topics: Any) -> list[TopicPartition] | None:
    if topics is None:
        return None
    return [(t.name, p) for t in topics for p in t.partition_indexes]


def _topics(offsets: Offsets, topic_cls: Any, partition_cls: Any) -> list[Any]:
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), committed in offsets.items():
        by_topic.setdefault(topic, []).append(partition_cls(
            partition_index=partition,
            committed_offset=committed.offset if committed else -1,
            committed_leader_epoch=committed.leader_epoch if committed else -1,
            metadata=(committed.metadata or "") if committed else "",
            error_code=0,
        ))
    return [topic_cls(name=name, partitions=parts) for name, parts in by_topic.items()]


async def handle(ctx: RequestContext, req: Any) -> Any:
    coordinator = ctx.node.coordinator
    if ctx.api_version < 8:
        error, offsets = fetch_offsets(coordinator, req.group_id, _requested(req.topics))
        if error:
            return error_response(req, error)
        return OffsetFetchResponse(version=req.version, throttle_time_ms=0, error_code=0,
                                   topics=_topics(offsets, OldTopic, OldPartition))
    groups = []
    for g in req.groups:
        member = (g.member_id, g.member_epoch) if ctx.api_version >= 9 else (None, -1)
        error, offsets = fetch_offsets(coordinator, g.group_id, _requested(g.topics), *member)
        groups.append(Group(group_id=g.group_id, error_code=int(error),
                            topics=_topics(offsets, GroupTopic, GroupPartition)))
    return OffsetFetchResponse(version=req.version, throttle_time_ms=0, groups=groups)


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
