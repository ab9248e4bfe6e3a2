"""The coordinator's KIP-848 assignors against Kafka 4.1's: the cases of Kafka's own unit tests, and
properties over random groups (every subscribed partition assigned once, only to a subscriber;
balance; a balanced assignment left as it is; stickiness)."""

from __future__ import annotations

import hashlib
import heapq
import random
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupclient.coordinator.consumer_group.assignors import (
    Assignment, MemberSpec, PartitionAssignorError, range_assignor, uniform,
)

T1, T2, T3 = (uuid.UUID(int=i) for i in (1, 2, 3))


def sizes(result: dict[str, Assignment]) -> dict[str, int]:
    return {m: sum(len(p) for p in a.values()) for m, a in result.items()}


def check_valid(members: list[MemberSpec], partitions: dict[uuid.UUID, int], result: dict[str, Assignment]) -> None:
    owners: Counter[tuple[uuid.UUID, int]] = Counter()
    by_id = {m.member_id: m for m in members}
    assert set(result) == set(by_id)
    for member_id, assignment in result.items():
        for topic, parts in assignment.items():
            assert topic in by_id[member_id].topics and parts and all(0 <= p < partitions[topic] for p in parts)
            owners.update((topic, p) for p in parts)
    subscribed = {t for m in members for t in m.topics}
    assert set(owners) == {(t, p) for t in subscribed for p in range(partitions[t])}
    assert all(n == 1 for n in owners.values())


# -- Kafka 4.1's own cases ----------------------------------------------------------------------
def test_uniform_leaves_a_balanced_assignment_as_it_is() -> None:
    """UniformHomogeneousAssignmentBuilderTest (KAFKA-18688): before the fix B took 4 from C."""
    members = [MemberSpec("A", frozenset({T1}), {T1: frozenset({0, 3})}),
               MemberSpec("B", frozenset({T1}), {T1: frozenset({1})}),
               MemberSpec("C", frozenset({T1}), {T1: frozenset({2, 4})})]
    assert uniform(members, {T1: 5}) == {"A": {T1: frozenset({0, 3})}, "B": {T1: frozenset({1})},
                                         "C": {T1: frozenset({2, 4})}}


def test_range_splits_each_topic_among_its_own_subscribers_in_member_order() -> None:
    """RangeAssignorTest: A={T1,T2}, B={T3}, C={T2,T3}; T1=3, T2=3, T3=2 partitions."""
    members = [MemberSpec("A", frozenset({T1, T2})), MemberSpec("B", frozenset({T3})),
               MemberSpec("C", frozenset({T2, T3}))]
    assert range_assignor(members, {T1: 3, T2: 3, T3: 2}) == {
        "A": {T1: frozenset({0, 1, 2}), T2: frozenset({0, 1})}, "B": {T3: frozenset({0})},
        "C": {T2: frozenset({2}), T3: frozenset({1})}}


def test_range_puts_static_members_first_by_instance_id_and_co_partitions() -> None:
    members = [MemberSpec("a", frozenset({T1, T2})), MemberSpec("b", frozenset({T1, T2}), instance_id="z"),
               MemberSpec("c", frozenset({T1, T2}), instance_id="y")]
    result = range_assignor(members, {T1: 4, T2: 4})
    assert result["c"] == {T1: frozenset({0, 1}), T2: frozenset({0, 1})}  # y, then z, then a
    assert result["b"] == {T1: frozenset({2}), T2: frozenset({2})}
    assert result["a"] == {T1: frozenset({3}), T2: frozenset({3})}


@pytest.mark.parametrize("assign", [uniform, range_assignor])
def test_a_topic_the_metadata_does_not_have_is_refused_with_kafkas_message(assign: object) -> None:
    with pytest.raises(PartitionAssignorError, match="which doesn't exist in the topic metadata"):
        assign([MemberSpec("A", frozenset({T1, T2}))], {T1: 3})  # type: ignore[operator]


