"""SyncGroup (14): followers wait here for the leader's assignment."""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.group import SyncGroupResponse

from ...error_codes import ErrorCode
from ..group_base.classic_api import SyncRequest, SyncResult
from .context import Handler, RequestContext


def _response(version: int, result: SyncResult) -> Any:
    return SyncGroupResponse(
        version=version, throttle_time_ms=0, error_code=int(result.error),
        protocol_type=result.protocol_type, protocol_name=result.protocol_name,
        assignment=result.assignment,
    )


async def handle(ctx: RequestContext, req: Any) -> Any:
    version = ctx.api_version
    sync = SyncRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        group_instance_id=req.group_instance_id if version >= 3 else None,
        generation_id=req.generation_id,
        protocol_type=req.protocol_type if version >= 5 else None,
        protocol_name=req.protocol_name if version >= 5 else None,
        assignments={a.member_id: bytes(a.assignment) for a in (req.assignments or [])},
    )
    if refused := ctx.foreign_member(sync.group_id, sync.member_id, sync.group_instance_id):
        return error_response(req, refused)
    result: SyncResult = await ctx.answer_from(lambda deliver: ctx.node.coordinator.sync_group(sync, ctx.now, deliver))
    return _response(version, result)


def error_response(req: Any, error: ErrorCode) -> Any:
    return _response(req.version, SyncResult(error))


HANDLER = Handler(handle, error_response)
