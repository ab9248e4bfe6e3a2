"""InitProducerId (22): producer ids for idempotent producers (no transactions)."""

from __future__ import annotations

import logging
from typing import Any

from kafka.protocol.producer.transaction import InitProducerIdResponse

from ...error_codes import ErrorCode
from .context import Handler, RequestContext

log = logging.getLogger("groupclient.coordinator.produce")


async def handle(ctx: RequestContext, req: Any) -> Any:
    if req.transactional_id is not None:
        log.info("refusing transactional id %r from %s: transactions are not supported",
                 req.transactional_id, ctx.client_id)
        return error_response(req, ErrorCode.INVALID_REQUEST)
    producer_id, epoch = ctx.core.topics.producers.allocate(
        req.producer_id if ctx.api_version >= 3 else -1,
        req.producer_epoch if ctx.api_version >= 3 else -1,
    )
    return InitProducerIdResponse(version=req.version, throttle_time_ms=0, error_code=0,
                                  producer_id=producer_id, producer_epoch=epoch)


def error_response(req: Any, error: ErrorCode) -> Any:
    return InitProducerIdResponse(version=req.version, throttle_time_ms=0, error_code=int(error),
                                  producer_id=-1, producer_epoch=-1)


HANDLER = Handler(handle, error_response)
