"""Heartbeat (12)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.group import HeartbeatResponse

from ...error_codes import ErrorCode
from .context import Handler, RequestContext


async def handle(ctx: RequestContext, req: Any) -> Any:
    instance_id = req.group_instance_id if ctx.api_version >= 3 else None
    if refused := ctx.foreign_member(req.group_id, req.member_id, instance_id):
        return error_response(req, refused)
    error = ctx.node.coordinator.heartbeat(req.group_id, req.member_id, instance_id, req.generation_id, ctx.now)
    ctx.node.kick_timers()
    return error_response(req, error)


def error_response(req: Any, error: ErrorCode) -> Any:
    return HeartbeatResponse(version=req.version, throttle_time_ms=0, error_code=int(error))


HANDLER = Handler(handle, error_response)
