"""ShareGroupDescribe (77): share groups' state (Empty or Stable), epochs, assignor (``simple``) and
members with their partitions; an id no share group has is GROUP_ID_NOT_FOUND with Kafka's
message ("Group X not found.", or "Group X is not a share group." for another kind of group)."""

from __future__ import annotations

from typing import Any

from ...error_codes import ErrorCode
from ...protocol.share_group import ShareGroupDescribeResponse
from .context import Handler, RequestContext

Group = ShareGroupDescribeResponse.DescribedGroup
Member = Group.Member
NO_OPERATIONS = -(2**31)  # authorized_operations when not asked for (no ACLs here)


def _described(ctx: RequestContext, group_id: str) -> Any:
    def missing(error: ErrorCode, message: str | None) -> Any:
        return Group(error_code=int(error), error_message=message, group_id=group_id, group_state="", group_epoch=0,
                     assignment_epoch=0, assignor_name="", members=[], authorized_operations=NO_OPERATIONS)

    if not group_id:
        return missing(ErrorCode.INVALID_GROUP_ID, None)
    if ctx.core.coordinator_node_for(group_id) is not ctx.node:
        return missing(ErrorCode.NOT_COORDINATOR, None)
    group = ctx.core.share_groups.groups.get(group_id)
    if group is None:
        coordinator = ctx.node.coordinator
        other = coordinator.is_classic_group(group_id) or coordinator.consumer.is_consumer_group(group_id)
        return missing(ErrorCode.GROUP_ID_NOT_FOUND,
                       f"Group {group_id} is not a share group." if other else f"Group {group_id} not found.")
    group.expire(ctx.now)
    ids = {name: topic_id for name, (topic_id, _) in ctx.core.topics.ids_and_counts().items()}
    members = []
    for member in group.members.values():
        by_topic: dict[str, list[int]] = {}
        for topic, p in sorted(member.assigned):
            by_topic.setdefault(topic, []).append(p)
        members.append(Member(
            member_id=member.member_id, rack_id=member.rack_id, member_epoch=member.epoch, client_id=member.client_id,
            client_host=member.client_host, subscribed_topic_names=sorted(member.topics),
            assignment=Member.Assignment(topic_partitions=[
                Member.Assignment.TopicPartitions(topic_id=ids[t], topic_name=t, partitions=ps)
                for t, ps in by_topic.items() if t in ids])))
    return Group(error_code=0, error_message=None, group_id=group_id, group_state=group.state, group_epoch=group.epoch,
                 assignment_epoch=group.assignment_epoch, assignor_name="simple", members=members,
                 authorized_operations=NO_OPERATIONS)


async def handle(ctx: RequestContext, req: Any) -> Any:
    return ShareGroupDescribeResponse(version=req.version, throttle_time_ms=0,
                                      groups=[_described(ctx, group_id) for group_id in req.group_ids])


def error_response(req: Any, error: ErrorCode) -> Any:
    return ShareGroupDescribeResponse(version=req.version, throttle_time_ms=0, groups=[
        Group(error_code=int(error), error_message=None, group_id=g, group_state="", group_epoch=0, assignment_epoch=0,
              assignor_name="", members=[], authorized_operations=NO_OPERATIONS) for g in req.group_ids])


HANDLER = Handler(handle, error_response)
