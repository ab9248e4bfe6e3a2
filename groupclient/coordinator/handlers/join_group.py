"""JoinGroup (11): answered when the group's rebalance completes (or at once on error)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.group import JoinGroupResponse

from ...error_codes import ErrorCode
from ..group_base.classic_api import JoinRequest, JoinResult
from .context import Handler, RequestContext


def _response(version: int, result: JoinResult) -> Any:
    protocol_name = result.protocol_name
    if version < 7 and protocol_name is None:
        protocol_name = ""  # not nullable before v7
    members = [
        JoinGroupResponse.JoinGroupResponseMember(
            member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata)
        for m in result.members
    ]
    return JoinGroupResponse(
        version=version, throttle_time_ms=0, error_code=int(result.error),
        generation_id=result.generation_id, protocol_type=result.protocol_type,
        protocol_name=protocol_name, leader=result.leader_id,
        skip_assignment=result.skip_assignment, member_id=result.member_id, members=members,
    )


async def handle(ctx: RequestContext, req: Any) -> Any:
    version = ctx.api_version
    join = JoinRequest(
        group_id=req.group_id,
        member_id=req.member_id or "",
        group_instance_id=req.group_instance_id if version >= 5 else None,
        client_id=ctx.client_id,
        client_host=f"/{ctx.client_host}",  # Kafka's InetAddress.toString(), as DescribeGroups shows it
        session_timeout_ms=req.session_timeout_ms,
        rebalance_timeout_ms=req.rebalance_timeout_ms if version >= 1 else req.session_timeout_ms,
        protocol_type=req.protocol_type,
        protocols=tuple((p.name, bytes(p.metadata)) for p in req.protocols),
        require_known_member_id=version >= 4,
        supports_skip_assignment=version >= 9,
        reason=req.reason if version >= 8 else None,
        principal=ctx.principal,
    )
    if refused := ctx.foreign_member(join.group_id, join.member_id, join.group_instance_id):
        return error_response(req, refused)
    if req.group_id in ctx.core.share_groups.groups:  # Kafka 4.4's answer to a share group's id
        return error_response(req, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    topics = ctx.core.topics.ids_and_counts()  # a consumer group's classic member names its topics
    result: JoinResult = await ctx.answer_from(
        lambda deliver: ctx.node.coordinator.join_group(join, ctx.now, deliver, topics))
    return _response(version, result)


def error_response(req: Any, error: ErrorCode) -> Any:
    return _response(req.version, JoinResult(error, req.member_id or ""))


HANDLER = Handler(handle, error_response)
