"""ListGroups (16): the groups this node coordinates, classic, consumer-protocol and share, as
Kafka 4.4 lists them.

v4 adds the states filter, v5 the types filter.  Both compare without regard to case; Kafka trims
the states asked for but not the types (" Stable " matches a Stable group, " classic" matches
nothing).  A consumer-protocol group is of type and protocol type ``consumer``, in one of its own
states (Empty, Assigning, Reconciling, Stable); a share group of type and protocol type ``share``,
Empty or Stable.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.groups import ListGroupsResponse

from ...error_codes import ErrorCode
from .context import Handler, RequestContext

GROUP_TYPE = "classic"
CONSUMER_TYPE = "consumer"  # a consumer-protocol group's type, and its protocol type
SHARE_TYPE = "share"  # a share group's type, and its protocol type (Empty or Stable)


async def handle(ctx: RequestContext, req: Any) -> Any:
    states = {s.strip().lower() for s in (req.states_filter or [])} if ctx.api_version >= 4 else set()
    types = {t.lower() for t in (req.types_filter or [])} if ctx.api_version >= 5 else set()
    listed = []
    if not types or GROUP_TYPE in types:
        listed += [
            ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type or "",
                                           group_state=g.state.value, group_type=GROUP_TYPE)
            for g in ctx.node.coordinator.groups.values()
            if not states or g.state.value.lower() in states
        ]
    if not types or CONSUMER_TYPE in types:
        listed += [
            ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type=CONSUMER_TYPE,
                                           group_state=g.state, group_type=CONSUMER_TYPE)
            for g in ctx.node.coordinator.consumer.served()
            if not states or g.state.lower() in states
        ]
    if not types or SHARE_TYPE in types:
        ctx.core.share_groups.expire(ctx.now)  # members whose session ended are gone
        listed += [
            ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type=SHARE_TYPE, group_state=g.state,
                                           group_type=SHARE_TYPE)
            for g in ctx.core.share_groups.groups.values()
            if ctx.core.coordinator_node_for(g.group_id) is ctx.node and (not states or g.state.lower() in states)
        ]
    return ListGroupsResponse(version=req.version, throttle_time_ms=0, error_code=0, groups=listed)


def error_response(req: Any, error: ErrorCode) -> Any:
    return ListGroupsResponse(version=req.version, throttle_time_ms=0, error_code=int(error), groups=[])


HANDLER = Handler(handle, error_response)
