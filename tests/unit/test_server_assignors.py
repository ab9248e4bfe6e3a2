"""The coordinator's KIP-848 assignors against Kafka 4.1's: the cases of Kafka's own unit tests, and
properties over random groups (every subscribed partition assigned once, only to a subscriber;
balance; a balanced assignment left as it is; stickiness)."""

from __future__ import annotations

import uuid
from collections import Counter

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
