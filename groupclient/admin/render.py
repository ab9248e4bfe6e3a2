"""Text for the group commands: tables, partition lists, and what changed between two looks
at a group (``groups watch``).  Pure functions of the values in :mod:`.model`: no sockets."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..structs import TopicPartition

from .model import GroupDescription, ListedGroup, Member

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


def render_kafka(d: GroupDescription) -> str:
    """``kafka-consumer-groups.sh --describe``'s offsets view, column for column (its widths:
    at least 15, PARTITION 10; "-" where nothing is known), so scripts written for it work."""
    members = {m.member_id: m for m in d.members}
    rows = []
    for p in d.offsets:
        m = members.get(p.member_id) if p.member_id else None
        rows.append([d.group_id, p.topic, str(p.partition), _dash(p.committed), _dash(p.end), _dash(p.lag),
                     m.member_id if m else NONE, m.client_host if m else NONE, m.client_id if m else NONE])
    widths = [max([15, *(len(r[i]) for r in rows)]) if i in (0, 1, 6, 7) else (10 if i == 2 else 15)
              for i in range(len(KAFKA_COLUMNS) - 1)]
    lines = [""]
    if not d.members:
        lines += [f"Consumer group '{d.group_id}' has no active members.", ""]
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
    c = d.coordinator
    parts = [table(["GROUP", "STATE", "PROTOCOL-TYPE", "PROTOCOL", "MEMBERS", "COORDINATOR"],
                   [[d.group_id, d.state, d.protocol_type or NONE, d.protocol or NONE, len(d.members),
                     f"{c.node_id} ({c.host}:{c.port})"]])]
    if d.members:
        parts.append(table(["MEMBER-ID", "GROUP-INSTANCE-ID", "CLIENT-ID", "CLIENT-HOST", "ASSIGNMENT"],
                           [[m.member_id, m.group_instance_id, m.client_id, m.client_host, _assignment(m)]
                            for m in d.members]))
    else:
        parts.append("no members")
    if d.offsets:
        parts.append(table(["TOPIC", "PARTITION", "COMMITTED-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID"],
                           [[p.topic, p.partition, p.committed, p.end, p.lag, p.member_id] for p in d.offsets]))
        total = d.total_lag
        parts.append(f"total lag: {NONE if total is None else total}")
    else:
        parts.append("no committed offsets")
    return "\n\n".join(parts)


# -- watch ---------------------------------------------------------------------------------
@dataclass
class GroupWatch:
    """What changed since the last look: state, protocol, members joining and leaving, and
    assignments.  DescribeGroups carries no generation, so a rebalance shows as the state going
    through PreparingRebalance and as these membership and assignment changes.  Assignments are
    compared with the last one seen for the member: outside Stable they are not shown, which
    is not a change."""

    group_id: str
    seen: bool = False
    state: str | None = None
    protocol: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    assignments: dict[str, tuple[TopicPartition, ...]] = field(default_factory=dict)

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
                count = len(d.members)
                lines.append(f"state {d.state}, protocol {d.protocol or NONE}, {count} member{'' if count == 1 else 's'}")
            else:
                lines.append(f"state {self.state or 'not found'} -> {state}")
            self.state = state
        if d is not None and d.protocol and self.protocol and d.protocol != self.protocol:
            lines.append(f"protocol {self.protocol} -> {d.protocol}")
        if d is not None and d.protocol:
            self.protocol = d.protocol
        now = {m.member_id: m for m in (d.members if d is not None else ())}
        for member_id, m in now.items():
            if member_id not in self.members:
                lines.append(f"member joined: {member_id} (client {m.client_id}, host {m.client_host}"
                             + (f", instance {m.group_instance_id})" if m.group_instance_id else ")"))
        for member_id in self.members:
            if member_id not in now:
                lines.append(f"member left: {member_id}")
                self.assignments.pop(member_id, None)
        for member_id, m in now.items():
            if m.assignment is None:
                continue
            before = self.assignments.get(member_id)
            if before != m.assignment:
                change = f"{partitions(before)} -> " if before is not None else ""
                lines.append(f"assignment {member_id}: {change}{partitions(m.assignment)}")
                self.assignments[member_id] = m.assignment
        self.members = now
        return lines
