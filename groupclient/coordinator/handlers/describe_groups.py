"""DescribeGroups (15)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.groups import DescribeGroupsResponse

from ...error_codes import ErrorCode
from ..classic_group.state import GroupState
from .context import Handler, RequestContext

Described = DescribeGroupsResponse.DescribedGroup
DescribedMember = Described.DescribedGroupMember


def _unknown(group_id: str, error: ErrorCode, version: int, other_kind: bool = False) -> Any:
    """A group this node cannot describe: Kafka says Dead, and from v6 why (GROUP_ID_NOT_FOUND
    with its message for a group it does not know or that is a consumer-protocol or share group,
    which v0-v5 answer without an error)."""
    message = None
    if error is ErrorCode.GROUP_ID_NOT_FOUND:
        why = f"Group {group_id} is not a classic group." if other_kind else f"Group {group_id} not found."
        error, message = (error, why) if version >= 6 else (ErrorCode.NONE, None)
    return Described(error_code=int(error), group_id=group_id, group_state=GroupState.DEAD.value,
                     protocol_type="", protocol_data="", members=[], authorized_operations=None,
                     error_message=message)


async def handle(ctx: RequestContext, req: Any) -> Any:
    coordinator = ctx.node.coordinator
    described = []
    for group_id in req.groups:
        # an empty group id is no error here: Kafka describes it as a group it does not know
        error = coordinator.check_group(group_id) if group_id else ErrorCode.NONE
        group = coordinator.groups.get(group_id) if group_id else None
        if error or group is None:
            other = coordinator.consumer.get(group_id) is not None or group_id in ctx.core.share_groups.groups
            described.append(_unknown(group_id, error or ErrorCode.GROUP_ID_NOT_FOUND, ctx.api_version, other))
            continue
        stable = group.is_in(GroupState.STABLE)
        members = [
            DescribedMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id,
                client_id=m.client_id, client_host=m.client_host,
                member_metadata=m.metadata_for(group.protocol_name) if stable and group.protocol_name else b"",
                member_assignment=m.assignment if stable else b"",
            )
            for m in group.members.values()
        ]
        described.append(Described(
            error_code=0, group_id=group_id, group_state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_data=(group.protocol_name or "") if stable else "",
            members=members, authorized_operations=None,
        ))
    return DescribeGroupsResponse(version=req.version, throttle_time_ms=0, groups=described)


def error_response(req: Any, error: ErrorCode) -> Any:
    return DescribeGroupsResponse(version=req.version, throttle_time_ms=0,
                                  groups=[_unknown(g, error, req.version) for g in req.groups])


HANDLER = Handler(handle, error_response)
