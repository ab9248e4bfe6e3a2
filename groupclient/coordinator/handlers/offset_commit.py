"""OffsetCommit (8); v9 carries a consumer-protocol member's epoch in the generation's place."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kafka.protocol.consumer.group import OffsetCommitResponse

from ...error_codes import ErrorCode
from ..group.offsets import OffsetToCommit, commit_offsets
from .context import Handler, RequestContext

Topic = OffsetCommitResponse.OffsetCommitResponseTopic
Partition = Topic.OffsetCommitResponsePartition


def _response(req: Any, codes: dict[tuple[str, int], ErrorCode]) -> Any:
    topics: dict[str, list[Any]] = {}
    for (topic, partition), code in codes.items():
        topics.setdefault(topic, []).append(Partition(partition_index=partition, error_code=int(code)))
    return OffsetCommitResponse(
        version=req.version, throttle_time_ms=0,
        topics=[Topic(name=name, partitions=parts) for name, parts in topics.items()],
    )


def _offsets(req: Any) -> list[OffsetToCommit]:
    return [
        OffsetToCommit(t.name, p.partition_index, p.committed_offset,
                       p.committed_leader_epoch if req.version >= 6 else -1, p.committed_metadata)
        for t in req.topics for p in t.partitions
    ]


async def handle(ctx: RequestContext, req: Any) -> Any:
    instance_id = req.group_instance_id if ctx.api_version >= 7 else None
    if refused := ctx.foreign_member(req.group_id, req.member_id, instance_id):
        return error_response(req, refused)
    offsets = _offsets(req)
    # as Kafka's KafkaApis: a partition that does not exist gets UNKNOWN_TOPIC_OR_PARTITION, and
    # the rest of the request is committed
    topics = ctx.core.topics.topics
    unknown = {(o.topic, o.partition) for o in offsets
               if (t := topics.get(o.topic)) is None or not 0 <= o.partition < len(t.partitions)}
    codes = {key: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for key in unknown}
    known = [replace(o, topic_id=topics[o.topic].topic_id) for o in offsets if (o.topic, o.partition) not in unknown]
    if known or not unknown:
        codes.update(commit_offsets(ctx.node.coordinator, req.group_id, req.generation_id_or_member_epoch,
                                    req.member_id, instance_id, known, ctx.wall_ms, ctx.now, ctx.api_version))
        ctx.node.kick_timers()
    return _response(req, codes)


def error_response(req: Any, error: ErrorCode) -> Any:
    return _response(req, {(o.topic, o.partition): error for o in _offsets(req)})


HANDLER = Handler(handle, error_response)
