"""Kafka's ``simple`` share-group assignor: every partition of the subscribed topics to at least one
member, members sharing a partition only when there are more members than partitions, and each
member keeping what it had where it can.  A pure function; members and partitions are taken in
sorted order where Kafka's hash order decides, so an answer is the same every time.

With M members and P partitions, each partition goes to ``ceil(M / P)`` members (its *sharing*),
and member *i* (in order) gets ``ceil(x·(i+1)) − ceil(x·i)`` partitions, ``x = sharing·P / M``.
From the current assignment: drop partitions of topics no longer subscribed; take partitions from
members above their count; take members from partitions above their sharing; then give members
below their count the partitions below their sharing, never one a member already has.  When the
members subscribe to different topics, each topic is assigned so among its own subscribers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

Partition = tuple[str, int]  # (topic, partition)
Assignment = dict[str, set[Partition]]  # member id -> partitions


def assign(subscriptions: Mapping[str, frozenset[str]], partitions: Mapping[str, int],
           current: Mapping[str, set[Partition]]) -> Assignment:
    """The target: ``subscriptions`` by member, each topic's partition count (a topic not listed
    has none yet), and what each member has now."""
    result: Assignment = {member: set() for member in subscriptions}
    topics = sorted({t for subscribed in subscriptions.values() for t in subscribed if partitions.get(t)})
    if len(set(subscriptions.values())) <= 1:  # every member subscribes alike: all partitions at once
        every = [(t, p) for t in topics for p in range(partitions[t])]
        _assign_some(sorted(subscriptions), every, current, result)
    else:
        for topic in topics:
            members = sorted(m for m, subscribed in subscriptions.items() if topic in subscribed)
            _assign_some(members, [(topic, p) for p in range(partitions[topic])], current, result)
    return result


def _assign_some(members: list[str], targets: list[Partition], current: Mapping[str, set[Partition]],
                 result: Assignment) -> None:
    if not members or not targets:
        return
    wanted = set(targets)
    sharing = math.ceil(len(members) / len(targets))
    x = Fraction(sharing * len(targets), len(members))
    count = {m: math.ceil(x * (i + 1)) - math.ceil(x * i) for i, m in enumerate(members)}
    holders: dict[Partition, list[str]] = {p: [] for p in targets}
    mine: dict[str, list[Partition]] = {}
    for member in members:  # what it keeps: still wanted, up to its count
        kept = sorted(p for p in current.get(member, ()) if p in wanted)[: count[member]]
        mine[member] = kept
        for p in kept:
            holders[p].append(member)
    for p in targets:  # no partition above its sharing
        for member in holders[p][sharing:]:
            mine[member].remove(p)
        del holders[p][sharing:]
    for member in members:  # fill each member from the partitions least shared
        while len(mine[member]) < count[member]:
            free = [p for p in targets if len(holders[p]) < sharing and member not in holders[p]]
            if not free:
                break
            p = min(free, key=lambda q: (len(holders[q]), q))
            mine[member].append(p)
            holders[p].append(member)
    for member in members:
        result[member] |= set(mine[member])
