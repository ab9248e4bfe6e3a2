"""A share group's membership (sans-IO, time given as ``now``) and the ``simple`` assignor, with the
rules and messages of Kafka 4.4's ``shareGroupHeartbeat``: epochs from 1, targets batched by the
assignment interval, no revocation, partitions shared only when members outnumber them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupclient.coordinator.share_group.assignor import assign
from groupclient.coordinator.share_group.group import (
    ShareAnswer, ShareGroup, ShareGroupSettings, ShareHeartbeatError, validate,
)
from groupclient.error_codes import ErrorCode as E

TOPICS = {"orders": 4, "audit": 2}
AT_ONCE = ShareGroupSettings(assignment_interval_ms=0)


def beat(g: ShareGroup, member: str, epoch: int, topics: list[str] | None = None, now: int = 0,
         partitions: dict[str, int] = TOPICS) -> ShareAnswer:
    return g.heartbeat(member, epoch, None, topics, "c", "/127.0.0.1", now, partitions)


def refused(g: ShareGroup, member: str, epoch: int, topics: list[str] | None = None) -> tuple[E, str | None]:
    with pytest.raises(ShareHeartbeatError) as error:
        beat(g, member, epoch, topics)
    return error.value.error, error.value.message


def test_the_simple_assignor_spreads_partitions_and_shares_them_only_when_members_outnumber_them() -> None:
    five = assign({"a": frozenset({"t"}), "b": frozenset({"t"})}, {"t": 5}, {})
    assert sorted(len(v) for v in five.values()) == [2, 3] and set().union(*five.values()) == {("t", p) for p in range(5)}
    three_on_one = assign({m: frozenset({"t"}) for m in "abc"}, {"t": 1}, {})
    assert three_on_one == {m: {("t", 0)} for m in "abc"}
    three_on_two = assign({m: frozenset({"t"}) for m in "abc"}, {"t": 2}, {})
    assert [len(three_on_two[m]) for m in "abc"] == [2, 1, 1]
    assert sorted(sum(p in v for v in three_on_two.values()) for p in [("t", 0), ("t", 1)]) == [2, 2]


def test_the_simple_assignor_keeps_what_members_had_and_assigns_each_topic_among_its_subscribers() -> None:
    before = assign({"a": frozenset({"t"}), "b": frozenset({"t"})}, {"t": 6}, {})
    after = assign({m: frozenset({"t"}) for m in "abc"}, {"t": 6}, before)
    assert all(after[m] <= before[m] for m in "ab") and sum(len(v) for v in after.values()) == 6
    mixed = assign({"a": frozenset({"t"}), "b": frozenset({"t", "u"})}, {"t": 2, "u": 3}, {})
    assert mixed["a"] | mixed["b"] >= {("t", 0), ("t", 1)} and {p for p in mixed["b"] if p[0] == "u"} == {
        ("u", 0), ("u", 1), ("u", 2)}


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 9), st.integers(1, 12), st.integers(0, 2**32))
def test_every_partition_has_a_member_and_none_is_shared_more_than_needed(members: int, count: int, seed: int) -> None:
    subscriptions = {f"m{i}": frozenset({"t"}) for i in range(members)}
    first = assign(subscriptions, {"t": count}, {})
    shuffled = {m: {("t", (p + seed) % count) for _, p in v} for m, v in first.items()}  # any earlier state
    for result in (first, assign(subscriptions, {"t": count}, shuffled)):
        holders = [sum(("t", p) in v for v in result.values()) for p in range(count)]
        sharing = -(-members // count)
        assert min(holders) >= 1 and max(holders) <= sharing
        assert max(len(v) for v in result.values()) - min(len(v) for v in result.values()) <= 1


def test_the_first_member_gets_epoch_2_and_every_partition() -> None:
    g = ShareGroup("g", AT_ONCE)
    assert beat(g, "a", 0, ["orders"]) == ShareAnswer("a", 2, 5000, {"orders": [0, 1, 2, 3]})
    assert beat(g, "a", 2) == ShareAnswer("a", 2, 5000, None)  # unchanged
    assert beat(g, "a", 2, ["orders"]).assignment == {"orders": [0, 1, 2, 3]}  # topics sent: answered in full


def test_a_second_member_gets_half_at_once_and_the_first_keeps_the_rest_without_revoking() -> None:
    g = ShareGroup("g", AT_ONCE)
    beat(g, "a", 0, ["orders"])
    b = beat(g, "b", 0, ["orders"])
    a = beat(g, "a", 2)
    assert (a.member_epoch, b.member_epoch) == (3, 3)
    assert a.assignment is not None and b.assignment is not None
    assert sorted(a.assignment["orders"] + b.assignment["orders"]) == [0, 1, 2, 3]


def test_targets_wait_for_the_assignment_interval() -> None:
    g = ShareGroup("g")  # 1000 ms
    assert beat(g, "a", 0, ["orders"], now=0).member_epoch == 2
    b = beat(g, "b", 0, ["orders"], now=10)
    assert (b.member_epoch, b.assignment) == (2, {})  # the target of epoch 2 has nothing for b
    assert beat(g, "b", 2, now=999).assignment is None
    late = beat(g, "b", 2, now=1000)
    assert late.member_epoch == 3 and late.assignment and len(late.assignment["orders"]) == 2


def test_epochs_are_fenced_with_kafkas_messages_and_the_previous_one_is_forgiven() -> None:
    g = ShareGroup("g", AT_ONCE)
    beat(g, "a", 0, ["orders"])
    beat(g, "b", 0, ["orders"])
    beat(g, "a", 2)  # a moves to 3; its previous is 2
    assert beat(g, "a", 2).member_epoch == 3  # a lost answer: the previous epoch is taken
    assert refused(g, "a", 4) == (E.FENCED_MEMBER_EPOCH, (
        "The share group member has a greater member epoch (4) than the one known by the group coordinator (3). "
        "The member must abandon all its partitions and rejoin."))
    assert refused(g, "a", 1) == (E.FENCED_MEMBER_EPOCH, (
        "The share group member has a smaller member epoch (1) than the one known by the group coordinator (3), and "
        "it does not match the previous member epoch (2). The member must abandon all its partitions and rejoin."))
    assert refused(g, "x", 3) == (E.UNKNOWN_MEMBER_ID, "Member x is not a member of group g.")


def test_leaving_and_a_session_ending_remove_members() -> None:
    g = ShareGroup("g", AT_ONCE)
    beat(g, "a", 0, ["orders"])
    beat(g, "b", 0, ["orders"], now=30_000)
    assert beat(g, "a", LEAVE, now=30_000) == ShareAnswer("a", -1, 0, None)
    assert refused(g, "a", -1) == (E.UNKNOWN_MEMBER_ID, "Member a is not a member of group g.")
    assert g.expire(30_000 + 44_999) == [] and g.expire(75_000) == ["b"] and g.state == "Empty"


LEAVE = -1


def test_a_full_group_refuses_a_new_member() -> None:
    g = ShareGroup("g", ShareGroupSettings(max_size=1, assignment_interval_ms=0))
    beat(g, "a", 0, ["orders"])
    assert refused(g, "b", 0, ["orders"]) == (
        E.GROUP_MAX_SIZE_REACHED, "The share group has reached its maximum capacity of 1 members.")


def test_a_topic_growing_moves_the_epoch_and_its_new_partitions_are_assigned() -> None:
    g = ShareGroup("g", AT_ONCE)
    beat(g, "a", 0, ["orders"])
    grown = beat(g, "a", 2, partitions={"orders": 6})
    assert (grown.member_epoch, grown.assignment) == (3, {"orders": [0, 1, 2, 3, 4, 5]})


@pytest.mark.parametrize("request_, message", [
    (("g", " ", 0, None, ["t"]), "MemberId can't be empty."),
    ((" ", "m", 0, None, ["t"]), "GroupId can't be empty."),
    (("g", "m", 0, " ", ["t"]), "RackId can't be empty."),
    (("g", "m", 0, None, []), "SubscribedTopicNames must be set in first request."),
    (("g", "m", 0, None, None), "SubscribedTopicNames must be set in first request."),
    (("g", "m", -2, None, None), "MemberEpoch is invalid."),
])
def test_a_malformed_heartbeat_is_refused_with_kafkas_message(request_: tuple, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ShareHeartbeatError) as error:
        validate(*request_)
    assert (error.value.error, error.value.message) == (E.INVALID_REQUEST, message)