# -- properties ----------------------------------------------------------------------------------
@st.composite
def groups(draw: st.DrawFn, homogeneous: bool) -> tuple[list[MemberSpec], dict[uuid.UUID, int]]:
    topics = [uuid.UUID(int=i + 1) for i in range(draw(st.integers(1, 4)))]
    partitions = {t: draw(st.integers(1, 12)) for t in topics}
    count = draw(st.integers(1, 8))
    members = []
    all_topics = frozenset(topics)
    for i in range(count):
        subscribed = all_topics if homogeneous else frozenset(draw(st.sets(st.sampled_from(topics), min_size=1)))
        target = {t: frozenset(draw(st.sets(st.integers(0, partitions[t] - 1), max_size=partitions[t])))
                  for t in draw(st.sets(st.sampled_from(topics)))}
        members.append(MemberSpec(f"m{i}", subscribed, target))
    # targets of a real group never overlap: the first claim wins
    claimed: set[tuple[uuid.UUID, int]] = set()
    clean = []
    for m in members:
        target = {}
        for t, ps in m.target.items():
            mine = frozenset(p for p in ps if (t, p) not in claimed)
            claimed |= {(t, p) for p in mine}
            if mine:
                target[t] = mine
        clean.append(MemberSpec(m.member_id, m.topics, target))
    return clean, partitions


def again(members: list[MemberSpec], result: dict[str, Assignment]) -> list[MemberSpec]:
    return [MemberSpec(m.member_id, m.topics, result[m.member_id], m.instance_id) for m in members]


