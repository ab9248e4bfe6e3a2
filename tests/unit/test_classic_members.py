"""Groups changing protocol in the coordinator (sans-IO, fake clock), as Kafka 4.1 under its default
migration policy: classic members inside a consumer group (join at once, sync what they may own,
heartbeat REBALANCE_IN_PROGRESS when they must join again, their sync and rejoin deadlines), a live
classic group upgraded by a consumer-protocol join, and a consumer group left with classic members
only going back to being a classic group."""

from __future__ import annotations

import uuid
from typing import Any

from groupclient.coordinator.group_base.classic_api import LeavingMember
from groupclient.error_codes import ErrorCode
from groupclient.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest as Request
from groupclient.protocol.consumer_protocol import Assignment, Subscription, decode_assignment, \
    encode_assignment, encode_subscription
from groupclient.structs import TopicPartition
from tests.unit.group_harness import Harness

E = ErrorCode
ORDERS = uuid.UUID(int=11)
TOPICS = {"orders": (ORDERS, 6)}
SUBSCRIBED = (("range", encode_subscription(Subscription(["orders"]))),)


def hb(member: str, epoch: int, owned: list[int] | None, join: bool = False, instance: str | None = None) -> Any:
    tps = None if owned is None else [Request.TopicPartitions(topic_id=ORDERS, partitions=owned)] if owned else []
    return Request(version=1, group_id="g", member_id=member, member_epoch=epoch, instance_id=instance,
                   rebalance_timeout_ms=10_000 if join else -1, subscribed_topic_names=["orders"] if join else None,
                   topic_partitions=[] if join else tps)


class Node:
    def __init__(self, harness: Harness | None = None) -> None:
        self.h = harness or Harness(cluster_topics=lambda: TOPICS)
        self.c = self.h.coordinator

    def beat(self, *args: Any, **kwargs: Any) -> Any:
        return self.c.consumer.heartbeat(hb(*args, **kwargs), self.h.now, TOPICS, "c", "/127.0.0.1")

    def classic_join(self, member_id: str = "", protocols: Any = SUBSCRIBED) -> Any:
        answers: list[Any] = []
        from groupclient.coordinator.group_base.classic_api import JoinRequest
        self.c.join_group(JoinRequest("g", member_id, None, "kp", "/127.0.0.1", 10_000, 5_000, "consumer",
                                      protocols), self.h.now, answers.append, TOPICS)
        return answers[0]

    def classic_member(self) -> Any:
        first = self.classic_join()
        assert first.error is E.MEMBER_ID_REQUIRED
        return self.classic_join(first.member_id)

    def sync(self, joined: Any) -> tuple[ErrorCode, list[int]]:
        synced = self.h.sync(joined.member_id, joined.generation_id).sync()
        return synced.error, sorted(tp.partition for tp in decode_assignment(synced.assignment).partitions)


def test_a_classic_member_of_a_consumer_group_gets_partitions_once_they_are_released() -> None:
    node = Node()
    node.beat("A", 0, [], join=True)
    node.beat("A", 2, [0, 1, 2, 3, 4, 5])
    joined = node.classic_member()
    assert (joined.error, joined.generation_id, joined.protocol_name, joined.leader_id, joined.members) == (
        E.NONE, 3, "range", "", ())
    kept = sorted(node.beat("A", 2, [0, 1, 2, 3, 4, 5]).assignment[ORDERS])
    assert node.sync(joined) == (E.NONE, [])  # A still holds them
    assert node.h.heartbeat(joined.member_id, 3) == "NONE"  # waiting for A
    node.beat("A", 2, kept)
    assert node.h.heartbeat(joined.member_id, 3) == "REBALANCE_IN_PROGRESS"  # free now: join again
    again = node.classic_join(joined.member_id)
    assert node.sync(again) == (E.NONE, sorted(set(range(6)) - set(kept)))
    assert node.h.heartbeat(joined.member_id, 3) == "NONE"
    assert node.h.heartbeat(joined.member_id, 2) == "ILLEGAL_GENERATION"


def test_a_classic_member_that_does_not_sync_or_rejoin_in_time_is_removed() -> None:
    node = Node()
    node.beat("A", 0, [], join=True)
    joined = node.classic_member()
    node.h.advance(5_000)  # its rebalance timeout passes without a SyncGroup
    assert node.h.heartbeat(joined.member_id, 3) == "UNKNOWN_MEMBER_ID"
    late = node.classic_member()
    node.sync(late)
    node.beat("A", node.beat("A", 2, [0, 1, 2, 3, 4, 5]).member_epoch, None)
    assert node.h.heartbeat(late.member_id, late.generation_id) in ("NONE", "REBALANCE_IN_PROGRESS")


