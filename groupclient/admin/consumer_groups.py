"""ConsumerGroupDescribe (API 69, KIP-848): a consumer-protocol group as its coordinator sees it.

Apache Kafka 4 (and the embedded coordinator) describe such a group only with this API:
DescribeGroups answers it, from v6, with GROUP_ID_NOT_FOUND "Group X is not a classic group."
(before v6: Dead, no members), and ConsumerGroupDescribe answers a classic group the same way
("... is not a consumer group.").  So :class:`~groupclient.admin.GroupAdmin` asks one and, when
the group is not of that kind, the other.
"""

from __future__ import annotations

from typing import Any

from ..clock import Timer
from ..error_codes import ErrorCode
from ..protocol.consumer_group_describe import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse
from ..structs import TopicPartition
from .client import AdminConnection, GroupNotFoundError, check
from .model import CLASSIC, CONSUMER, Coordinator, GroupDescription, Member

# the answers meaning "no consumer group of that id here": it does not exist, it is a classic
# group, or the broker does not serve the consumer protocol (the embedded coordinator with
# group_coordinator_rebalance_protocols=("classic",) answers UNSUPPORTED_VERSION)
NOT_HERE = (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNSUPPORTED_VERSION)


def describe_consumer_group(conn: AdminConnection, coordinator: Coordinator, group_id: str,
                            timer: Timer) -> GroupDescription:
    """The group's state, epochs, assignor and members from its coordinator.  Raises
    GroupNotFoundError when the coordinator has no consumer-protocol group of that id."""
    def build(version: int) -> Any:
        return ConsumerGroupDescribeRequest(version=version, group_ids=[group_id], include_authorized_operations=False)

    response = conn.request(coordinator.node_id, ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
                            build, timer)
    group = response.groups[0]
    if group.error_code in NOT_HERE or (not group.error_code and group.group_state == "Dead"):
        raise GroupNotFoundError(group_id)
    check(group.error_code, f"ConsumerGroupDescribe {group_id}", group.error_message)
    members = tuple(_member(m, group.assignment_epoch) for m in group.members)
    return GroupDescription(group_id, group.group_state, CONSUMER, group.assignor_name or "", coordinator, members,
                            group_type=CONSUMER, group_epoch=group.group_epoch,
                            assignment_epoch=group.assignment_epoch, assignor=group.assignor_name or None)


def _partitions(assignment: Any) -> tuple[TopicPartition, ...]:
    # a topic the broker could not name (deleted meanwhile) is shown by its id, not dropped:
    # the member still holds it until it reconciles
    return tuple(sorted(TopicPartition(t.topic_name or str(t.topic_id), p)
                        for t in (assignment.topic_partitions if assignment is not None else ())
                        for p in t.partitions))


# MemberType (v1+): what protocol the member speaks; -1 (and v0) unknown
MEMBER_TYPES = {0: CLASSIC, 1: CONSUMER}


def _member(m: Any, target_epoch: int) -> Member:
    return Member(
        m.member_id, m.instance_id, m.client_id, m.client_host, _partitions(m.assignment),
        member_epoch=m.member_epoch, rack_id=m.rack_id, subscribed_topics=tuple(m.subscribed_topic_names or ()),
        # the embedded coordinator sends "" where Kafka sends null: both mean no pattern
        subscribed_regex=m.subscribed_topic_regex or None, target_assignment=_partitions(m.target_assignment),
        target_epoch=target_epoch, member_type=MEMBER_TYPES.get(getattr(m, "member_type", -1)))


__all__ = ["describe_consumer_group"]
