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
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

TopicId = uuid.UUID
Assignment = dict[TopicId, frozenset[int]]


class PartitionAssignorError(Exception):
    """The assignment cannot be made (Kafka's PartitionAssignorException: a member subscribes to
    a topic the metadata does not have)."""


@dataclass(frozen=True)
class MemberSpec:
    member_id: str
    topics: frozenset[TopicId]  # subscribed, resolved to ids
    target: Mapping[TopicId, frozenset[int]] = field(default_factory=dict)  # its current target assignment
    instance_id: str | None = None


def _signed(topic_id: TopicId) -> tuple[int, int]:
    """Kafka's ``Uuid.compareTo``: the two halves as signed 64-bit numbers."""
    high, low = topic_id.int >> 64, topic_id.int & (2**64 - 1)
    return (high - 2**64 if high >= 2**63 else high, low - 2**64 if low >= 2**63 else low)


def _check_topics(members: Sequence[MemberSpec], partitions: Mapping[TopicId, int]) -> None:
    for member in members:
        for topic in member.topics:
            if topic not in partitions:
                raise PartitionAssignorError(
                    f"Members are subscribed to topic {topic} which doesn't exist in the topic metadata.")


def uniform(members: Sequence[MemberSpec], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    """Kafka's ``uniform`` assignor (see the module's docstring)."""
    if not members:
        return {}
    ordered = sorted(members, key=lambda m: m.member_id)
    _check_topics(ordered, partitions)
    first = ordered[0].topics
    if all(m.topics == first for m in ordered):
        return _uniform_homogeneous(ordered, sorted(first, key=_signed), partitions)
    return _uniform_heterogeneous(ordered, partitions)


def _uniform_homogeneous(members: Sequence[MemberSpec], topics: Sequence[TopicId],
                         partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    count = len(members)
    total = sum(partitions[t] for t in topics)
    min_quota, remaining = divmod(total, count)
    subscribed = set(topics)
    kept: dict[str, dict[TopicId, list[int]]] = {}
    held: dict[TopicId, set[int]] = {t: set() for t in topics}
    for member in members:
        for topic, parts in member.target.items():
            if topic in subscribed:
                held[topic].update(p for p in parts if p < partitions[topic])
    # never assigned first (topic by topic, ascending), then what members give up
    unassigned: list[tuple[TopicId, int]] = [(t, p) for t in topics for p in range(partitions[t]) if p not in held[t]]
    unfilled: list[tuple[str, int]] = []
    for index, member in enumerate(members):
        quota, extra = min_quota, False
        if remaining > 0:
            quota, extra = quota + 1, True  # tentatively claims an extra slot
        mine: dict[TopicId, list[int]] = {}
        for topic in sorted(member.target, key=_signed):
            if topic not in subscribed:
                continue
            current = sorted(p for p in member.target[topic] if p < partitions[topic])
            keep = current[:quota]
            if keep:
                mine[topic] = keep
            unassigned.extend((topic, p) for p in current[quota:])
            quota -= len(keep)
        if quota > 0 and extra and count - index > remaining:
            quota, extra = quota - 1, False  # could not fill the extra slot: another member takes it
        if extra:
            remaining -= 1
        kept[member.member_id] = mine
        if quota > 0:
            unfilled.append((member.member_id, quota))
    position = 0
    for member_id, quota in unfilled:
        for topic, p in unassigned[position:position + quota]:
            kept[member_id].setdefault(topic, []).append(p)
        position += quota
    if position < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
    return {m: {t: frozenset(ps) for t, ps in parts.items()} for m, parts in kept.items()}


def _uniform_heterogeneous(members: Sequence[MemberSpec], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    index = {m.member_id: i for i, m in enumerate(members)}
    subscribers: dict[TopicId, list[int]] = {}
    for i, member in enumerate(members):
        for topic in member.topics:
            subscribers.setdefault(topic, []).append(i)
    owners = {t: [-1] * partitions[t] for t in subscribers}
    sizes = [0] * len(members)
    for member in members:
        i = index[member.member_id]
        for topic, parts in member.target.items():
            if topic in member.topics:
                for p in parts:
                    if p < partitions[topic] and owners[topic][p] == -1:
                        owners[topic][p] = i
                        sizes[i] += 1

    def order(topic: TopicId) -> tuple[float, int, tuple[int, int]]:
        return (-partitions[topic] / len(subscribers[topic]), len(subscribers[topic]), _signed(topic))

    topics = sorted(subscribers, key=order)
    for topic in topics:
        free = [p for p, owner in enumerate(owners[topic]) if owner == -1]
        if not free:
            continue
        # the least loaded subscriber takes the next one (ties: member order)
        heap = [(sizes[i], i) for i in subscribers[topic]]
        heapq.heapify(heap)
        for p in free:
            size, i = heapq.heappop(heap)
            owners[topic][p] = i
            sizes[i] = size + 1
            heapq.heappush(heap, (size + 1, i))
    _balance(topics, subscribers, owners, sizes)
    result: dict[str, Assignment] = {m.member_id: {} for m in members}
    for topic, topic_owners in owners.items():
        by_member: dict[int, list[int]] = {}
        for p, i in enumerate(topic_owners):
            by_member.setdefault(i, []).append(p)
        for i, indexes in by_member.items():
            result[members[i].member_id][topic] = frozenset(indexes)
    return result


MAX_BALANCE_PASSES = 16  # Kafka's MAX_ITERATION_COUNT


def _balance(topics: Sequence[TopicId], subscribers: Mapping[TopicId, list[int]], owners: Mapping[TopicId, list[int]],
             sizes: list[int]) -> None:
    """Move each topic's partitions from its most to its least loaded subscriber (global totals),
    highest partition first, while they differ by more than one; until a lap moves nothing."""
    shared = [t for t in topics if len(subscribers[t]) >= 2]
    for _ in range(MAX_BALANCE_PASSES):
        moved = 0
        for topic in shared:
            held: dict[int, list[int]] = {i: [] for i in subscribers[topic]}
            for p, i in enumerate(owners[topic]):
                held[i].append(p)
            while True:
                donors = [i for i in subscribers[topic] if held[i]]
                if not donors:
                    break
                most = max(donors, key=lambda i: (sizes[i], -i))
                least = min(subscribers[topic], key=lambda i: (sizes[i], i))
                if sizes[most] - sizes[least] <= 1:
                    break
                p = held[most].pop()  # its highest partition of the topic
                owners[topic][p] = least
                held[least].append(p)
                sizes[most] -= 1
                sizes[least] += 1
                moved += 1
        if not moved:
            return


def range_assignor(members: Sequence[MemberSpec], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    """Kafka's ``range`` assignor (see the module's docstring)."""
    if not members:
        return {}
    _check_topics(members, partitions)
    ordered = sorted(members, key=lambda m: (m.instance_id is None, m.instance_id or "", m.member_id))
    subscribers: dict[TopicId, int] = {}
    for member in ordered:
        for topic in member.topics:
            subscribers[topic] = subscribers.get(topic, 0) + 1
    cursor: dict[TopicId, tuple[int, int]] = {}  # topic -> (next partition, extras left)
    result: dict[str, Assignment] = {}
    for member in ordered:
        mine: Assignment = {}
        for topic in sorted(member.topics, key=_signed):
            n, k = partitions[topic], subscribers[topic]
            start, extra = cursor.get(topic, (0, n % k))
            quota = n // k + (1 if extra > 0 else 0)
            end = min(start + quota, n)
            cursor[topic] = (end, max(0, extra - 1))
            if start < end:
                mine[topic] = frozenset(range(start, end))
        result[member.member_id] = mine
    return result


ASSIGNORS: dict[str, Callable[[Sequence[MemberSpec], Mapping[TopicId, int]], dict[str, Assignment]]] = {
    "uniform": uniform, "range": range_assignor,
}
DEFAULT_ASSIGNOR = "uniform"  # the first of Kafka's group.consumer.assignors
