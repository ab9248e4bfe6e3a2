"""The sticky balancer: a pure function from members, their topics and what they own to a
balanced assignment that moves as little as possible.

It follows the modern Java design (AbstractStickyAssignor): a constrained path when every member
subscribes to the same topics, where quotas are known up front and the work is linear in the
number of partitions; and a general path otherwise, which keeps owned partitions, places the
rest on the least-loaded eligible member (topics with the fewest subscribers first) and then
moves partitions from fuller to emptier eligible members until no such move would help.

Partitions are plain ints here (an offset per topic plus the partition number), so a group of a
million partitions costs a million ints, not a million objects, until the result is built.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass
class BalanceInput:
    """``members`` in assignment order; ``topics`` sorted; ``owned`` holds each member's valid
    previous partitions as (topic index, partition); ``member_racks`` / ``partition_racks`` are
    empty when the assignment is not rack-aware."""

    topics: Sequence[str]
    counts: Sequence[int]
    members: Sequence[str]
    member_topics: Mapping[str, frozenset[int]]  # member -> indexes into ``topics``
    owned: Mapping[str, Sequence[tuple[int, int]]]
    member_racks: Mapping[str, str] = field(default_factory=dict)
    partition_racks: Mapping[int, Sequence[frozenset[str]]] = field(default_factory=dict)  # topic index -> racks


@dataclass
class BalanceResult:
    assignment: dict[str, list[tuple[int, int]]]
    # partitions given to a member other than the one that owned them: under COOPERATIVE these
    # wait one round, until their owner has revoked them
    transferring: set[tuple[int, int]]


def balance(data: BalanceInput) -> BalanceResult:
    subscribed = [t for t in range(len(data.topics)) if any(t in data.member_topics[m] for m in data.members)]
    first = data.member_topics[data.members[0]] if data.members else frozenset()
    if all(data.member_topics[m] == first for m in data.members):
        return _Constrained(data, subscribed).run()
    return _General(data, subscribed).run()


class _Racks:
    """KIP-881: prefer a member in a rack that holds a replica of the partition."""

    def __init__(self, data: BalanceInput) -> None:
        self.member_racks = data.member_racks
        self.partition_racks = data.partition_racks
        self.enabled = bool(self.member_racks) and bool(self.partition_racks)

    def matches(self, member: str, topic: int, partition: int) -> bool:
        rack = self.member_racks.get(member)
        racks = self.partition_racks.get(topic)
        if rack is None or racks is None or partition >= len(racks):
            return True  # nothing known: no mismatch
        return rack in racks[partition]


class _Constrained:
    """Equal subscriptions: every member gets min_quota or min_quota + 1 partitions."""

    def __init__(self, data: BalanceInput, subscribed: list[int]) -> None:
        self.data = data
        self.subscribed = subscribed
        self.racks = _Racks(data)

    def run(self) -> BalanceResult:
        data = self.data
        members = list(data.members)
        total = sum(data.counts[t] for t in self.subscribed)
        min_quota, extra = divmod(total, len(members))
        max_quota = min_quota + (1 if extra else 0)
        over_left = extra  # members that may still end with max_quota
        assignment: dict[str, list[tuple[int, int]]] = {m: [] for m in members}
        taken = {t: bytearray(data.counts[t]) for t in self.subscribed}
        previous_owner: dict[tuple[int, int], str] = {}
        for member in members:
            owned = sorted(data.owned.get(member, ()))
            if self.racks.enabled:
                # keep partitions in the member's rack first; the others only if quota is left
                owned.sort(key=lambda tp: not self.racks.matches(member, *tp))
            for tp in owned:
                previous_owner[tp] = member
            keep = min(len(owned), min_quota)
            if len(owned) > min_quota and over_left:
                keep, over_left = max_quota, over_left - 1
            for tp in owned[:keep]:
                taken[tp[0]][tp[1]] = 1
            assignment[member] = owned[:keep]
        unassigned = deque((t, p) for t in self.subscribed for p in range(data.counts[t]) if not taken[t][p])
        if self.racks.enabled:
            self._place_in_rack(assignment, unassigned, min_quota, max_quota, over_left)
            over_left = extra - sum(1 for m in members if len(assignment[m]) == max_quota) if extra else 0
        # round robin over the members still below their quota, in member order, so that each
        # topic spreads over the members evenly
        under = deque(m for m in members if len(assignment[m]) < min_quota)
        while under and unassigned:
            member = under.popleft()
            assignment[member].append(unassigned.popleft())
            if len(assignment[member]) < min_quota:
                under.append(member)
        for member in members:
            if not unassigned or not over_left:
                break
            if len(assignment[member]) == min_quota:
                assignment[member].append(unassigned.popleft())
                over_left -= 1
        assert not unassigned, "quotas cover every partition"
        transferring = {tp for m, parts in assignment.items() for tp in parts
                        if previous_owner.get(tp, m) != m}
        return BalanceResult(assignment, transferring)

    def _place_in_rack(self, assignment: dict[str, list[tuple[int, int]]], unassigned: deque[tuple[int, int]],
                       min_quota: int, max_quota: int, over_left: int) -> None:
        """Give unassigned partitions to members in a matching rack while they are below quota."""
        by_rack: dict[str, deque[str]] = {}
        for member in self.data.members:
            rack = self.data.member_racks.get(member)
            if rack is not None and len(assignment[member]) < min_quota:
                by_rack.setdefault(rack, deque()).append(member)
        rest: deque[tuple[int, int]] = deque()
        for tp in unassigned:
            racks = self.data.partition_racks.get(tp[0])
            placed = False
            for rack in (sorted(racks[tp[1]]) if racks is not None and tp[1] < len(racks) else ()):
                queue = by_rack.get(rack)
                if queue:
                    member = queue.popleft()
                    assignment[member].append(tp)
                    if len(assignment[member]) < min_quota:
                        queue.append(member)
                    placed = True
                    break
            if not placed:
                rest.append(tp)
        unassigned.clear()
        unassigned.extend(rest)


class _General:
    """Different subscriptions: keep what is owned, place the rest, then even out the loads."""

    def __init__(self, data: BalanceInput, subscribed: list[int]) -> None:
        self.data = data
        self.subscribed = subscribed
        self.racks = _Racks(data)
        self.order = {m: i for i, m in enumerate(data.members)}
        self.subscribers: dict[int, list[str]] = {t: [] for t in subscribed}
        for member in data.members:
            for t in data.member_topics[member]:
                if t in self.subscribers:
                    self.subscribers[t].append(member)
        self.load = {m: 0 for m in data.members}
        # member -> topic -> its partitions of that topic, kept ones first
        self.held: dict[str, dict[int, list[int]]] = {m: {} for m in data.members}

    def _give(self, member: str, topic: int, partition: int) -> None:
        self.held[member].setdefault(topic, []).append(partition)
        self.load[member] += 1

    def run(self) -> BalanceResult:
        data = self.data
        previous_owner: dict[tuple[int, int], str] = {}
        taken = {t: bytearray(data.counts[t]) for t in self.subscribed}
        for member in data.members:
            for t, p in sorted(data.owned.get(member, ())):
                if t in data.member_topics[member] and t in taken:
                    previous_owner[(t, p)] = member
                    taken[t][p] = 1
                    self._give(member, t, p)
        # topics with the fewest subscribers first: their partitions have the fewest places to go
        for t in sorted(self.subscribed, key=lambda t: (len(self.subscribers[t]), t)):
            free = [p for p in range(data.counts[t]) if not taken[t][p]]
            if free:
                self._place(t, free)
        self._even_out()
        assignment = {m: [(t, p) for t, parts in sorted(self.held[m].items()) for p in parts] for m in data.members}
        transferring = {tp for m, parts in assignment.items() for tp in parts if previous_owner.get(tp, m) != m}
        return BalanceResult(assignment, transferring)

    def _place(self, topic: int, free: list[int]) -> None:
        """Each free partition to the least-loaded subscriber (a member in the partition's rack
        when one is as little loaded)."""
        heap = [(self.load[m], self.order[m], m) for m in self.subscribers[topic]]
        heapq.heapify(heap)
        for p in free:
            load, order, member = heap[0]
            if self.racks.enabled and not self.racks.matches(member, topic, p):
                member = self._same_load_in_rack(heap, topic, p) or member
                load, order = self.load[member], self.order[member]
            self._give(member, topic, p)
            if heap[0][2] == member:
                heapq.heapreplace(heap, (load + 1, order, member))
            else:
                index = next(i for i, entry in enumerate(heap) if entry[2] == member)
                heap[index] = (load + 1, order, member)
                heapq.heapify(heap)

    def _same_load_in_rack(self, heap: list[tuple[int, int, str]], topic: int, partition: int) -> str | None:
        lowest = heap[0][0]
        for load, _order, member in sorted(e for e in heap if e[0] == lowest):
            if self.racks.matches(member, topic, partition):
                return member
        return None

    def _even_out(self) -> None:
        """Move partitions from a holder to an eligible member with at least two fewer partitions
        until no such move exists.  Every move lowers the sum of squared loads, so this ends."""
        changed = True
        while changed:
            changed = False
            for t in self.subscribed:
                subscribers = self.subscribers[t]
                if len(subscribers) < 2:
                    continue
                lowest = [(self.load[m], self.order[m], m) for m in subscribers]
                highest = [(-self.load[m], self.order[m], m) for m in subscribers if self.held[m].get(t)]
                heapq.heapify(lowest)
                heapq.heapify(highest)
                while highest and lowest:
                    neg, order_a, giver = highest[0]
                    low, order_b, taker = lowest[0]
                    if -neg != self.load[giver] or not self.held[giver].get(t):
                        heapq.heappop(highest)  # stale entry
                        if self.held[giver].get(t):
                            heapq.heappush(highest, (-self.load[giver], order_a, giver))
                        continue
                    if low != self.load[taker]:
                        heapq.heapreplace(lowest, (self.load[taker], order_b, taker))
                        continue
                    if self.load[giver] <= self.load[taker] + 1:
                        break
                    # give away the partition it got last (owned ones are first in the list)
                    partition = self.held[giver][t].pop()
                    self.load[giver] -= 1
                    self._give(taker, t, partition)
                    heapq.heapreplace(highest, (-self.load[giver], order_a, giver))
                    heapq.heapreplace(lowest, (self.load[taker], order_b, taker))
                    if self.held[taker][t] and len(self.held[taker][t]) == 1:
                        heapq.heappush(highest, (-self.load[taker], order_b, taker))
                    changed = True
