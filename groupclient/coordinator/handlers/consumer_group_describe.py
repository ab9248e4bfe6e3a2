"""ConsumerGroupDescribe (69): a consumer-protocol group's state and epochs, and per member what it
owns beside what the group's assignor gave it."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from ...error_codes import ErrorCode
from ...protocol.consumer_group_describe import ConsumerGroupDescribeResponse
from ..consumer_group.group import ConsumerGroup, Member
from .context import Handler, RequestContext

Described = ConsumerGroupDescribeResponse.DescribedGroup
DescribedMember = Described.Member
Assignment = DescribedMember.Assignment  # the common struct, as kafka-python names it
TopicPartitions = Assignment.TopicPartitions
CONSUMER_MEMBER, CLASSIC_MEMBER = 1, 0  # MemberType: which protocol the member speaks
NO_OPERATIONS = -(2**31)  # AuthorizedOperations when they were not asked for


def _failed(group_id: str, error: ErrorCode, message: str | None = None) -> Any:
    return Described(error_code=int(error), error_message=message, group_id=group_id, group_state="",
                     group_epoch=0, assignment_epoch=0, assignor_name="", members=[],
                     authorized_operations=NO_OPERATIONS)


def _assignment(ctx: RequestContext, partitions: Mapping[uuid.UUID, frozenset[int]]) -> Any:
    named = []
    for topic_id, indexes in sorted(partitions.items()):
        name = ctx.core.topics.name_of(topic_id)
        if name is not None and indexes:
            named.append(TopicPartitions(topic_id=topic_id, topic_name=name, partitions=sorted(indexes)))
    return Assignment(topic_partitions=named)


def _union(a: Mapping[uuid.UUID, frozenset[int]],
           b: Mapping[uuid.UUID, frozenset[int]]) -> dict[uuid.UUID, frozenset[int]]:
    return {t: a.get(t, frozenset()) | b.get(t, frozenset()) for t in {*a, *b}}


def _member(ctx: RequestContext, group: ConsumerGroup, member: Member) -> Any:
    return DescribedMember(
        member_id=member.member_id, instance_id=member.instance_id, rack_id=member.rack_id,
        member_epoch=member.assignment.epoch if not member.left_static else -2,
        client_id=member.client_id, client_host=member.client_host,
        subscribed_topic_names=list(member.topics), subscribed_topic_regex=member.regex or "",
        # what it holds and what it is still giving up (Kafka 4.3, KAFKA-20431: it is responsible
        # for those until it has)
        assignment=_assignment(ctx, _union(member.assignment.assigned, member.assignment.revoking)),
        target_assignment=_assignment(ctx, group.target.get(member.member_id, {})),
        member_type=CLASSIC_MEMBER if member.classic is not None else CONSUMER_MEMBER)


def _describe(ctx: RequestContext, group_id: str) -> Any:
    coordinator = ctx.node.coordinator
    error = coordinator.check_group(group_id)
    if error:
        return _failed(group_id, error)
    group = coordinator.consumer.get(group_id)
    if group is None:
        if group_id in coordinator.groups:
            return _failed(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        return _failed(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
    members = sorted(group.members.values(), key=lambda m: m.joined_at)
    return Described(
        error_code=0, error_message=None, group_id=group_id, group_state=group.state, group_epoch=group.epoch,
        # the assignor most members ask for now (Kafka's preferredServerAssignor), which the next
        # target will be computed with
        assignment_epoch=group.assignment_epoch, assignor_name=group.preferred_assignor,
        members=[_member(ctx, group, m) for m in members], authorized_operations=NO_OPERATIONS)


async def handle(ctx: RequestContext, req: Any) -> Any:
    if not ctx.core.config.serves_consumer_protocol:
        return error_response(req, ErrorCode.UNSUPPORTED_VERSION)
    return ConsumerGroupDescribeResponse(version=req.version, throttle_time_ms=0,
                                         groups=[_describe(ctx, g) for g in req.group_ids])


def error_response(req: Any, error: ErrorCode) -> Any:
    return ConsumerGroupDescribeResponse(version=req.version, throttle_time_ms=0,
                                         groups=[_failed(g, error) for g in req.group_ids])


HANDLER = Handler(handle, error_response)