def test_leave_group_removes_members_of_either_protocol() -> None:
    node = Node()
    node.beat("A", 0, [], join=True)
    joined = node.classic_member()
    error, results = node.c.leave_group("g", [LeavingMember("A"), LeavingMember("nobody")], node.h.now)
    assert (error, [e for _, e in results]) == (E.NONE, [E.NONE, E.UNKNOWN_MEMBER_ID])
    # only the classic member is left: the group is a classic group again, rebalancing
    assert node.c.consumer.get("g") is None and node.h.state() == "PreparingRebalance"
    # a Stable group at the epoch before the removal, rebalancing: its generation is the member's
    assert node.h.heartbeat(joined.member_id, 3) == "REBALANCE_IN_PROGRESS"


def test_a_group_turned_classic_on_a_node_that_has_seen_no_request_keeps_its_members_assignments() -> None:
    """The group moves to another node, where no request has come yet, and its last
    consumer-protocol member's session ends there: the classic group it turns into keeps what
    the classic member owns (it was stored with no partitions, so a consumer-protocol member
    that joined next was given them while the classic member still consumed them)."""
    node = Node()
    node.beat("A", 0, [], join=True)
    node.beat("A", 2, [0, 1, 2, 3, 4, 5])
    joined = node.classic_member()
    node.sync(joined)
    kept = sorted(node.beat("A", 2, [0, 1, 2, 3, 4, 5]).assignment[ORDERS])
    node.beat("A", 2, kept)
    again = node.classic_join(joined.member_id)
    error, owned = node.sync(again)
    assert error is E.NONE and owned == sorted(set(range(6)) - set(kept))
    partition = node.c.partition_for("g")
    node.c.unload_partition(partition)
    moved = Node(Harness(store=node.h.store, cluster_topics=lambda: TOPICS))
    moved.h.clock.advance(node.h.now - moved.h.now)
    moved.c.load_partition(partition, moved.h.now)
    for _ in range(60):  # A says nothing until its session ends; B heartbeats
        moved.h.advance(1_000)
        if moved.c.consumer.get("g") is None:
            break
        moved.h.heartbeat(again.member_id, again.generation_id)
    assert moved.c.consumer.get("g") is None, "A's session did not end"
    assert moved.h.state() == "PreparingRebalance"
    stored = decode_assignment(moved.c.groups["g"].members[again.member_id].assignment).partitions
    assert sorted(tp.partition for tp in stored) == owned


def test_a_consumer_protocol_join_upgrades_a_live_classic_group() -> None:
    node = Node()
    [leader] = node.h.stable_group(1)
    everything = encode_assignment(Assignment([TopicPartition("orders", p) for p in range(6)]))
    node.c.groups["g"].members[leader.member_id].assignment = everything
    node.c.groups["g"].members[leader.member_id].protocols = list(SUBSCRIBED)
    x = node.beat("X", 0, [], join=True)
    assert (x.member_epoch, dict(x.assignment or {})) == (2, {})  # the classic member holds all six
    assert "g" not in node.c.groups and node.c.consumer.get("g") is not None
    assert node.h.heartbeat(leader.member_id, 1) == "REBALANCE_IN_PROGRESS"


def test_a_live_classic_group_of_another_protocol_type_is_not_upgraded() -> None:
    node = Node()
    node.h.stable_group(1)
    node.c.groups["g"].protocol_type = "connect"
    try:
        node.beat("X", 0, [], join=True)
    except Exception as refused:
        assert getattr(refused, "code", None) is E.GROUP_ID_NOT_FOUND
        assert str(refused) == ("Cannot upgrade classic group g to consumer group because the group does not use "
                                "the consumer embedded protocol.")
    else:
        raise AssertionError("the upgrade was not refused")


def test_a_live_classic_group_whose_assignor_left_user_data_is_not_upgraded() -> None:
    """Kafka (ConsumerGroup.fromClassicGroup): an assignment carrying user data came from a custom
    assignor, whose data the consumer protocol would lose: GROUP_ID_NOT_FOUND "Cannot upgrade
    classic group g to consumer group because an unsupported custom assignor is in use. Please
    refer to the documentation or switch to a default assignor before re-attempting the upgrade.";
    the classic group stays as it was."""
    node = Node()
    [leader] = node.h.stable_group(1)
    custom = encode_assignment(Assignment([TopicPartition("orders", p) for p in range(6)], user_data=b"mine"))
    node.c.groups["g"].members[leader.member_id].assignment = custom
    node.c.groups["g"].members[leader.member_id].protocols = list(SUBSCRIBED)
    try:
        node.beat("X", 0, [], join=True)
    except Exception as refused:
        assert getattr(refused, "code", None) is E.GROUP_ID_NOT_FOUND
        assert str(refused) == (
            "Cannot upgrade classic group g to consumer group because an unsupported custom assignor is in use. "
            "Please refer to the documentation or switch to a default assignor before re-attempting the upgrade.")
    else:
        raise AssertionError("the upgrade was not refused")
    assert "g" in node.c.groups and node.c.consumer.get("g") is None
    assert node.h.heartbeat(leader.member_id, 1) == "NONE"


