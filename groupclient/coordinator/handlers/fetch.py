"""Fetch (1): whole record batches from an offset, long-polled up to ``max_wait_ms``.

No fetch sessions: the answer's session id is always 0, which tells clients to keep sending
full fetch requests (KIP-227 allows a broker to decline sessions).
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.fetch import FetchResponse

from ...error_codes import ErrorCode
from .context import Handler, RequestContext

TopicResponse = FetchResponse.FetchableTopicResponse
PartitionData = TopicResponse.PartitionData


def _partition(index: int, error: ErrorCode, hw: int = -1, start: int = -1, records: bytes | None = None) -> Any:
    return PartitionData(partition_index=index, error_code=int(error), high_watermark=hw,
                         last_stable_offset=hw, log_start_offset=start, aborted_transactions=None,
                         preferred_read_replica=-1, records=records)


def _read(ctx: RequestContext, req: Any) -> tuple[list[Any], int, bool]:
    """Build the answer once: (topics, bytes of records, whether any partition errored)."""
    budget = req.max_bytes if ctx.api_version >= 3 else 2**31 - 1
    total = 0
    errored = False
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            error, log_ = ctx.led_partition(t.topic, p.partition)
            if log_ is None:
                parts.append(_partition(p.partition, error))
                errored = True
            elif not log_.log_start_offset <= p.fetch_offset <= log_.high_watermark:
                parts.append(_partition(p.partition, ErrorCode.OFFSET_OUT_OF_RANGE,
                                        log_.high_watermark, log_.log_start_offset))
                errored = True
            else:
                # the response's first batch is returned even past the limits (KIP-74)
                limit = min(p.partition_max_bytes, budget - total)
                data = log_.read(p.fetch_offset, limit, at_least_one=total == 0)
                total += len(data)
                parts.append(_partition(p.partition, ErrorCode.NONE, log_.high_watermark,
                                        log_.log_start_offset, data))
        topics.append(TopicResponse(topic=t.topic, partitions=parts))
    return topics, total, errored


async def handle(ctx: RequestContext, req: Any) -> Any:
    if req.replica_id is not None and req.replica_id >= 0:
        return error_response(req, ErrorCode.NOT_LEADER_OR_FOLLOWER)  # no followers to replicate to
    deadline = ctx.now + max(req.max_wait_ms, 0)
    keys = [(t.topic, p.partition) for t in req.topics for p in t.partitions]
    while True:
        topics, total, errored = _read(ctx, req)
        remaining = deadline - ctx.now
        if total >= max(req.min_bytes, 1) or errored or remaining <= 0 or not keys:
            return FetchResponse(version=req.version, throttle_time_ms=0, error_code=0,
                                 session_id=0, responses=topics)
        await ctx.core.wait_for_append(keys, remaining)


def error_response(req: Any, error: ErrorCode) -> Any:
    return FetchResponse(version=req.version, throttle_time_ms=0, error_code=int(error), session_id=0,
                         responses=[TopicResponse(topic=t.topic, partitions=[
                             _partition(p.partition, error) for p in t.partitions]) for t in req.topics])


HANDLER = Handler(handle, error_response)
