"""Text for the group commands: tables, partition lists, and what changed between two looks
at a group (``groups watch``).  Pure functions of the values in :mod:`.model`: no sockets."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..structs import TopicPartition

from .model import CONSUMER, SHARE, GroupDescription, ListedGroup, Member

NONE = "-"


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Left-aligned columns two spaces apart; None shows as "-"; no trailing spaces."""
    cells = [[str(h) for h in headers]] + [[NONE if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells)


def _ranges(numbers: list[int]) -> str:
    """``0-2,5`` for [0, 1, 2, 5] (sorted, distinct)."""
    spans: list[tuple[int, int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], n)
        else:
            spans.append((n, n))
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def partitions(tps: Iterable[TopicPartition] | None) -> str:
    """``orders[0-2,5] payments[1]``; "-" for None (not known), "(none)" for no partitions."""
    if tps is None:
        return NONE
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if not by_topic:
        return "(none)"
    return " ".join(f"{t}[{_ranges(sorted(set(p)))}]" for t, p in sorted(by_topic.items()))


def _assignment(m: Member) -> str:
    if m.assignment is None and m.assignment_bytes:
        return f"({m.assignment_bytes} bytes)"
    return partitions(m.assignment)


# -- list and describe ---------------------------------------------------------------------
KAFKA_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                 "CLIENT-ID")


# the states in which kafka-consumer-groups.sh warns that the group "is rebalancing": the classic
# protocol's and the consumer protocol's (KIP-848)
REBALANCING = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


def render_kafka(d: GroupDescription) -> str:
    """``kafka-consumer-groups.sh --describe``'s offsets view, column for column (its widths:
    at least 15, PARTITION 10; "-" where nothing is known), so scripts written for it work.

    The rows come in its order: the members that own partitions, the one with the most first
    (ties in the coordinator's order), each one's partitions sorted; then the partitions only
    committed.  A member that owns nothing has no row.  Kafka's tool prints the same for a
    classic and a consumer-protocol group (for the latter, the partitions each member owns now).
    """
    rows = []
    owning = sorted((m for m in d.members if m.assignment), key=lambda m: -len(m.assignment or ()))
    for m in [*owning, None]:
        member_id = m.member_id if m else None
        for p in sorted((p for p in d.offsets if p.member_id == member_id), key=lambda p: (p.topic, p.partition)):
            rows.append([d.group_id, p.topic, str(p.partition), _dash(p.committed), _dash(p.end), _dash(p.lag),
                         m.member_id if m else NONE, m.client_host if m else NONE, m.client_id if m else NONE])
    widths = [max([15, *(len(r[i]) for r in rows)]) if i in (0, 1, 6, 7) else (10 if i == 2 else 15)
              for i in range(len(KAFKA_COLUMNS) - 1)]
    lines = [""]
    if not d.members:
        lines += [f"Consumer group '{d.group_id}' has no active members.", ""]
    elif d.state in REBALANCING:
        lines += [f"Warning: Consumer group '{d.group_id}' is rebalancing.", ""]
    for row in [list(KAFKA_COLUMNS), *rows]:
        lines.append(" ".join(cell.ljust(width) for cell, width in zip(row, widths)) + " " + row[-1])
    return "\n".join(lines)


def _dash(value: int | None) -> str:
    return NONE if value is None else str(value)


def render_list(groups: Sequence[ListedGroup]) -> str:
    if not groups:
        return "no groups"
    return table(["GROUP", "PROTOCOL-TYPE", "STATE", "TYPE", "COORDINATOR"],
                 [[g.group_id, g.protocol_type or NONE, g.state, g.group_type, g.coordinator] for g in groups])


