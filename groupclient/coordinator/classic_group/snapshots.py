"""Groups to and from their stored form (Kafka's GroupMetadata record)."""

from __future__ import annotations

from ..storage.group_store import GroupSnapshot, MemberSnapshot
from .metadata import Group, Member
from .state import GroupState


def group_from_snapshot(group_id: str, snapshot: GroupSnapshot | None, now: int) -> Group:
    """The group as a coordinator loads it: Stable if it has members, else Empty since ``now``.

    Deadlines are not armed here; the coordinator restarts them from ``now``, as Kafka does.
    """
    group = Group(group_id, empty_since_ms=now)
    if snapshot is None:
        return group  # a group that only has committed offsets
    group.generation_id = snapshot.generation_id
    group.protocol_type = snapshot.protocol_type
    group.protocol_name = snapshot.protocol_name
    for ms in snapshot.members:
        protocols = [(snapshot.protocol_name or "", ms.subscription)]
        group.add(Member(ms.member_id, ms.group_instance_id, ms.client_id, ms.client_host,
                         ms.rebalance_timeout_ms, ms.session_timeout_ms,
                         snapshot.protocol_type or "", protocols, assignment=ms.assignment))
    if snapshot.leader_id in group.members:
        group.leader_id = snapshot.leader_id
    if group.members:
        group.state = GroupState.STABLE
        group.empty_since_ms = None
    return group


def snapshot_of(group: Group) -> GroupSnapshot:
    """The group as stored: its members with their subscriptions in its protocol, and assignments."""
    protocol = group.protocol_name
    members = tuple(
        MemberSnapshot(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                       m.rebalance_timeout_ms, m.session_timeout_ms,
                       m.metadata_for(protocol) if protocol else b"", m.assignment)
        for m in group.members.values()
    )
    return GroupSnapshot(group.group_id, group.generation_id, group.protocol_type, protocol,
                         group.leader_id, members)
