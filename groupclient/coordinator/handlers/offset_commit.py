"""OffsetCommit (8); v9 carries a consumer-protocol member's epoch in the generation's place, and
v10 names topics by id (Kafka 4.2+ advertises it)."""

from __future__ import annotations

import uuid
from typing import Any

from kafka.protocol.consumer.group import OffsetCommitResponse

from ...error_codes import ErrorCode
from ..group.offsets import OffsetToCommit, commit_offsets
from .context import Handler, RequestContext

Topic = OffsetCommitResponse.OffsetCommitResponseTopic
Partition = Topic.OffsetCommitResponsePartition

BY_TOPIC_ID = 10  # the first version that names topics by id only

# a requested topic as the answer names it: (name, id); v10 answers by id, older versions by name
TopicRef = tuple[str, uuid.UUID | None]


def _response(req: Any, codes: dict[tuple[TopicRef, int], ErrorCode]) -> Any:
    topics: dict[TopicRef, list[Any]] = {}
    for (topic, partition), code in codes.items():
        topics.setdefault(topic, []).append(Partition(partition_index=partition, error_code=int(code)))
    return OffsetCommitResponse(
        version=req.version, throttle_time_ms=0,
        topics=[Topic(name=name, topic_id=topic_id, partitions=parts) for (name, topic_id), parts in topics.items()],
    )


def _requested(req: Any) -> list[tuple[TopicRef, Any]]:
    """Each requested topic as its answer names it, with its partitions."""
    if req.version >= BY_TOPIC_ID:
        return [(("", t.topic_id), t.partitions) for t in req.topics]
    return [((t.name, None), t.partitions) for t in req.topics]


async def handle(ctx: RequestContext, req: Any) -> Any:
    instance_id = req.group_instance_id if ctx.api_version >= 7 else None
    if refused := ctx.foreign_member(req.group_id, req.member_id, instance_id):
        return error_response(req, refused)
    # as Kafka's KafkaApis: a topic id no topic has gets UNKNOWN_TOPIC_ID and a partition that does
    # not exist UNKNOWN_TOPIC_OR_PARTITION, each partition its own; the rest is committed
    log = ctx.core.topics
    codes: dict[tuple[TopicRef, int], ErrorCode] = {}
    known: list[OffsetToCommit] = []
    ref_of: dict[str, TopicRef] = {}
    for ref, partitions in _requested(req):
        name = ref[0] if ref[1] is None else log.name_of(ref[1])
        topic = log.topics.get(name) if name is not None else None
        for p in partitions:
            if name is None:
                codes[(ref, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_ID
            elif topic is None or not 0 <= p.partition_index < len(topic.partitions):
                codes[(ref, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                ref_of[name] = ref
                known.append(OffsetToCommit(
                    name, p.partition_index, p.committed_offset,
                    p.committed_leader_epoch if req.version >= 6 else -1, p.committed_metadata, topic.topic_id))
    if known or not codes:
        committed = commit_offsets(ctx.node.coordinator, req.group_id, req.generation_id_or_member_epoch,
                                   req.member_id, instance_id, known, ctx.wall_ms, ctx.now, ctx.api_version)
        codes.update({(ref_of.get(topic, (topic, None)), partition): code
                      for (topic, partition), code in committed.items()})
        ctx.node.kick_timers()
    return _response(req, codes)


def error_response(req: Any, error: ErrorCode) -> Any:
    return _response(req, {(ref, p.partition_index): error for ref, partitions in _requested(req) for p in partitions})


HANDLER = Handler(handle, error_response)