@settings(max_examples=200, deadline=None)
@given(groups(homogeneous=True))
def test_uniform_homogeneous_is_valid_balanced_sticky_and_stable(group: tuple[list[MemberSpec], dict[uuid.UUID, int]]) -> None:
    members, partitions = group
    result = uniform(members, partitions)
    check_valid(members, partitions, result)
    total, count = sum(partitions.values()), len(members)
    got = sizes(result)
    assert sorted(got.values()) == sorted([total // count] * (count - total % count) + [total // count + 1] * (total % count))
    for m in members:  # a member keeps what it held, up to its quota
        held = sum(len(ps) for ps in m.target.values())
        kept = sum(len(ps & result[m.member_id].get(t, frozenset())) for t, ps in m.target.items())
        assert kept == min(held, got[m.member_id])
    assert uniform(again(members, result), partitions) == result


@settings(max_examples=200, deadline=None)
@given(groups(homogeneous=False))
def test_uniform_heterogeneous_is_valid_keeps_subscribed_partitions_and_is_stable(
        group: tuple[list[MemberSpec], dict[uuid.UUID, int]]) -> None:
    members, partitions = group
    result = uniform(members, partitions)
    check_valid(members, partitions, result)
    got = sizes(result)
    for topic in partitions:
        subs = [m.member_id for m in members if topic in m.topics]
        donors = [m for m in subs if result[m].get(topic)]
        if subs and donors:  # no partition of this topic could still move to a less loaded subscriber
            assert max(got[m] for m in donors) - min(got[m] for m in subs) <= 1 or len(subs) == 1
    assert uniform(again(members, result), partitions) == result


@settings(max_examples=200, deadline=None)
@given(groups(homogeneous=False))
def test_range_is_valid_and_splits_each_topic_within_one(group: tuple[list[MemberSpec], dict[uuid.UUID, int]]) -> None:
    members, partitions = group
    result = range_assignor(members, partitions)
    check_valid(members, partitions, result)
    for topic, n in partitions.items():
        counts = [len(result[m.member_id].get(topic, ())) for m in members if topic in m.topics]
        if counts:
            assert max(counts) - min(counts) <= 1 and sum(counts) == n


# -- the optimised assignors give exactly what the straightforward ones gave ---------------------
# A frozen copy of assignors.py as it was before it was optimised (plain loops over every
# partition): the optimised module must give the same result for every input, down to the order
# of members and of each member's topics, and fail the same way.  Do not "fix" this copy.
def _ref_check_topics(members: Sequence[MemberSpec], partitions: Mapping[uuid.UUID, int]) -> None:
    for member in members:
        for topic in member.topics:
            if topic not in partitions:
                raise PartitionAssignorError(
                    f"Members are subscribed to topic {topic} which doesn't exist in the topic metadata.")


def _ref_signed(topic_id: uuid.UUID) -> tuple[int, int]:
    high, low = topic_id.int >> 64, topic_id.int & (2**64 - 1)
    return (high - 2**64 if high >= 2**63 else high, low - 2**64 if low >= 2**63 else low)


def ref_uniform(members: Sequence[MemberSpec], partitions: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
    if not members:
        return {}
    ordered = sorted(members, key=lambda m: m.member_id)
    _ref_check_topics(ordered, partitions)
    first = ordered[0].topics
    if all(m.topics == first for m in ordered):
        return _ref_uniform_homogeneous(ordered, sorted(first, key=_ref_signed), partitions)
    return _ref_uniform_heterogeneous(ordered, partitions)


def _ref_uniform_homogeneous(members: Sequence[MemberSpec], topics: Sequence[uuid.UUID],
                             partitions: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
    count = len(members)
    total = sum(partitions[t] for t in topics)
    min_quota, remaining = divmod(total, count)
    subscribed = set(topics)
    kept: dict[str, dict[uuid.UUID, list[int]]] = {}
    held: dict[uuid.UUID, set[int]] = {t: set() for t in topics}
    for member in members:
        for topic, parts in member.target.items():
            if topic in subscribed:
                held[topic].update(p for p in parts if p < partitions[topic])
    unassigned: list[tuple[uuid.UUID, int]] = [
        (t, p) for t in topics for p in range(partitions[t]) if p not in held[t]]
    unfilled: list[tuple[str, int]] = []
    for index, member in enumerate(members):
        quota, extra = min_quota, False
        if remaining > 0:
            quota, extra = quota + 1, True
        mine: dict[uuid.UUID, list[int]] = {}
        for topic in sorted(member.target, key=_ref_signed):
            if topic not in subscribed:
                continue
            current = sorted(p for p in member.target[topic] if p < partitions[topic])
            keep = current[:quota]
            if keep:
                mine[topic] = keep
            unassigned.extend((topic, p) for p in current[quota:])
            quota -= len(keep)
        if quota > 0 and extra and count - index > remaining:
            quota, extra = quota - 1, False
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


def _ref_uniform_heterogeneous(members: Sequence[MemberSpec],
                               partitions: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
    index = {m.member_id: i for i, m in enumerate(members)}
    subscribers: dict[uuid.UUID, list[int]] = {}
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

    def order(topic: uuid.UUID) -> tuple[float, int, tuple[int, int]]:
        return (-partitions[topic] / len(subscribers[topic]), len(subscribers[topic]), _ref_signed(topic))

    topics = sorted(subscribers, key=order)
    for topic in topics:
        free = [p for p, owner in enumerate(owners[topic]) if owner == -1]
        if not free:
            continue
        heap = [(sizes[i], i) for i in subscribers[topic]]
        heapq.heapify(heap)
        for p in free:
            size, i = heapq.heappop(heap)
            owners[topic][p] = i
            sizes[i] = size + 1
            heapq.heappush(heap, (size + 1, i))
    _ref_balance(topics, subscribers, owners, sizes)
    result: dict[str, Assignment] = {m.member_id: {} for m in members}
    for topic, topic_owners in owners.items():
        by_member: dict[int, list[int]] = {}
        for p, i in enumerate(topic_owners):
            by_member.setdefault(i, []).append(p)
        for i, indexes in by_member.items():
            result[members[i].member_id][topic] = frozenset(indexes)
    return result


def _ref_balance(topics: Sequence[uuid.UUID], subscribers: Mapping[uuid.UUID, list[int]],
                 owners: Mapping[uuid.UUID, list[int]], sizes: list[int]) -> None:
    shared = [t for t in topics if len(subscribers[t]) >= 2]
    for _ in range(16):
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
                p = held[most].pop()
                owners[topic][p] = least
                held[least].append(p)
                sizes[most] -= 1
                sizes[least] += 1
                moved += 1
        if not moved:
            return


def ref_range(members: Sequence[MemberSpec], partitions: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
    if not members:
        return {}
    _ref_check_topics(members, partitions)
    ordered = sorted(members, key=lambda m: (m.instance_id is None, m.instance_id or "", m.member_id))
    subscribers: dict[uuid.UUID, int] = {}
    for member in ordered:
        for topic in member.topics:
            subscribers[topic] = subscribers.get(topic, 0) + 1
    cursor: dict[uuid.UUID, tuple[int, int]] = {}
    result: dict[str, Assignment] = {}
    for member in ordered:
        mine: Assignment = {}
        for topic in sorted(member.topics, key=_ref_signed):
            n, k = partitions[topic], subscribers[topic]
            start, extra = cursor.get(topic, (0, n % k))
            quota = n // k + (1 if extra > 0 else 0)
            end = min(start + quota, n)
            cursor[topic] = (end, max(0, extra - 1))
            if start < end:
                mine[topic] = frozenset(range(start, end))
        result[member.member_id] = mine
    return result


Assign = Callable[[Sequence[MemberSpec], Mapping[uuid.UUID, int]], dict[str, Assignment]]
PAIRS: dict[str, tuple[Assign, Assign]] = {"uniform": (uniform, ref_uniform), "range": (range_assignor, ref_range)}


def outcome(assign: Assign, members: Sequence[MemberSpec], partitions: Mapping[uuid.UUID, int]) -> object:
    """The result with its order (members, each member's topics) and partitions sorted, or the error."""
    try:
        result = assign(members, partitions)
    except PartitionAssignorError as exc:
        return ("error", str(exc))
    for assignment in result.values():
        assert all(type(parts) is frozenset for parts in assignment.values())
    return [(m, [(t, sorted(ps)) for t, ps in a.items()]) for m, a in result.items()]


@st.composite
def any_groups(draw: st.DrawFn) -> tuple[list[MemberSpec], dict[uuid.UUID, int]]:
    """Anything a caller could pass with unique member ids: any topic ids (both halves' signs),
    empty or unknown subscriptions, equal subscriptions (often), targets that overlap, name
    partitions past a topic's count, topics not subscribed to or not in the metadata."""
    topics = draw(st.lists(st.uuids(), min_size=1, max_size=5, unique=True))
    unknown = uuid.UUID(int=0)
    partitions = {t: draw(st.integers(0, 24)) for t in topics}
    ids = draw(st.lists(st.text("abm0", min_size=1, max_size=3), min_size=0, max_size=10, unique=True))
    everyone = frozenset(draw(st.sets(st.sampled_from(topics), min_size=1)))
    if draw(st.integers(0, 30)) == 0:
        everyone |= {unknown}
    homogeneous = draw(st.booleans())
    copies = draw(st.booleans())  # each member with its own, equal, UUID and frozenset objects

    def own(topic: uuid.UUID) -> uuid.UUID:
        return uuid.UUID(int=topic.int) if copies else topic

    members = []
    for member_id in ids:
        subscribed = everyone if homogeneous else frozenset(draw(st.sets(st.sampled_from(topics))))
        subscribed = frozenset(map(own, subscribed)) if copies else subscribed
        target = {own(t): frozenset(draw(st.sets(st.integers(0, partitions.get(t, 3) + 2), max_size=30)))
                  for t in draw(st.sets(st.sampled_from([*topics, unknown])))}
        instance = draw(st.one_of(st.none(), st.sampled_from(["x", "y", "z"])))
        members.append(MemberSpec(member_id, subscribed, target, instance))
    if draw(st.booleans()):  # most real targets do not overlap: the first claim wins
        claimed: set[tuple[uuid.UUID, int]] = set()
        clean = []
        for m in members:
            target = {}
            for t, ps in m.target.items():
                target[t] = frozenset(p for p in ps if (t, p) not in claimed)
                claimed |= {(t, p) for p in ps}
            clean.append(MemberSpec(m.member_id, m.topics, target, m.instance_id))
        members = clean
    return members, partitions


@settings(max_examples=1000, deadline=None)
@given(any_groups(), st.sampled_from(sorted(PAIRS)))
def test_the_assignors_give_exactly_what_the_frozen_copy_gives(
        group: tuple[list[MemberSpec], dict[uuid.UUID, int]], name: str) -> None:
    members, partitions = group
    fast, reference = PAIRS[name]
    assert outcome(fast, members, partitions) == outcome(reference, members, partitions)


@settings(max_examples=300, deadline=None)
@given(groups(homogeneous=True), st.integers(0, 3), st.integers(0, 5))
def test_uniform_gives_what_the_frozen_copy_gives_as_members_come_and_go(
        group: tuple[list[MemberSpec], dict[uuid.UUID, int]], joining: int, leaving: int) -> None:
    """The shapes the benchmark times, small: a settled group that members join and leave."""
    members, partitions = group
    for round in range(2):
        settled = again(members, uniform(members, partitions))
        members = settled[leaving:] + [MemberSpec(f"n{round}.{i}", members[0].topics) for i in range(joining)]
        if members:
            assert outcome(uniform, members, partitions) == outcome(ref_uniform, members, partitions)


def seeded_groups(seed: int) -> Iterator[tuple[str, list[MemberSpec], dict[uuid.UUID, int]]]:
    """Bigger groups than hypothesis draws, like the benchmark's and like a group's life: from
    scratch, then settled groups that members join and leave, whose topics grow, with a few
    partitions held by two members or by nobody."""
    rng = random.Random(seed)
    topics = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(rng.choice([1, 3, 10]))]
    partitions = {t: rng.choice([0, 1, 7, 100, 1000, rng.randint(0, 3000)]) for t in topics}
    count = rng.choice([1, 3, 50, 400, 1500])
    homogeneous = rng.random() < 0.6
    members = [MemberSpec(f"member-{rng.randint(0, 10**6):07d}-{i}",
                          frozenset(topics) if homogeneous else frozenset(rng.sample(topics, rng.randint(1, len(topics)))),
                          instance_id=rng.choice([None, None, f"i{rng.randint(0, 9)}"])) for i in range(count)]
    yield "from scratch", members, partitions
    for assign in (uniform, range_assignor):
        settled = again(members, ref_uniform(members, partitions) if assign is uniform else ref_range(members, partitions))
        yield f"{assign.__name__}, one joins", settled + [MemberSpec("member-new", settled[0].topics)], partitions
        yield f"{assign.__name__}, some leave", rng.sample(settled, max(1, count * 3 // 4)), partitions
        grown = {t: n + rng.randint(0, 50) for t, n in partitions.items()}
        yield f"{assign.__name__}, topics grow", settled, grown
        shrunk = {t: n // 2 for t, n in partitions.items()}  # a topic deleted and made again, smaller
        yield f"{assign.__name__}, topics shrink", settled, shrunk
        messy = []
        for m in settled:
            target = {t: frozenset(p for p in ps if rng.random() < 0.9) | {rng.randint(0, 5)} for t, ps in m.target.items()}
            messy.append(MemberSpec(m.member_id, m.topics, target, m.instance_id))
        yield f"{assign.__name__}, holes and overlaps", messy, partitions


@pytest.mark.parametrize("seed", range(12))
def test_the_assignors_give_exactly_what_the_frozen_copy_gives_on_bigger_groups(seed: int) -> None:
    for shape, members, partitions in seeded_groups(seed):
        for name, (fast, reference) in PAIRS.items():
            assert outcome(fast, members, partitions) == outcome(reference, members, partitions), (shape, name)


def digest(result: Mapping[str, Assignment]) -> str:
    """benchmarks/server_assignors.py's fingerprint: SHA-256 of "member\\tmsb:lsb\\tp,p,p\\n" lines,
    members by id, topics in Kafka's Uuid order, partitions ascending, empty topics left out."""
    sha = hashlib.sha256()
    for member in sorted(result):
        for topic in sorted(result[member], key=_ref_signed):
            if result[member][topic]:
                high, low = _ref_signed(topic)
                sha.update(f"{member}\t{high}:{low}\t{','.join(map(str, sorted(result[member][topic])))}\n".encode())
    return sha.hexdigest()[:16]


# The benchmark's groups at its sizes, fingerprinted from the straightforward version's results
# (too slow to run here): (members, partitions) -> assignor -> (from scratch, after one joined).
BENCHMARK_DIGESTS = {
    (10_000, 100_000): {"uniform": ("e0250660a13ac749", "a256d85a49b214f0"),
                        "range": ("d221f98bb5217eee", "d221f98bb5217eee")},
    (2_000, 1_000_000): {"uniform": ("9c620ed4eeae7756", "77a41c286dd4bca6"),
                         "range": ("82b353920b03aae8", "da5f4559ffb684b5")},
}


@pytest.mark.parametrize("size", sorted(BENCHMARK_DIGESTS))
def test_the_benchmarks_groups_get_the_assignments_they_got_before(size: tuple[int, int]) -> None:
    count, total = size
    topics = [uuid.UUID(int=i + 1) for i in range(10)]
    partitions = {t: total // len(topics) for t in topics}
    members = [MemberSpec(f"member-{i:07d}", frozenset(topics)) for i in range(count)]
    for name, (fast, _) in PAIRS.items():
        result = fast(members, partitions)
        grown = again(members, result) + [MemberSpec("member-new", frozenset(topics))]
        assert (digest(result), digest(fast(grown, partitions))) == BENCHMARK_DIGESTS[size][name]