def render_description(d: GroupDescription) -> str:
    """The group, its members and its offsets as three tables (a consumer-protocol group's
    with its epochs, assignor, and each member's subscription and target assignment)."""
    c = d.coordinator
    coordinator = f"{c.node_id} ({c.host}:{c.port})"
    if d.group_type in (CONSUMER, SHARE):
        parts = [table(["GROUP", "TYPE", "STATE", "ASSIGNOR", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "MEMBERS",
                        "COORDINATOR"],
                       [[d.group_id, d.group_type, d.state, d.assignor, d.group_epoch, d.assignment_epoch,
                         len(d.members), coordinator]])]
    else:
        parts = [table(["GROUP", "STATE", "PROTOCOL-TYPE", "PROTOCOL", "MEMBERS", "COORDINATOR"],
                       [[d.group_id, d.state, d.protocol_type or NONE, d.protocol or NONE, len(d.members),
                         coordinator]])]
    if d.members and d.group_type == SHARE:  # a partition may be several members' at once
        parts.append(table(["MEMBER-ID", "CLIENT-ID", "CLIENT-HOST", "MEMBER-EPOCH", "SUBSCRIBED", "ASSIGNMENT"],
                           [[m.member_id, m.client_id, m.client_host, m.member_epoch, subscription(m), _assignment(m)]
                            for m in d.members]))
    elif d.members and d.group_type == CONSUMER:
        parts.append(table(["MEMBER-ID", "GROUP-INSTANCE-ID", "CLIENT-ID", "CLIENT-HOST", "MEMBER-EPOCH",
                            "SUBSCRIBED", "ASSIGNMENT", "TARGET-ASSIGNMENT"],
                           [[m.member_id, m.group_instance_id, m.client_id, m.client_host, m.member_epoch,
                             subscription(m), _assignment(m), _target(m)] for m in d.members]))
    elif d.members:
        parts.append(table(["MEMBER-ID", "GROUP-INSTANCE-ID", "CLIENT-ID", "CLIENT-HOST", "ASSIGNMENT"],
                           [[m.member_id, m.group_instance_id, m.client_id, m.client_host, _assignment(m)]
                            for m in d.members]))
    else:
        parts.append("no members")
    if d.offsets and d.group_type == SHARE:
        parts.append(table(["TOPIC", "PARTITION", "START-OFFSET", "LOG-END-OFFSET", "LAG"],
                           [[p.topic, p.partition, p.committed, p.end, p.lag] for p in d.offsets]))
        total = d.total_lag
        parts.append(f"total lag: {NONE if total is None else total}")
    elif d.offsets:
        # the time lag column only when it was asked for: the table without it stays as it was
        timed = d.with_time_lag
        parts.append(table(["TOPIC", "PARTITION", "COMMITTED-OFFSET", "LOG-END-OFFSET", "LAG",
                            *(["TIME-LAG-S"] if timed else []), "MEMBER-ID"],
                           [[p.topic, p.partition, p.committed, p.end, p.lag,
                             *([seconds(p.time_lag_s)] if timed else []), p.member_id] for p in d.offsets]))
        total = d.total_lag
        parts.append(f"total lag: {NONE if total is None else total}"
                     + (f"\nmax time lag: {_in_s(d.max_time_lag_s)}" if timed else ""))
    else:
        parts.append("no start offsets yet" if d.group_type == SHARE else "no committed offsets")
    return "\n\n".join(parts)


def seconds(value: float | None) -> str:
    """A time lag: seconds to the millisecond (the records' timestamps are milliseconds); "-"
    for unknown."""
    return NONE if value is None else f"{value:.3f}"


def _in_s(value: float | None) -> str:
    return NONE if value is None else f"{seconds(value)} s"


def render_time_lag(d: GroupDescription) -> str:
    """``groups watch --lag-seconds``'s line of each look: the group's largest time lag, then
    each partition's (``time lag: max 12.345 s; orders[0] 12.345 s, orders[1] 0.000 s, orders[2] -``)."""
    if not d.offsets:
        return "time lag: - (no committed offsets)"
    each = ", ".join(f"{p.topic}[{p.partition}] {_in_s(p.time_lag_s)}" for p in d.offsets)
    return f"time lag: max {_in_s(d.max_time_lag_s)}; {each}"


def subscription(m: Member) -> str:
    """``orders,payments`` for topics by name, ``/orders-.*/`` for a pattern; "-" for none."""
    names = ",".join(m.subscribed_topics or ())
    pattern = f"/{m.subscribed_regex}/" if m.subscribed_regex else ""
    return " ".join(part for part in (names, pattern) if part) or NONE


def _target(m: Member) -> str:
    return partitions(m.target_assignment) + (" (reconciling)" if m.reconciling else "")


