"""The broker-side assignors of the consumer group protocol (KIP-848), as Kafka 4.1's group
coordinator has them: ``uniform`` (its default) and ``range``.  Pure functions of the members'
subscriptions, their current target assignments and the topics' partition counts; no clock, no
I/O, deterministic (members and topics in sorted order where Java follows a HashMap's).

- ``uniform``: balance first, then stickiness.  When every member subscribes to the same topics,
  each member gets ``total // M`` partitions or one more, counted over all topics; the extra ones go
  to members that already hold that many (so a balanced assignment stays as it is); members keep
  what fits their quota, the rest is handed out in contiguous slices (Kafka's
  ``UniformHomogeneousAssignmentBuilder`` as of 4.1, KAFKA-18688).  Otherwise members keep every
  partition of topics they still subscribe to, the free partitions of each topic go to its least
  loaded subscriber (topics with the most partitions per subscriber first), and partitions then
  move from the most to the least loaded subscriber of each topic, highest partition first, while
  that helps (``UniformHeterogeneousAssignmentBuilder``).
- ``range``: not sticky (neither is Kafka's): members with an instance id first, by instance id,
  then the rest by member id; each topic split into contiguous ranges among its subscribers in
  that order, the first ``n % subscribers`` getting one more: identical subscriptions are
  co-partitioned.

Speed (benchmarks/server_assignors.py, against Kafka's own in the same run): the work per member is
kept to a few dict and list operations and partitions move as runs (``range`` or list slices,
turned into a frozenset once, in C), never one at a time in Python, except where the heterogeneous
builder must (each partition has its owner there).  A member that keeps what it holds keeps its
very frozensets; equal runs share one frozenset (they are immutable).  Topics are looked up by
index: ``UUID.__hash__`` is Python code.  tests/unit/test_server_assignors.py checks every result
against a frozen copy of the straightforward version this replaced.
"""

from __future__ import annotations

import heapq
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, groupby
from operator import attrgetter, itemgetter
from typing import TypeAlias

TopicId = uuid.UUID
Assignment = dict[TopicId, frozenset[int]]


class PartitionAssignorError(Exception):
    """The assignment cannot be made (Kafka's PartitionAssignorException: a member subscribes to
    a topic the metadata does not have)."""


@dataclass(frozen=True)
class MemberSpec:
    """What an assignor knows of a member."""

    member_id: str
    topics: frozenset[TopicId]  # subscribed, resolved to ids
    target: Mapping[TopicId, frozenset[int]] = field(default_factory=dict)  # its current target assignment
    instance_id: str | None = None


def _signed(topic_id: TopicId) -> tuple[int, int]:
    """Kafka's ``Uuid.compareTo``: the two halves as signed 64-bit numbers."""
    high, low = topic_id.int >> 64, topic_id.int & (2**64 - 1)
    return (high - 2**64 if high >= 2**63 else high, low - 2**64 if low >= 2**63 else low)


_member_id = attrgetter("member_id")
_instance_and_member_id = attrgetter("instance_id", "member_id")
_topics = attrgetter("topics")
_target = attrgetter("target")
_first = itemgetter(0)


def _subscriptions(members: Sequence[MemberSpec], partitions: Mapping[TopicId, int]) -> set[frozenset[TopicId]]:
    """The distinct subscriptions, after Kafka's check: the first member (in the given order) with
    a topic the metadata lacks fails.  Each distinct subscription is checked once; frozensets
    compare by the hashes they store (no ``UUID.__hash__`` per member)."""
    subscriptions = set(map(_topics, members))
    known = frozenset(partitions)
    if not all(topics <= known for topics in subscriptions):
        member = next(m for m in members if not m.topics <= known)
        topic = next(t for t in member.topics if t not in partitions)
        raise PartitionAssignorError(
            f"Members are subscribed to topic {topic} which doesn't exist in the topic metadata.")
    return subscriptions


