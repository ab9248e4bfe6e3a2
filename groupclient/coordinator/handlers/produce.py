"""Produce (0): append record batches to the partitions this node leads."""

from __future__ import annotations

import logging
from typing import Any

from kafka.protocol.producer import ProduceResponse

from ...error_codes import ErrorCode
from ..storage.topic_log import InvalidRecords
from .context import Handler, RequestContext

log = logging.getLogger("groupclient.coordinator.produce")

TopicResponse = ProduceResponse.TopicProduceResponse
PartitionResponse = TopicResponse.PartitionProduceResponse


def _partition(index: int, error: ErrorCode, base_offset: int = -1, message: str | None = None) -> Any:
    return PartitionResponse(index=index, error_code=int(error), base_offset=base_offset,
                             log_append_time_ms=-1, log_start_offset=0 if not error else -1,
                             record_errors=[], error_message=message)


async def handle(ctx: RequestContext, req: Any) -> Any:
    core = ctx.core
    if req.transactional_id is not None:
        return error_response(req, ErrorCode.INVALID_REQUEST)
    if req.acks not in (-1, 0, 1):
        return error_response(req, ErrorCode.INVALID_REQUIRED_ACKS)
    responses = []
    for topic in req.topic_data:
        parts = []
        for pd in topic.partition_data:
            error, _ = ctx.led_partition(topic.name, pd.index)
            if error:
                parts.append(_partition(pd.index, error))
            else:
                try:
                    base = core.topics.append(topic.name, pd.index, bytes(pd.records or b""),
                                              core.config.max_message_bytes)
                    parts.append(_partition(pd.index, ErrorCode.NONE, base))
                except InvalidRecords as exc:
                    log.info("rejected produce to %s-%d from %s: %s", topic.name, pd.index, ctx.client_id, exc)
                    parts.append(_partition(pd.index, exc.error, message=str(exc)))
        responses.append(TopicResponse(name=topic.name, partition_responses=parts))
    return ProduceResponse(version=req.version, responses=responses, throttle_time_ms=0)


def error_response(req: Any, error: ErrorCode) -> Any:
    return ProduceResponse(version=req.version, throttle_time_ms=0, responses=[
        TopicResponse(name=t.name, partition_responses=[_partition(p.index, error) for p in t.partition_data])
        for t in req.topic_data])


HANDLER = Handler(handle, error_response)
