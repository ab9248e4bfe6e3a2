"""ListGroups (16): the groups this node coordinates."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.groups import ListGroupsResponse

from ...protocol.errors import ErrorCode
from .context import Handler, RequestContext


async def handle(ctx: RequestContext, req: Any) -> Any:
    wanted = {s.lower() for s in (req.states_filter or [])} if ctx.api_version >= 4 else set()
    listed = [
        ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type or "",
                                       group_state=g.state.value, group_type="classic")
        for g in ctx.node.coordinator.groups.values()
        if not wanted or g.state.value.lower() in wanted
    ]
    return ListGroupsResponse(version=req.version, throttle_time_ms=0, error_code=0, groups=listed)


def error_response(req: Any, error: ErrorCode) -> Any:
    return ListGroupsResponse(version=req.version, throttle_time_ms=0, error_code=int(error), groups=[])


HANDLER = Handler(handle, error_response)
