"""What the cooperative-rebalancing tests (test_cooperative_groups.py, test_cooperative_rebalances.py)
check with: every member's ownership history merged from its CLOCK_MONOTONIC-stamped events, "no
partition held by two members at once" over a whole run, and the embedded coordinator's view of a
settled group."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any


from groupclient.coordinator import EmbeddedCluster
from tests.integration.peers import Peer, coordinator_assignments, exclusive_cover, wait_until


PARTITIONS = 6
COOP = "cooperative-sticky"


# -- the ownership history ---------------------------------------------------------------------
@dataclass(frozen=True)
class Holding:
    member: str
    partition: int
    start: float
    end: float


def holdings(member: Peer) -> list[Holding]:
    """What the member held, when, from its own event log."""
    out: list[Holding] = []
    held: dict[int, float] = {}

    def release(partitions: Any, t: float) -> None:
        for p in list(partitions):
            if p in held:
                out.append(Holding(member.name, p, held.pop(p), t))

    for event in member.snapshot():
        kind, t = event["event"], event["t"]
        if kind == "assigned":
            now = set(event["partitions"])
            release(set(held) - now, t)
            for p in now - set(held):
                held[p] = t
        elif kind in ("revoked", "lost"):
            release(event["partitions"], t)
        elif kind in ("closing", "closed", "error"):
            release(set(held), t)
    release(set(held), member.ended_at if member.ended_at is not None else math.inf)
    return out


def double_ownership(members: list[Peer]) -> list[str]:
    """Every instant at which two members held the same partition."""
    by_partition: dict[int, list[Holding]] = defaultdict(list)
    for m in members:
        for h in holdings(m):
            by_partition[h.partition].append(h)
    problems = []
    for partition, hs in sorted(by_partition.items()):
        hs.sort(key=lambda h: (h.start, h.end))
        latest: Holding | None = None
        for h in hs:
            if latest is not None and h.start < latest.end:
                problems.append(f"partition {partition}: {latest.member} held it {latest.start:.3f}..{latest.end:.3f} "
                                f"and {h.member} from {h.start:.3f}")
            if latest is None or h.end > latest.end:
                latest = h
    return problems


def revoked_since(member: Peer, mark: int) -> set[int]:
    return {p for e in member.snapshot()[mark:] if e["event"] in ("revoked", "lost") for p in e["partitions"]}


def ownership_events_since(member: Peer, mark: int) -> list[dict[str, Any]]:
    return [e for e in member.snapshot()[mark:] if e["event"] in ("assigned", "revoked", "lost")]


def describe(members: list[Peer]) -> list[str]:
    return [m.describe() for m in members]


class Step:
    """Before a scale event: what each member that stays holds, and where its log stands.  After
    it: under cooperative rebalancing each of them revoked exactly what it no longer holds (a
    member that keeps a partition never sees it revoked)."""

    def __init__(self, stay: list[Peer]) -> None:
        self.stay = stay
        self.before = {m.name: set(m.assignment) for m in stay}
        self.marks = {m.name: len(m.snapshot()) for m in stay}

    def check_only_moved_partitions_revoked(self) -> None:
        for m in self.stay:
            # what it held at the mark, or was handed after it (a cooperative round that was
            # still finishing when the mark was taken), and does not hold now
            gained = {p for e in ownership_events_since(m, self.marks[m.name]) if e["event"] == "assigned"
                      for p in e["partitions"]}
            moved = (self.before[m.name] | gained) - m.assignment
            revoked = revoked_since(m, self.marks[m.name])
            assert revoked == moved, (f"{m.name} held {sorted(self.before[m.name])}, now {sorted(m.assignment)}, "
                                      f"but its listener saw {sorted(revoked)} revoked: "
                                      f"{ownership_events_since(m, self.marks[m.name])}")


# -- the embedded coordinator ------------------------------------------------------------------
def settled(cluster: EmbeddedCluster, group: str, topic: str, members: list[Peer], partitions: int = PARTITIONS,
            timeout_s: float = 45) -> bool:
    """The coordinator has the group Stable with exactly these members, its assignment and the
    members' own views are exact covers, every member holds some partition, and every member that
    reports its generation has heard of the coordinator's (a cooperative rebalance's second
    generation leaves a member's partitions as they were: without this, a test could look before
    that member had heard of it, and count its "assigned" event as a later change)."""
    def ok() -> bool:
        held = coordinator_assignments(cluster, group, topic)
        if held is None or len(held) != len(members) or not exclusive_cover(held.values(), partitions):
            return False
        views = [set(m.assignment) for m in members]
        if not (exclusive_cover(views, partitions) and all(views[:partitions])):
            return False
        described = cluster.describe_group(group)
        return described is not None and all(m.generation in (None, described["generation"]) for m in members)
    return wait_until(ok, timeout_s)


def member_names(cluster: EmbeddedCluster, group: str) -> list[str]:
    described = cluster.describe_group(group)
    return [m["client_id"] for m in described["members"].values()] if described else []


def leader_name(cluster: EmbeddedCluster, group: str) -> str | None:
    described = cluster.describe_group(group)
    if described is None or described["leader"] not in described["members"]:
        return None
    return described["members"][described["leader"]]["client_id"]
