"""One consumer-protocol group on the coordinator's side (sans-IO), heartbeat by heartbeat, with
Kafka 4.1's rules: epochs, the revoke-before-assign handshake, fencing, leaving, static members,
sessions and rebalance timeouts, and the join validation's messages."""

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
    group = ConsumerGroup("g")
    a = group.heartbeat(hb("A", 0, join=True), 0, TOPICS)
    assert (a.member_epoch, got(a)) == (1, [0, 1, 2, 3, 4, 5])
    b = group.heartbeat(hb("B", 0, join=True), 10, TOPICS)
    assert (b.member_epoch, got(b)) == (2, [])  # all still A's
    a = group.heartbeat(hb("A", 1, [0, 1, 2, 3, 4, 5]), 20, TOPICS)
    assert (a.member_epoch, len(got(a) or [])) == (1, 3)  # the shrunk target at the same epoch
    kept = got(a) or []
    assert got(group.heartbeat(hb("B", 2, []), 30, TOPICS)) is None  # nothing new for B yet
    a = group.heartbeat(hb("A", 1, kept), 40, TOPICS)
    assert (a.member_epoch, got(a)) == (2, None)  # acknowledged: the new epoch, same partitions
    b = group.heartbeat(hb("B", 2, []), 50, TOPICS)
    assert sorted(got(b) or []) == sorted(set(range(6)) - set(kept))


def test_a_heartbeat_at_another_epoch_is_fenced_but_the_previous_one_with_owned_partitions_it_has_is_not() -> None:
    group = ConsumerGroup("g")
    group.heartbeat(hb("A", 0, join=True), 0, TOPICS)
    group.heartbeat(hb("B", 0, join=True), 0, TOPICS)  # epoch 2: A must give partitions up
    kept = got(group.heartbeat(hb("A", 1, [0, 1, 2, 3, 4, 5]), 0, TOPICS)) or []
    assert group.heartbeat(hb("A", 1, kept), 0, TOPICS).member_epoch == 2
    # an answer lost on the way: A still says epoch 1, owning what it has: accepted (Kafka's rule)
    assert group.heartbeat(hb("A", 1, kept), 0, TOPICS).member_epoch == 2
    with pytest.raises(HeartbeatError) as smaller:
        group.heartbeat(hb("A", 1, [0, 1, 2, 3, 4, 5]), 0, TOPICS)  # claims what it gave up
    assert smaller.value.code == E.FENCED_MEMBER_EPOCH and "smaller member epoch (1)" in smaller.value.message
    with pytest.raises(HeartbeatError) as greater:
        group.heartbeat(hb("A", 7, kept), 0, TOPICS)
    assert greater.value.code == E.FENCED_MEMBER_EPOCH and "greater member epoch (7)" in greater.value.message


def test_an_unknown_member_and_an_invalid_join_are_refused_with_kafkas_messages() -> None:
    group = ConsumerGroup("g")
    with pytest.raises(HeartbeatError, match="is not a member of group g") as unknown:
        group.heartbeat(hb("X", 3, [0]), 0, TOPICS)
    assert unknown.value.code == E.UNKNOWN_MEMBER_ID
    with pytest.raises(HeartbeatError, match="TopicPartitions must be empty when") as bad:
        group.heartbeat(hb("A", 0, [1], topics=["orders"], rebalance_timeout_ms=1000), 0, TOPICS)
    assert bad.value.code == E.INVALID_REQUEST
    with pytest.raises(HeartbeatError, match="SubscribedTopicNames or SubscribedTopicRegex must be set"):
        group.heartbeat(hb("A", 0, [], topics=None, rebalance_timeout_ms=1000), 0, TOPICS)
    with pytest.raises(HeartbeatError, match="MemberId can't be empty"):
        group.heartbeat(hb("", 0, join=True), 0, TOPICS)


def test_leaving_frees_the_partitions_for_the_others() -> None:
    group = ConsumerGroup("g")
    group.heartbeat(hb("A", 0, join=True), 0, TOPICS)
    group.heartbeat(hb("B", 0, join=True), 0, TOPICS)
    group.heartbeat(hb("A", 1, [0, 1, 2, 3, 4, 5]), 0, TOPICS)
    assert group.heartbeat(hb("A", -1), 0, TOPICS).member_epoch == -1
    b = group.heartbeat(hb("B", 2, []), 0, TOPICS)
    assert got(b) == [0, 1, 2, 3, 4, 5]


def test_a_static_member_back_within_its_session_gets_its_partitions_and_a_live_holder_refuses_the_id() -> None:
    group = ConsumerGroup("g", GroupSettings(session_timeout_ms=10000))
    group.heartbeat(hb("A", 0, join=True, instance="i-a"), 0, TOPICS)
    with pytest.raises(HeartbeatError) as held:
        group.heartbeat(hb("A2", 0, join=True, instance="i-a"), 0, TOPICS)
    assert held.value.code == E.UNRELEASED_INSTANCE_ID and "owned by member A" in held.value.message
    epoch = group.epoch
    group.heartbeat(hb("A", -2, instance="i-a"), 100, TOPICS)
    back = group.heartbeat(hb("A2", 0, join=True, instance="i-a"), 5000, TOPICS)
    assert got(back) == [0, 1, 2, 3, 4, 5] and group.epoch == epoch  # no rebalance
    assert "A" not in group.members


def test_sessions_and_rebalance_timeouts_end_in_removal() -> None:
    group = ConsumerGroup("g", GroupSettings(session_timeout_ms=10000))
    group.heartbeat(hb("A", 0, join=True), 0, TOPICS)
    group.heartbeat(hb("B", 0, join=True), 1000, TOPICS)
    group.heartbeat(hb("A", 1, [0, 1, 2, 3, 4, 5], rebalance_timeout_ms=3000), 2000, TOPICS)  # must give 3 up
    group.heartbeat(hb("B", 2, []), 2500, TOPICS)
    assert group.expire(4999) == []
    assert group.expire(5000) == ["A"]  # did not give them up within its rebalance timeout: fenced
    with pytest.raises(HeartbeatError) as gone:
        group.heartbeat(hb("A", 1, [0, 1, 2]), 5001, TOPICS)
    assert gone.value.code == E.UNKNOWN_MEMBER_ID
    assert group.expire(12_500) == ["B"]  # no heartbeat within the session
