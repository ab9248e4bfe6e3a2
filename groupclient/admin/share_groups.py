"""ShareGroupDescribe (API 77) and DescribeShareGroupOffsets (API 90): a share group (KIP-932) as its
coordinator sees it: its members and their assignments (a partition may be assigned to several
members at once: they share it), and each share-partition's start offset (where the records the
group has not finished with begin) and lag (v1: the records from there on not yet acknowledged).

Kafka (and the embedded coordinator) answer a group of another kind with GROUP_ID_NOT_FOUND ("Group
X is not a share group."), so :class:`~groupclient.admin.GroupAdmin` asks this when the others say
the group is not theirs.
"""

from __future__ import annotations

from typing import Any

from ..clock import Timer
from ..error_codes import ErrorCode
from ..protocol.share_group import (
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)
from ..structs import TopicPartition
from .client import AdminConnection, GroupNotFoundError, check
from .model import SHARE, Coordinator, GroupDescription, Member

NOT_HERE = (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNSUPPORTED_VERSION)


def describe_share_group(conn: AdminConnection, coordinator: Coordinator, group_id: str,
                         timer: Timer) -> GroupDescription:
    """The share group's state, epochs, assignor and members.  Raises GroupNotFoundError when the
    coordinator has no share group of that id."""
    def build(version: int) -> Any:
        return ShareGroupDescribeRequest(version=version, group_ids=[group_id], include_authorized_operations=False)

    response = conn.request(coordinator.node_id, ShareGroupDescribeRequest, ShareGroupDescribeResponse, build, timer)
    group = response.groups[0]
    if group.error_code in NOT_HERE or (not group.error_code and group.group_state == "Dead"):
        raise GroupNotFoundError(group_id)
    check(group.error_code, f"ShareGroupDescribe {group_id}", group.error_message)
    members = tuple(Member(m.member_id, None, m.client_id, m.client_host, _partitions(m.assignment),
                           member_epoch=m.member_epoch, rack_id=m.rack_id,
                           subscribed_topics=tuple(m.subscribed_topic_names or ())) for m in group.members)
    return GroupDescription(group_id, group.group_state, SHARE, group.assignor_name or "", coordinator, members,
                            group_type=SHARE, group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                            assignor=group.assignor_name or None)


def share_group_offsets(conn: AdminConnection, node_id: int, group_id: str,
                        timer: Timer) -> dict[TopicPartition, tuple[int, int | None]]:
    """Each share-partition the group has state for: its start offset and (DescribeShareGroupOffsets
    v1, Kafka 4.2+) its lag, None before v1 or when the broker does not know it (-1)."""
    def build(version: int) -> Any:
        return DescribeShareGroupOffsetsRequest(version=version, groups=[
            DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id=group_id, topics=None)])

    response = conn.request(node_id, DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, build,
                            timer)
    group = response.groups[0]
    check(group.error_code, f"DescribeShareGroupOffsets {group_id}", group.error_message)
    found: dict[TopicPartition, tuple[int, int | None]] = {}
    for topic in group.topics:
        for p in topic.partitions:
            if p.error_code or p.start_offset < 0:
                continue  # a partition the group has not started on
            lag = getattr(p, "lag", -1)
            found[TopicPartition(topic.topic_name, p.partition_index)] = (p.start_offset, lag if lag >= 0 else None)
    return found


def _partitions(assignment: Any) -> tuple[TopicPartition, ...]:
    return tuple(sorted(TopicPartition(t.topic_name or str(t.topic_id), p)
                        for t in (assignment.topic_partitions if assignment is not None else ())
                        for p in t.partitions))


__all__ = ["describe_share_group", "share_group_offsets"]
