"""ListOffsets (2): earliest, latest (the real high watermark), max timestamp, by timestamp."""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.offsets import ListOffsetsResponse

from ...error_codes import ErrorCode
from .context import Handler, RequestContext

TopicResponse = ListOffsetsResponse.ListOffsetsTopicResponse
PartitionResponse = TopicResponse.ListOffsetsPartitionResponse

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3


def _partition(index: int, error: ErrorCode, offset: int = -1, timestamp: int = -1) -> Any:
    return PartitionResponse(partition_index=index, error_code=int(error), old_style_offsets=[],
                             timestamp=timestamp, offset=offset, leader_epoch=-1)


async def handle(ctx: RequestContext, req: Any) -> Any:
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            error, log_ = ctx.led_partition(t.name, p.partition_index)
            if log_ is None:
                parts.append(_partition(p.partition_index, error))
                continue
            if p.timestamp == LATEST:
                found: tuple[int, int] | None = (log_.high_watermark, -1)
            elif p.timestamp == EARLIEST:
                found = (log_.log_start_offset, -1)
            elif p.timestamp == MAX_TIMESTAMP:
                found = log_.max_timestamp_offset()
            else:
                found = log_.offset_for_timestamp(p.timestamp)
            offset, timestamp = found if found is not None else (-1, -1)
            parts.append(_partition(p.partition_index, ErrorCode.NONE, offset, timestamp))
        topics.append(TopicResponse(name=t.name, partitions=parts))
    return ListOffsetsResponse(version=req.version, throttle_time_ms=0, topics=topics)


def error_response(req: Any, error: ErrorCode) -> Any:
    return ListOffsetsResponse(version=req.version, throttle_time_ms=0, topics=[
        TopicResponse(name=t.name, partitions=[_partition(p.partition_index, error) for p in t.partitions])
        for t in req.topics])


HANDLER = Handler(handle, error_response)
