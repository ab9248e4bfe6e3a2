"""DeleteGroups (42): Empty groups and their committed offsets go, with a tombstone each."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.groups import DeleteGroupsResponse

from ...error_codes import ErrorCode
from ..group.retention import delete_groups
from .context import Handler, RequestContext

Result = DeleteGroupsResponse.DeletableGroupResult


def _response(req: Any, codes: dict[str, ErrorCode]) -> Any:
    results = [Result(group_id=group_id, error_code=int(code)) for group_id, code in codes.items()]
    return DeleteGroupsResponse(version=req.version, throttle_time_ms=0, results=results)


async def handle(ctx: RequestContext, req: Any) -> Any:
    codes = delete_groups(ctx.node.coordinator, list(req.groups_names))
    ctx.node.kick_timers()
    return _response(req, codes)


def error_response(req: Any, error: ErrorCode) -> Any:
    return _response(req, {group_id: error for group_id in req.groups_names})


HANDLER = Handler(handle, error_response)
