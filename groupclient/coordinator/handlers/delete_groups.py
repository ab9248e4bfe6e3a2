"""DeleteGroups (42): Empty groups and their committed offsets go, with a tombstone each; an Empty
share group goes with what its share-partitions kept."""

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
    shares = ctx.core.share_groups
    shares.expire(ctx.now)  # members whose session ended are gone
    names = list(req.groups_names)
    codes = delete_groups(ctx.node.coordinator, [g for g in names if g not in shares.groups])
    for group_id in (g for g in names if g in shares.groups):
        # a share group: deleted with its share-partitions' state once it has no member, as Kafka does
        if ctx.core.coordinator_node_for(group_id) is not ctx.node:
            codes[group_id] = ErrorCode.NOT_COORDINATOR
        else:
            codes[group_id] = ErrorCode.NON_EMPTY_GROUP if shares.groups[group_id].members else shares.delete(group_id)
    ctx.node.kick_timers()
    return _response(req, {g: codes[g] for g in names})


def error_response(req: Any, error: ErrorCode) -> Any:
    return _response(req, {group_id: error for group_id in req.groups_names})


HANDLER = Handler(handle, error_response)