# -- watch ---------------------------------------------------------------------------------
@dataclass
class GroupWatch:
    """What changed since the last look: state, protocol, members joining and leaving, and
    assignments.  DescribeGroups carries no generation, so a classic group's rebalance shows as
    the state going through PreparingRebalance and as these membership and assignment changes.
    Assignments are compared with the last one seen for the member: outside Stable a classic
    group does not show them, which is not a change.

    A consumer-protocol group (KIP-848) also shows its epochs moving (the group's, its target
    assignment's, each member's) and each member that is reconciling: its current assignment is
    not its target yet ("reconciling M: current -> target"), until it is ("reconciled M")."""

    group_id: str
    seen: bool = False
    state: str | None = None
    protocol: str | None = None
    group_type: str | None = None
    group_epoch: int | None = None
    assignment_epoch: int | None = None
    members: dict[str, Member] = field(default_factory=dict)
    assignments: dict[str, tuple[TopicPartition, ...]] = field(default_factory=dict)
    member_epochs: dict[str, int] = field(default_factory=dict)
    # the target of each member last shown reconciling, until it is reconciled
    reconciling: dict[str, tuple[TopicPartition, ...]] = field(default_factory=dict)

    def update(self, d: GroupDescription | None) -> list[str]:
        """Lines for what changed (all of it on the first look); None: the group is not there."""
        first = not self.seen
        self.seen = True
        lines: list[str] = []
        state = d.state if d is not None else None
        if state != self.state or first:
            if d is None:
                lines.append(f"group {self.group_id} not found")
            elif first:
                lines.append(_summary(d))
            else:
                lines.append(f"state {self.state or 'not found'} -> {state}")
            self.state = state
        if d is not None:
            lines += self._group_changes(d)
        now = {m.member_id: m for m in (d.members if d is not None else ())}
        for member_id, m in now.items():
            if member_id not in self.members:
                lines.append(f"member joined: {member_id} (client {m.client_id}, host {m.client_host}"
                             + (f", instance {m.group_instance_id}" if m.group_instance_id else "")
                             + (f", epoch {m.member_epoch})" if m.member_epoch is not None else ")"))
        for member_id in self.members:
            if member_id not in now:
                lines.append(f"member left: {member_id}")
                self.assignments.pop(member_id, None)
                self.member_epochs.pop(member_id, None)
                self.reconciling.pop(member_id, None)
        for member_id, m in now.items():
            lines += self._member_changes(m)
        self.members = now
        return lines

    def _group_changes(self, d: GroupDescription) -> list[str]:
        lines: list[str] = []
        if self.group_type is not None and d.group_type != self.group_type:
            lines.append(f"type {self.group_type} -> {d.group_type}")
        self.group_type = d.group_type
        if d.protocol and self.protocol and d.protocol != self.protocol:
            lines.append(f"{'assignor' if d.group_type == CONSUMER else 'protocol'} {self.protocol} -> {d.protocol}")
        if d.protocol:
            self.protocol = d.protocol
        for what, before, after in (("group epoch", self.group_epoch, d.group_epoch),
                                    ("assignment epoch", self.assignment_epoch, d.assignment_epoch)):
            if before is not None and after is not None and before != after:
                lines.append(f"{what} {before} -> {after}")
        self.group_epoch, self.assignment_epoch = d.group_epoch, d.assignment_epoch
        return lines

    def _member_changes(self, m: Member) -> list[str]:
        lines: list[str] = []
        member_id = m.member_id
        if m.member_epoch is not None:
            before_epoch = self.member_epochs.get(member_id)
            if before_epoch is not None and before_epoch != m.member_epoch:
                lines.append(f"member epoch {member_id}: {before_epoch} -> {m.member_epoch}")
            self.member_epochs[member_id] = m.member_epoch
        if m.assignment is not None:
            before = self.assignments.get(member_id)
            if before != m.assignment:
                change = f"{partitions(before)} -> " if before is not None else ""
                lines.append(f"assignment {member_id}: {change}{partitions(m.assignment)}")
                self.assignments[member_id] = m.assignment
        if m.target_assignment is None:
            return lines
        if m.reconciling:
            if self.reconciling.get(member_id) != m.target_assignment:  # newly, or towards a new target
                lines.append(f"reconciling {member_id}: {_towards(m)}")
                self.reconciling[member_id] = m.target_assignment
        elif self.reconciling.pop(member_id, None) is not None:
            lines.append(f"reconciled {member_id}: {partitions(m.assignment)}")
        return lines


def _towards(m: Member) -> str:
    """``current -> target``; when they are the same, the epochs that say it is not done yet
    (the partitions it is giving up are no longer in its current assignment)."""
    if set(m.assignment or ()) != set(m.target_assignment or ()):
        return f"{partitions(m.assignment)} -> {partitions(m.target_assignment)}"
    return f"{partitions(m.assignment)} at epoch {m.member_epoch}, target epoch {m.target_epoch}"


def _summary(d: GroupDescription) -> str:
    count = f"{len(d.members)} member{'' if len(d.members) == 1 else 's'}"
    if d.group_type == CONSUMER:
        return (f"state {d.state}, type {d.group_type}, assignor {d.assignor or NONE}, group epoch {d.group_epoch}, "
                f"assignment epoch {d.assignment_epoch}, {count}")
    return f"state {d.state}, protocol {d.protocol or NONE}, {count}"
