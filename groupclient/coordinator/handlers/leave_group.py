"""LeaveGroup (13), with batched members from v3 (KIP-345)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.group import LeaveGroupResponse

from ...error_codes import ErrorCode
from ..group_base.classic_api import LeavingMember
from .context import Handler, RequestContext


async def handle(ctx: RequestContext, req: Any) -> Any:
    version = ctx.api_version
    if version < 3:
        leaving = [LeavingMember(req.member_id)]
    else:
        leaving = [LeavingMember(m.member_id or "", m.group_instance_id,
                                 m.reason if version >= 5 else None) for m in req.members]
    # members another SASL user created are refused one by one; the rest leave
    foreign = {i: code for i, m in enumerate(leaving)
               if (code := ctx.foreign_member(req.group_id, m.member_id, m.group_instance_id))}
    top, done = ctx.node.coordinator.leave_group(req.group_id, [m for i, m in enumerate(leaving) if i not in foreign],
                                                 ctx.now)
    answered = iter(done)
    results = [] if top else [(m, foreign[i]) if i in foreign else next(answered) for i, m in enumerate(leaving)]
    ctx.node.kick_timers()
    if version < 3:
        error = top if top else (results[0][1] if results else ErrorCode.NONE)
        return error_response(req, error)
    members = [
        LeaveGroupResponse.MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                          error_code=int(code))
        for m, code in results
    ]
    return LeaveGroupResponse(version=version, throttle_time_ms=0, error_code=int(top), members=members)


def error_response(req: Any, error: ErrorCode) -> Any:
    return LeaveGroupResponse(version=req.version, throttle_time_ms=0, error_code=int(error), members=[])


HANDLER = Handler(handle, error_response)
