"""A consumer-protocol group as journal records, and back: one record for the group (its epochs,
assignor, the subscribed topics' metadata and what its patterns matched) and one per member (what
it subscribes to, its assignment and its target), as Kafka keeps such a group in
``__consumer_offsets`` (ConsumerGroupMetadata, ConsumerGroupMemberMetadata, the target and current
assignment records).  Deadlines are not kept: a coordinator that loads a group starts its
members' sessions again, as Kafka's does."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Mapping

from ..storage.group_store import Record
from .group import ClassicProtocol, ConsumerGroup, GroupSettings, Member
from .reconciliation import MemberAssignment, MemberAssignmentState, Partitions


def _partitions(value: Partitions) -> dict[str, list[int]]:
    return {str(topic): sorted(ps) for topic, ps in sorted(value.items())}


def _parse_partitions(value: Mapping[str, list[int]]) -> dict[uuid.UUID, frozenset[int]]:
    return {uuid.UUID(topic): frozenset(ps) for topic, ps in value.items()}


def group_record(group: ConsumerGroup) -> Record:
    """What the group is, without its members."""
    return {
        "group_id": group.group_id, "epoch": group.epoch, "assignment_epoch": group.assignment_epoch,
        "assignor": group.assignor_name, "joins": group.joins,
        "subscribed": {name: [str(tid), count] for name, (tid, count) in group.subscribed.metadata.items()},
        "matches": {pattern: sorted(names) for pattern, names in group.subscribed.matches.items()},
    }


def member_record(group: ConsumerGroup, member: Member) -> Record:
    """One member: what it subscribes to, what it has, what it is to have."""
    a = member.assignment
    return {
        "member_id": member.member_id, "instance_id": member.instance_id, "rack_id": member.rack_id,
        "client_id": member.client_id, "client_host": member.client_host, "topics": list(member.topics),
        "regex": member.regex, "server_assignor": member.server_assignor,
        "rebalance_timeout_ms": member.rebalance_timeout_ms, "joined_at": member.joined_at,
        "epoch": a.epoch, "previous_epoch": a.previous_epoch, "state": a.state.value,
        "assigned": _partitions(a.assigned), "revoking": _partitions(a.revoking),
        # each held partition's assignment epoch, as [topic, partition, epoch] (Kafka 4.3's AssignmentEpochs)
        "since": [[str(t), p, e] for (t, p), e in sorted(a.since.items())],
        "target": _partitions(group.target.get(member.member_id, {})),
        "classic": None if member.classic is None else {
            "session_timeout_ms": member.classic.session_timeout_ms,
            "protocols": [[name, base64.b64encode(metadata).decode("ascii")] for name, metadata in member.classic.protocols],
        },
    }


def rebuild(group: Record, members: Iterable[Record], settings: GroupSettings | None = None) -> ConsumerGroup:
    """The group the records describe (its members' deadlines unset: the loader arms them)."""
    rebuilt = ConsumerGroup(group["group_id"], settings)
    rebuilt.epoch, rebuilt.assignment_epoch = group["epoch"], group["assignment_epoch"]
    rebuilt.assignor_name, rebuilt.joins = group["assignor"], group["joins"]
    rebuilt.subscribed.restore(
        {name: (uuid.UUID(tid), count) for name, (tid, count) in group["subscribed"].items()},
        {pattern: frozenset(names) for pattern, names in group["matches"].items()})
    for m in sorted(members, key=lambda r: r["joined_at"]):
        # a record without "since" (written before Kafka 4.3's per-partition epochs were kept) gives
        # every partition the member's epoch, as Kafka loads such a record
        since = {(uuid.UUID(t), p): e for t, p, e in m.get("since", ())}
        assignment = MemberAssignment(m["epoch"], m["previous_epoch"], MemberAssignmentState(m["state"]),
                                      _parse_partitions(m["assigned"]), _parse_partitions(m["revoking"]), since)
        classic = m.get("classic")
        member = Member(m["member_id"], m["instance_id"], m["rack_id"], m["client_id"], m["client_host"],
                        tuple(m["topics"]), m["regex"], m["server_assignor"], m["rebalance_timeout_ms"], assignment,
                        joined_at=m["joined_at"], classic=None if classic is None else ClassicProtocol(
                            classic["session_timeout_ms"],
                            tuple((name, base64.b64decode(data)) for name, data in classic["protocols"])))
        rebuilt.members[member.member_id] = member
        rebuilt.target[member.member_id] = _parse_partitions(m["target"])
    rebuilt.count_preferred_assignor()  # what the loaded members ask for: no epoch move on their next heartbeat
    return rebuilt


class ConsumerGroupRecords:
    """These records as the codec a GroupStore journals consumer groups with (the store knows
    records only, not the groups)."""

    def group_record(self, group: ConsumerGroup) -> Record:
        """:func:`group_record`."""
        return group_record(group)

    def member_record(self, group: ConsumerGroup, member_id: str) -> Record:
        """:func:`member_record` of the group's member of that id."""
        return member_record(group, group.members[member_id])

    def rebuild(self, group: Record, members: Iterable[Record]) -> ConsumerGroup:
        """:func:`rebuild` with the default settings (a coordinator that loads the group gives it its own)."""
        return rebuild(group, members)