def uniform(members: Sequence[MemberSpec], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    """Kafka's ``uniform`` assignor (see the module's docstring)."""
    if not members:
        return {}
    ordered = sorted(members, key=_member_id)
    if len(_subscriptions(ordered, partitions)) == 1:
        return _uniform_homogeneous(ordered, sorted(ordered[0].topics, key=_signed), partitions)
    return _uniform_heterogeneous(ordered, partitions)


# Partitions of one topic while the homogeneous builder works: a member's own frozenset (kept as it
# is), a ``range`` (a contiguous run nobody held) or a list (what members gave up); sliced, never
# walked one partition at a time.
Run: TypeAlias = "frozenset[int] | range | list[int]"


def _uniform_homogeneous(members: Sequence[MemberSpec], topics: Sequence[TopicId],
                         partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    """Topics are known by their index in ``topics`` (Kafka's Uuid order) here."""
    count = len(members)
    counts = [partitions[t] for t in topics]
    min_quota, remaining = divmod(sum(counts), count)
    rank = {t: i for i, t in enumerate(topics)}
    held: list[list[Collection[int]]] = [[] for _ in topics]  # what members hold, per topic
    given_up: list[tuple[int, range | list[int]]] = []
    assignments: list[Assignment | None] = [None] * count  # None: nothing (yet)
    # (member's position, partitions it lacks, what it keeps: None for nothing, the common case)
    unfilled: list[tuple[int, int, dict[int, Run] | None]] = []
    for index, member in enumerate(members):
        if not member.target:  # what the loop below comes to for a member that holds nothing
            quota = min_quota
            if remaining > 0 and count - index <= remaining:
                quota, remaining = quota + 1, remaining - 1
            if quota > 0:
                unfilled.append((index, quota, None))
            continue
        quota, extra = min_quota, False
        if remaining > 0:
            quota, extra = quota + 1, True  # tentatively claims an extra slot
        target: list[tuple[int, frozenset[int]]] = []
        for topic, parts in member.target.items():
            i = rank.get(topic)
            if i is not None:
                target.append((i, parts))
        whole = len(target) == len(member.target)  # its target as it is could be its assignment
        if len(target) > 1 and any(a[0] > b[0] for a, b in zip(target, target[1:])):
            target.sort(key=_first)
            whole = False  # (not with its topics in another order)
        kept: dict[int, Run] = {}
        for i, parts in target:
            current: frozenset[int] | list[int]
            if type(parts) is frozenset and parts:
                current = parts
            else:  # (a list would keep its duplicates, as it did before)
                current, whole = list(parts), False
            if current and max(current) >= counts[i]:  # partitions the topic does not have
                current, whole = [p for p in current if p < counts[i]], False
            held[i].append(current)
            if len(current) <= quota:  # keeps all of it
                if current:
                    kept[i] = current
                quota -= len(current)
            else:  # keeps its lowest partitions, gives up the rest
                lowest = sorted(current)
                if quota:
                    kept[i] = lowest[:quota]
                given_up.append((i, lowest[quota:]))
                quota, whole = 0, False
        if quota > 0 and extra and count - index > remaining:
            quota, extra = quota - 1, False  # could not fill the extra slot: another member takes it
        if extra:
            remaining -= 1
        if quota > 0:
            unfilled.append((index, quota, kept))
        elif whole:
            assignments[index] = dict(member.target)  # a copy, with its keys' stored hashes
        elif kept:
            assignments[index] = _assignment(kept, topics, {})
    # never held first (topic by topic, ascending), then what members gave up, in that order
    unassigned = _never_held(counts, held) + given_up
    if sum(quota for _, quota, _ in unfilled) < sum(len(run) for _, run in unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
    # each unfilled member takes the next ``quota`` of them; the same range often goes to several
    # members (one per topic): its frozenset is made once
    ranges: dict[range, frozenset[int]] = {}
    chunk, offset = 0, 0
    for index, quota, kept_or_none in unfilled:
        if kept_or_none is None and chunk < len(unassigned):
            i, run = unassigned[chunk]
            if offset + quota < len(run):  # the common case: it all comes from this run
                assignments[index] = {topics[i]: _frozen(run[offset:offset + quota], ranges)}
                offset += quota
                continue
        kept = {} if kept_or_none is None else kept_or_none
        while quota and chunk < len(unassigned):
            i, run = unassigned[chunk]
            piece = run[offset:offset + quota]
            offset += len(piece)
            quota -= len(piece)
            if offset == len(run):
                chunk, offset = chunk + 1, 0
            had = kept.get(i)
            if had is None:
                kept[i] = piece
            elif isinstance(had, list):  # a list of ours: grow it
                had.extend(piece)
            else:
                kept[i] = [*had, *piece]
        assignments[index] = _assignment(kept, topics, ranges)
    return {m.member_id: {} if a is None else a for m, a in zip(members, assignments)}


def _never_held(counts: Sequence[int], held: Sequence[Sequence[Collection[int]]]) -> list[tuple[int, range | list[int]]]:
    """The partitions no member holds, topic by topic, ascending, as runs."""
    free: list[tuple[int, range | list[int]]] = []
    for i, n in enumerate(counts):
        taken = set().union(*held[i])
        if not taken:
            if n:
                free.append((i, range(n)))
        elif len(taken) < n:
            free.append((i, sorted(set(range(n)).difference(taken))))
    return free


def _frozen(run: Run, ranges: dict[range, frozenset[int]]) -> frozenset[int]:
    if isinstance(run, range):
        parts = ranges.get(run)
        if parts is None:
            parts = ranges[run] = frozenset(run)
        return parts
    return run if isinstance(run, frozenset) else frozenset(run)


def _assignment(kept: Mapping[int, Run], topics: Sequence[TopicId], ranges: dict[range, frozenset[int]]) -> Assignment:
    return {topics[i]: _frozen(run, ranges) for i, run in kept.items()}


def _uniform_heterogeneous(members: Sequence[MemberSpec], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    index = {m.member_id: i for i, m in enumerate(members)}
    # each topic's subscribers (ascending), topics in the order members first name them; members
    # grouped by subscription first, so that UUIDs are hashed per subscription, not per member
    by_subscription: dict[frozenset[TopicId], list[int]] = {}
    for i, member in enumerate(members):
        by_subscription.setdefault(member.topics, []).append(i)
    subscribers: dict[TopicId, list[int]] = {}
    for subscription, indexes in by_subscription.items():
        for topic in subscription:
            subscribers.setdefault(topic, []).extend(indexes)
    for indexes in subscribers.values():
        indexes.sort()
    owners = {t: [-1] * partitions[t] for t in subscribers}
    sizes = [0] * len(members)
    for member in members:
        i = index[member.member_id]
        for topic, parts in member.target.items():
            if topic in member.topics:
                n, own = partitions[topic], owners[topic]  # looked up once, not per partition
                for p in parts:
                    if p < n and own[p] == -1:
                        own[p] = i
                        sizes[i] += 1

    def order(topic: TopicId) -> tuple[float, int, tuple[int, int]]:
        return (-partitions[topic] / len(subscribers[topic]), len(subscribers[topic]), _signed(topic))

    topics = sorted(subscribers, key=order)
    k = len(sizes)
    for topic in topics:
        own = owners[topic]
        free = [p for p, owner in enumerate(own) if owner == -1]
        if not free:
            continue
        # the least loaded subscriber takes the next one (ties: member order); heap keys are ints
        # (see _balance), unique, so replacing the top is popping it and pushing it back
        heap = [sizes[i] * k + i for i in subscribers[topic]]
        heapq.heapify(heap)
        for p in free:
            own[p] = heap[0] % k
            heapq.heapreplace(heap, heap[0] + k)
        for key in heap:
            sizes[key % k] = key // k
    _balance(topics, subscribers, owners, sizes)
    result: dict[str, Assignment] = {m.member_id: {} for m in members}
    ids = [m.member_id for m in members]
    for topic, own in owners.items():
        # partitions grouped by owner, in C (a stable sort: ascending within each)
        for i, mine in groupby(sorted(range(len(own)), key=own.__getitem__), key=own.__getitem__):
            result[ids[i]][topic] = frozenset(mine)
    return result


MAX_BALANCE_PASSES = 16  # Kafka's MAX_ITERATION_COUNT


def _balance(topics: Sequence[TopicId], subscribers: Mapping[TopicId, list[int]], owners: Mapping[TopicId, list[int]],
             sizes: list[int]) -> None:
    """Move each topic's partitions from its most to its least loaded subscriber (global totals),
    highest partition first, while they differ by more than one; until a lap moves nothing.

    Both ends are found with heaps, not by a scan of every subscriber per move; a stale entry (a
    size since changed, a donor with nothing left) is dropped when it comes up.  Heap keys are
    ints, ``size * k + index`` (``-size * k + index`` for the most loaded): they order like
    ``(size, index)``, without a tuple each for the garbage collector to visit."""
    k = len(sizes)
    shared = [t for t in topics if len(subscribers[t]) >= 2]
    for _ in range(MAX_BALANCE_PASSES):
        moved = 0
        for topic in shared:
            subs = subscribers[topic]
            if max(map(sizes.__getitem__, subs)) - min(map(sizes.__getitem__, subs)) <= 1:
                continue  # nothing can move (the loop below would stop at once)
            own = owners[topic]
            # each owner's partitions, ascending: one stable sort by owner, then slices
            by_owner = sorted(range(len(own)), key=own.__getitem__)
            held: dict[int, list[int]] = {}
            start = 0
            for i, count in sorted(Counter(own).items()):
                held[i] = by_owner[start:start + count]
                start += count
            most = [-sizes[i] * k + i for i in held]
            least = [sizes[i] * k + i for i in subs]
            heapq.heapify(most)
            heapq.heapify(least)
            while True:
                while most and (-(most[0] // k) != sizes[most[0] % k] or not held[most[0] % k]):
                    heapq.heappop(most)
                if not most:
                    break
                while least[0] // k != sizes[least[0] % k]:
                    heapq.heappop(least)
                donor, taker = most[0] % k, least[0] % k
                if sizes[donor] - sizes[taker] <= 1:
                    break
                p = held[donor].pop()  # its highest partition of the topic
                own[p] = taker
                held.setdefault(taker, []).append(p)
                sizes[donor] -= 1
                sizes[taker] += 1
                moved += 1
                for i in (donor, taker):
                    heapq.heappush(most, -sizes[i] * k + i)
                    heapq.heappush(least, sizes[i] * k + i)
        if not moved:
            return


def range_assignor(members: Sequence[MemberSpec], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    """Kafka's ``range`` assignor (see the module's docstring).  The ``j``-th of a topic's ``k``
    subscribers gets the ``j``-th of its ``k`` contiguous ranges: no cursor to walk."""
    if not members:
        return {}
    subscriptions = _subscriptions(members, partitions)
    # static members first, by instance id, then the others by member id (sorted is stable)
    ordered = sorted((m for m in members if m.instance_id is not None), key=_instance_and_member_id)
    ordered += sorted((m for m in members if m.instance_id is None), key=_member_id)
    # each distinct subscription's topics in Kafka's Uuid order, sorted once, not once per member
    plans = {topics: sorted(topics, key=_signed) for topics in subscriptions}
    counts = {t: partitions[t] for plan in plans.values() for t in plan}
    if len(plans) == 1 and len(set(counts.values())) == 1:
        # everyone subscribes to the same topics, all of one size: a member's range is the same in
        # each, one frozenset for all (Kafka 4.1 gives a from-to RangeSet), keys copied from a
        # template (with their stored hashes)
        template = dict.fromkeys(next(iter(plans.values())))
        quota, extra = divmod(next(iter(counts.values())), len(ordered))
        ends = list(accumulate([quota + 1] * extra + [quota] * (len(ordered) - extra)))
        starts = [0, *ends[:-1]]
        if any(m.target for m in ordered):  # members keep their ranges when one joins after them
            sets = list(map(_range_set, map(_target, ordered), starts, ends))
        else:  # (map: the loop in C)
            sets = list(map(frozenset, map(range, starts, ends)))
        return {m.member_id: dict.fromkeys(template, parts) if parts else {} for m, parts in zip(ordered, sets)}
    # otherwise topic by topic, each known by its index in ``order``
    order = list(counts)
    index = {t: i for i, t in enumerate(order)}
    subscribers = [0] * len(order)
    for subscription, count in Counter(map(_topics, members)).items():
        for t in subscription:
            subscribers[index[t]] += count
    split = [divmod(counts[t], k) for t, k in zip(order, subscribers)]  # (quota, how many get one more)
    steps = {topics: [(t, index[t]) for t in plan] for topics, plan in plans.items()}
    served = [0] * len(order)  # subscribers served so far
    ranges: dict[range, frozenset[int]] = {}  # equal ranges share one frozenset
    result: dict[str, Assignment] = {}
    for member in ordered:
        mine: Assignment = {}
        for topic, i in steps[member.topics]:
            j = served[i]
            served[i] = j + 1
            quota, extra = split[i]
            start = j * quota + min(j, extra)
            end = start + quota + (j < extra)
            if start < end:
                mine[topic] = _frozen(range(start, end), ranges)
        result[member.member_id] = mine
    return result


def _range_set(target: Mapping[TopicId, frozenset[int]], start: int, end: int) -> frozenset[int]:
    """``frozenset(range(start, end))``, or the member's first frozenset if it is that already
    (members keep their ranges when one joins after them): checking costs less than building."""
    for parts in target.values():
        if type(parts) is frozenset and len(parts) == end - start and parts.issuperset(range(start, end)):
            return parts
        break
    return frozenset(range(start, end))


ServerAssignor = Callable[[Sequence[MemberSpec], Mapping[TopicId, int]], dict[str, Assignment]]

# The one table of server-side assignors, by the name a member asks for (ServerAssignor) and the
# coordinator's settings list (group.consumer.assignors), in the order of Kafka's default for that
# setting: the first is the default.  The settings' default and their check, the consumer groups
# and the command line all read it, so an assignor added here is served everywhere.
SERVER_ASSIGNORS: dict[str, ServerAssignor] = {"uniform": uniform, "range": range_assignor}
DEFAULT_ASSIGNOR = next(iter(SERVER_ASSIGNORS))
