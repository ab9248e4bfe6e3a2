"""One consumer-protocol group on the coordinator's side (sans-IO), heartbeat by heartbeat, with
Kafka 4.4's rules: epochs, the revoke-before-assign handshake, fencing, leaving, static members,
sessions and rebalance timeouts, and the join validation's messages.  The groups here compute a
new target at every change (an assignment interval of 0); test_server_consumer_group_44.py has
the interval's batching and the rest of what Kafka 4.2-4.4 changed."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from groupclient.coordinator.consumer_group.group import ConsumerGroup, GroupSettings, HeartbeatError
from groupclient.error_codes import ErrorCode
from groupclient.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest as Request

E = ErrorCode
ORDERS = uuid.UUID(int=11)
TOPICS = {"orders": (ORDERS, 6)}


def group_of(**settings: Any) -> ConsumerGroup:
    return ConsumerGroup("g", GroupSettings(**{"assignment_interval_ms": 0, **settings}))


def hb(member: str, epoch: int, owned: list[int] | None = None, *, join: bool = False, instance: str | None = None,
       topics: list[str] | None = None, **fields: Any) -> Any:
    if join:
        fields.setdefault("rebalance_timeout_ms", 60000)
        topics = topics if topics is not None else ["orders"]
        owned = []
    tps = None if owned is None else ([Request.TopicPartitions(topic_id=ORDERS, partitions=owned)] if owned else [])
    return Request(version=1, group_id="g", member_id=member, member_epoch=epoch, instance_id=instance,
                   subscribed_topic_names=topics, topic_partitions=tps, **fields)


def got(answer: Any) -> list[int] | None:
    return None if answer.assignment is None else sorted(answer.assignment.get(ORDERS, ()))


def test_a_second_member_gets_partitions_only_after_the_first_gave_them_up() -> None:
    group = group_of()
    a = group.heartbeat(hb("A", 0, join=True), 0, TOPICS)
    assert (a.member_epoch, got(a)) == (2, [0, 1, 2, 3, 4, 5])  # the group started at epoch 1
    b = group.heartbeat(hb("B", 0, join=True), 10, TOPICS)
    assert (b.member_epoch, got(b)) == (3, [])  # all still A's
    a = group.heartbeat(hb("A", 2, [0, 1, 2, 3, 4, 5]), 20, TOPICS)
    assert (a.member_epoch, len(got(a) or [])) == (2, 3)  # the shrunk target at the same epoch
    kept = got(a) or []
    assert got(group.heartbeat(hb("B", 3, []), 30, TOPICS)) is None  # nothing new for B yet
    a = group.heartbeat(hb("A", 2, kept), 40, TOPICS)
    assert (a.member_epoch, got(a)) == (3, None)  # acknowledged: the new epoch, same partitions
    b = group.heartbeat(hb("B", 3, []), 50, TOPICS)
    assert sorted(got(b) or []) == sorted(set(range(6)) - set(kept))


def test_a_heartbeat_at_another_epoch_is_fenced_but_the_previous_one_with_owned_partitions_it_has_is_not() -> None:
    group = group_of()
    group.heartbeat(hb("A", 0, join=True), 0, TOPICS)
    group.heartbeat(hb("B", 0, join=True), 0, TOPICS)  # epoch 3: A must give partitions up
    kept = got(group.heartbeat(hb("A", 2, [0, 1, 2, 3, 4, 5]), 0, TOPICS)) or []
    assert group.heartbeat(hb("A", 2, kept), 0, TOPICS).member_epoch == 3
    # an answer lost on the way: A still says epoch 2, owning what it has: accepted (Kafka's rule)
    assert group.heartbeat(hb("A", 2, kept), 0, TOPICS).member_epoch == 3
    with pytest.raises(HeartbeatError) as smaller:
        group.heartbeat(hb("A", 2, [0, 1, 2, 3, 4, 5]), 0, TOPICS)  # claims what it gave up
    assert smaller.value.code == E.FENCED_MEMBER_EPOCH and "smaller member epoch (2)" in smaller.value.message
    with pytest.raises(HeartbeatError) as greater:
        group.heartbeat(hb("A", 7, kept), 0, TOPICS)
    assert greater.value.code == E.FENCED_MEMBER_EPOCH and "greater member epoch (7)" in greater.value.message


def test_an_unknown_member_and_an_invalid_join_are_refused_with_kafkas_messages() -> None:
    group = group_of()
    with pytest.raises(HeartbeatError, match="is not a member of group g") as unknown:
        group.heartbeat(hb("X", 3, [0]), 0, TOPICS)
    assert unknown.value.code == E.UNKNOWN_MEMBER_ID
    with pytest.raises(HeartbeatError, match="TopicPartitions must be empty when") as bad:
        group.heartbeat(hb("A", 0, [1], topics=["orders"], rebalance_timeout_ms=1000), 0, TOPICS)
    assert bad.value.code == E.INVALID_REQUEST
    needs = r"Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when \(re-\)joining."
    with pytest.raises(HeartbeatError, match=needs):
        group.heartbeat(hb("A", 0, [], topics=None, rebalance_timeout_ms=1000), 0, TOPICS)
    with pytest.raises(HeartbeatError, match="MemberId can't be empty"):
        group.heartbeat(hb("", 0, join=True), 0, TOPICS)


def test_leaving_frees_the_partitions_for_the_others() -> None:
    group = group_of()
    group.heartbeat(hb("A", 0, join=True), 0, TOPICS)
    group.heartbeat(hb("B", 0, join=True), 0, TOPICS)
    group.heartbeat(hb("A", 2, [0, 1, 2, 3, 4, 5]), 0, TOPICS)
    assert group.heartbeat(hb("A", -1), 0, TOPICS).member_epoch == -1
    b = group.heartbeat(hb("B", 3, []), 0, TOPICS)
    assert got(b) == [0, 1, 2, 3, 4, 5]


def test_a_static_member_back_within_its_session_gets_its_partitions_and_a_live_holder_refuses_the_id() -> None:
    group = group_of(session_timeout_ms=10000)
    group.heartbeat(hb("A", 0, join=True, instance="i-a"), 0, TOPICS)
    with pytest.raises(HeartbeatError) as held:
        group.heartbeat(hb("A2", 0, join=True, instance="i-a"), 0, TOPICS)
    assert held.value.code == E.UNRELEASED_INSTANCE_ID
    assert held.value.message == "Static member A2 with instance id i-a cannot join the group because the instance id is owned by A member."
    epoch = group.epoch
    group.heartbeat(hb("A", -2, instance="i-a"), 100, TOPICS)
    back = group.heartbeat(hb("A2", 0, join=True, instance="i-a"), 5000, TOPICS)
    assert got(back) == [0, 1, 2, 3, 4, 5] and group.epoch == epoch  # no rebalance
    assert "A" not in group.members


def test_sessions_and_rebalance_timeouts_end_in_removal() -> None:
    group = group_of(session_timeout_ms=10000)
    group.heartbeat(hb("A", 0, join=True), 0, TOPICS)
    group.heartbeat(hb("B", 0, join=True), 1000, TOPICS)
    group.heartbeat(hb("A", 2, [0, 1, 2, 3, 4, 5], rebalance_timeout_ms=3000), 2000, TOPICS)  # must give 3 up
    group.heartbeat(hb("B", 3, []), 2500, TOPICS)
    assert group.expire(4999) == []
    assert group.expire(5000) == ["A"]  # did not give them up within its rebalance timeout: fenced
    with pytest.raises(HeartbeatError) as gone:
        group.heartbeat(hb("A", 2, [0, 1, 2]), 5001, TOPICS)
    assert gone.value.code == E.UNKNOWN_MEMBER_ID
    assert group.expire(12_500) == ["B"]  # no heartbeat within the session


def refused(group: ConsumerGroup, request: Any, now: int = 0) -> tuple[ErrorCode, str | None]:
    with pytest.raises(HeartbeatError) as error:
        group.heartbeat(request, now, TOPICS)
    return error.value.code, error.value.message


def test_a_known_member_joining_again_keeps_its_place_and_gets_its_whole_assignment() -> None:
    """Kafka 4.2 (KAFKA-19233): epoch 0 with a known member id is a member joining again, not
    fenced (Kafka 4.1 fenced it unless its previous epoch was 0): it keeps its epoch and its
    partitions, is sent all of them, and the group epoch does not move."""
    group = group_of()
    assert group.heartbeat(hb("A", 0, join=True), 0, TOPICS).member_epoch == 2
    assert group.heartbeat(hb("A", 0, join=True), 0, TOPICS).member_epoch == 2
    group.heartbeat(hb("B", 0, join=True), 0, TOPICS)
    kept = got(group.heartbeat(hb("A", 2, [0, 1, 2, 3, 4, 5]), 0, TOPICS)) or []
    group.heartbeat(hb("A", 2, kept), 0, TOPICS)  # epoch 3 now
    epoch = group.epoch
    again = group.heartbeat(hb("A", 0, join=True), 0, TOPICS)
    assert (again.member_epoch, got(again), group.epoch) == (3, kept, epoch)


def test_a_static_member_that_left_stays_at_epoch_minus_two_holding_its_partitions_until_its_session_ends() -> None:
    group = group_of(session_timeout_ms=10000)
    group.heartbeat(hb("A", 0, join=True, instance="i-a"), 0, TOPICS)
    group.heartbeat(hb("A", 2, [0, 1, 2, 3, 4, 5], instance="i-a"), 4000, TOPICS)
    epoch = group.epoch
    assert group.heartbeat(hb("A", -2, instance="i-a"), 6000, TOPICS).member_epoch == -2
    assert group.members["A"].assignment.epoch == -2 and group.epoch == epoch  # still a member, no rebalance
    assert group.state == "Reconciling"
    code, message = refused(group, hb("A", 2, [0, 1, 2, 3, 4, 5], instance="i-a"), 7000)
    assert code is E.FENCED_MEMBER_EPOCH and "greater member epoch (2)" in (message or "")
    assert group.expire(13_999) == [] and group.expire(14_000) == ["A"]  # the session ran from its last heartbeat
    assert group.epoch == epoch + 1


def test_a_static_members_instance_is_checked_before_its_epoch() -> None:
    group = group_of()
    group.heartbeat(hb("A", 0, join=True, instance="i-a"), 0, TOPICS)
    assert refused(group, hb("A", 1, [], instance="i-x")) == (E.UNKNOWN_MEMBER_ID, "Instance id i-x is unknown.")
    assert refused(group, hb("Z", 1, [], instance="i-a")) == (
        E.FENCED_INSTANCE_ID, "Static member Z with instance id i-a was fenced by member A.")
    assert refused(group, hb("Z", -1, instance="i-a")) == (
        E.FENCED_INSTANCE_ID, "Static member Z with instance id i-a was fenced by member A.")


def test_a_full_group_refuses_any_member_it_does_not_know_holders_that_left_counted() -> None:
    """Kafka 4.4 (KAFKA-20601): a static member coming back is let in (Kafka 4.1 refused it)."""
    group = group_of(max_size=1)
    group.heartbeat(hb("A", 0, join=True, instance="i-a"), 0, TOPICS)
    group.heartbeat(hb("A", -2, instance="i-a"), 0, TOPICS)
    full = (E.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity of 1 members.")
    assert refused(group, hb("B", 0, join=True)) == full
    assert refused(group, hb("C", 5, [])) == full  # checked before the member is looked up
    back = group.heartbeat(hb("A2", 0, join=True, instance="i-a"), 0, TOPICS)  # the instance coming back
    assert got(back) == [0, 1, 2, 3, 4, 5] and list(group.members) == ["A2"]


def test_the_rack_and_rebalance_timeout_do_not_move_the_group_epoch_the_preferred_assignor_does() -> None:
    """Kafka 4.4 (KAFKA-20434): the assignor most members ask for changing moves the epoch (Kafka
    4.1 took it up with the next change only)."""
    group = group_of()
    group.heartbeat(hb("A", 0, join=True), 0, TOPICS)
    group.heartbeat(hb("B", 0, join=True), 0, TOPICS)
    epoch = group.epoch
    group.heartbeat(hb("A", 2, None, rack_id="r1", rebalance_timeout_ms=5), 0, TOPICS)
    assert group.epoch == epoch
    group.heartbeat(hb("A", 2, None, server_assignor="uniform"), 0, TOPICS)  # the default already
    assert group.epoch == epoch and group.members["A"].server_assignor == "uniform"
    group.heartbeat(hb("A", 2, None, server_assignor="range"), 0, TOPICS)  # the only one asked for now
    assert group.epoch == epoch + 1 and group.assignor_name == "range"
    group.heartbeat(hb("B", 3, None, server_assignor="range"), 0, TOPICS)  # still range: no move
    assert group.epoch == epoch + 1
    assert refused(group, hb("A", 2, [0, 1, 2, 3, 4, 5], server_assignor="nope")) == (
        E.UNSUPPORTED_ASSIGNOR, "ServerAssignor nope is not supported. Supported assignors: uniform, range.")