def test_a_classic_members_sync_after_the_target_moved_on_is_told_to_join_again() -> None:
    """Kafka (classicGroupSyncToConsumerGroup's throwIfRebalanceInProgress; against the target's
    epoch from 4.3, the group's before): a classic member whose SyncGroup comes after a newer
    target was computed is answered REBALANCE_IN_PROGRESS, not the assignment of its old epoch,
    and its next join catches it up."""
    node = Node()
    node.beat("A", 0, [], join=True)
    joined = node.classic_member()  # at epoch 3
    node.beat("B", 0, [], join=True)  # epoch 4's target, before the classic member synced
    assert node.sync(joined) == (E.REBALANCE_IN_PROGRESS, [])
    again = node.classic_join(joined.member_id)
    assert again.generation_id == 4 and node.sync(again)[0] is E.NONE


def static_join(node: Node, instance: str, member_id: str = "") -> Any:
    from groupclient.coordinator.group_base.classic_api import JoinRequest
    answers: list[Any] = []
    node.c.join_group(JoinRequest("g", member_id, instance, "kp", "/127.0.0.1", 10_000, 5_000, "consumer",
                                  SUBSCRIBED), node.h.now, answers.append, TOPICS)
    return answers[0]


def test_a_static_classic_member_comes_back_to_a_full_consumer_group() -> None:
    # Kafka 4.4's throwIfConsumerGroupIsFull: a JoinGroup whose instance id is a member's is let in
    node = Node(Harness(cluster_topics=lambda: TOPICS, group_consumer_max_size=2))
    node.beat("A", 0, [], join=True)
    first = static_join(node, "s1")
    assert first.error is E.NONE
    assert static_join(node, "s2").error is E.GROUP_MAX_SIZE_REACHED  # full
    assert node.classic_join().error is E.GROUP_MAX_SIZE_REACHED
    back = static_join(node, "s1")  # restarted: no member id, the same instance
    assert back.error is E.NONE and back.member_id != first.member_id
    assert sorted(node.c.consumer.get("g").members) == sorted(["A", back.member_id])  # type: ignore[union-attr]


def test_a_static_join_with_an_unreadable_subscription_changes_nothing() -> None:
    # Kafka discards a failed join's records: the instance's holder is not replaced
    node = Node()
    node.beat("A", 0, [], join=True)
    first = static_join(node, "s1")
    from groupclient.coordinator.group_base.classic_api import JoinRequest
    answers: list[Any] = []
    node.c.join_group(JoinRequest("g", "", "s1", "kp", "/127.0.0.1", 10_000, 5_000, "consumer",
                                  (("range", b"\xff\xff"),)), node.h.now, answers.append, TOPICS)
    assert answers[0].error is E.INCONSISTENT_GROUP_PROTOCOL
    assert sorted(node.c.consumer.get("g").members) == sorted(["A", first.member_id])  # type: ignore[union-attr]


def test_a_static_member_back_classic_while_partitions_move_turns_the_group_classic_with_a_rebalance() -> None:
    # A static consumer-protocol member A shares the group with a classic member C; before A gives
    # up what C's join moved to C, A's instance comes back as a classic member: the group turns
    # classic in that JoinGroup (tests/integration/test_classic_static_members.py has the settled
    # case, without a rebalance, on Kafka 4.4 too) and, with partitions still moving, rebalances
    node = Node()
    node.beat("A", 0, [], join=True, instance="a")
    node.beat("A", 2, [0, 1, 2, 3, 4, 5], instance="a")
    c = node.classic_member()
    assert c.generation_id == 3 and node.c.consumer.get("g") is not None
    back = static_join(node, "a")
    assert back.error is E.NONE and back.member_id not in ("", "A")
    assert node.c.consumer.get("g") is None and node.h.state() == "PreparingRebalance"
    assert node.sync(back)[0] is E.REBALANCE_IN_PROGRESS
    assert node.h.heartbeat(c.member_id, c.generation_id) == "REBALANCE_IN_PROGRESS"
