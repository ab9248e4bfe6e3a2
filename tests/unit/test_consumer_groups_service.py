"""The consumer-protocol groups inside the coordinator (sans-IO, on the fake clock): members'
sessions and rebalance timeouts as timers of the node, one group-id namespace with the classic
groups, the groups moving with their offsets partition, patterns and topic metadata moving the
group epoch, and who may commit and fetch offsets."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from groupclient.coordinator.consumer_group.errors import HeartbeatError
from groupclient.coordinator.consumer_group.group import Answer
from groupclient.coordinator.group.coordinator import GroupCoordinator
from groupclient.coordinator.group.offsets import OffsetToCommit, commit_offsets, fetch_offsets
from groupclient.error_codes import ErrorCode
from groupclient.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest as Request
from tests.unit.group_harness import Harness

E = ErrorCode
ORDERS = uuid.UUID(int=11)
SESSION = 45_000


def topics(**counts: int) -> dict[str, tuple[uuid.UUID, int]]:
    return {name: (uuid.UUID(int=sum(map(ord, name))), n) for name, n in counts.items()}


TOPICS = {"orders": (ORDERS, 6)}


def hb(member: str, epoch: int, owned: list[int] | None = None, *, join: bool = False, group: str = "g",
       names: list[str] | None = None, regex: str | None = None, rebalance: int = 60_000, **fields: Any) -> Any:
    if join:
        fields["rebalance_timeout_ms"] = rebalance
        names = names if names is not None or regex is not None else ["orders"]
        owned = []
    else:
        fields.setdefault("rebalance_timeout_ms", -1)
    tps = None if owned is None else ([Request.TopicPartitions(topic_id=ORDERS, partitions=owned)] if owned else [])
    return Request(version=1, group_id=group, member_id=member, member_epoch=epoch, subscribed_topic_names=names,
                   subscribed_topic_regex=regex, topic_partitions=tps, **fields)


class Node:
    """One coordinator node's consumer groups, driven on the harness's fake clock."""

    def __init__(self, harness: Harness | None = None) -> None:
        self.h = harness or Harness()

    @property
    def coordinator(self) -> GroupCoordinator:
        return self.h.coordinator

    def send(self, request: Any, cluster_topics: Any = None) -> Answer:
        return self.coordinator.consumer.heartbeat(request, self.h.now, cluster_topics or TOPICS, "c", "/127.0.0.1")

    def refused(self, request: Any, cluster_topics: Any = None) -> tuple[ErrorCode, str | None]:
        with pytest.raises(HeartbeatError) as error:
            self.send(request, cluster_topics)
        return error.value.code, error.value.message


def owned(answer: Answer, topic: uuid.UUID = ORDERS) -> list[int] | None:
    return None if answer.assignment is None else sorted(answer.assignment.get(topic, ()))


def test_a_member_that_stops_heartbeating_is_removed_when_its_session_ends_and_its_partitions_move() -> None:
    node = Node()
    node.send(hb("A", 0, join=True))
    node.send(hb("B", 0, join=True))
    node.h.advance(SESSION - 1)
    node.send(hb("B", 3, []))  # B lives on; A says nothing
    node.h.advance(1)
    assert set(node.coordinator.consumer.get("g").members) == {"B"}  # type: ignore[union-attr]
    assert owned(node.send(hb("B", 3, []))) == [0, 1, 2, 3, 4, 5]
    assert node.refused(hb("A", 2, [0, 1, 2]))[0] is E.UNKNOWN_MEMBER_ID


def test_a_member_that_does_not_give_partitions_up_within_its_rebalance_timeout_is_removed() -> None:
    node = Node()
    node.send(hb("A", 0, join=True, rebalance=3000))
    node.send(hb("A", 2, [0, 1, 2, 3, 4, 5]))
    node.send(hb("B", 0, join=True))
    node.send(hb("A", 2, [0, 1, 2, 3, 4, 5]))  # told to give three up: the timeout starts
    for _ in range(5):  # keeps heartbeating, never lets go
        node.h.advance(500)
        node.send(hb("A", 2, [0, 1, 2, 3, 4, 5]))
    node.h.advance(500)
    assert node.refused(hb("A", 2, [0, 1, 2, 3, 4, 5]))[0] is E.UNKNOWN_MEMBER_ID
    assert owned(node.send(hb("B", 3, []))) == [0, 1, 2, 3, 4, 5]


def test_a_heartbeat_moves_the_deadline_so_a_live_member_is_never_expired() -> None:
    node = Node()
    node.send(hb("A", 0, join=True))
    for _ in range(10):
        node.h.advance(SESSION // 2)
        node.send(hb("A", 2, [0, 1, 2, 3, 4, 5]))
    assert "A" in node.coordinator.consumer.get("g").members  # type: ignore[union-attr]


def test_group_ids_are_one_namespace_with_the_classic_groups() -> None:
    node = Node()
    node.h.stable_group(1, group="classic")
    code, message = node.refused(hb("A", 3, [], group="classic"))  # not a join: no upgrade
    assert (code, message) == (E.GROUP_ID_NOT_FOUND, "Group classic is not a consumer group.")
    code, message = node.refused(hb("A", 0, join=True, group="classic"))  # its members' metadata is no subscription
    assert (code, message) == (E.GROUP_ID_NOT_FOUND, "Cannot upgrade classic group classic to consumer group because "
                                                     "the embedded consumer protocol is malformed.")
    node.send(hb("A", 0, join=True, group="g"))
    assert node.h.join(group="g", protocol_type="connect").join().error is E.INCONSISTENT_GROUP_PROTOCOL
    assert node.h.heartbeat("m", 1, group="g") == "UNKNOWN_MEMBER_ID"


def test_an_empty_group_of_one_kind_becomes_the_other_kind_and_keeps_its_offsets() -> None:
    node = Node()
    commit_offsets(node.coordinator, "g", -1, "", None, [OffsetToCommit("orders", 0, 42)], 0, node.h.now)
    assert node.coordinator.groups["g"].state.value == "Empty"  # a classic group with offsets only
    node.send(hb("A", 0, join=True))
    assert "g" not in node.coordinator.groups and node.coordinator.consumer.get("g") is not None
    node.send(hb("A", -1))  # leaves: the consumer group is Empty
    node.h.join_new(group="g")  # a classic member takes the id
    assert node.h.state("g") == "PreparingRebalance" and node.coordinator.consumer.get("g") is None
    assert fetch_offsets(node.coordinator, "g", [("orders", 0)])[1][("orders", 0)].offset == 42  # type: ignore[union-attr]


def test_the_groups_move_with_their_offsets_partition_and_their_deadlines_start_again() -> None:
    node = Node()
    node.send(hb("A", 0, join=True))
    partition = node.coordinator.partition_for("g")
    node.h.advance(SESSION - 1000)
    node.coordinator.unload_partition(partition)
    assert node.coordinator.consumer.get("g") is None
    assert node.refused(hb("A", 2, [0, 1, 2, 3, 4, 5]))[0] is E.NOT_COORDINATOR
    node.h.advance(10_000)  # the old deadline passes while nobody serves the group: no expiry
    node.coordinator.load_partition(partition, node.h.now)
    node.h.advance(SESSION - 1)
    answer = node.send(hb("A", 2, [0, 1, 2, 3, 4, 5]))
    assert answer.member_epoch == 2  # the same member, at the epoch it had


def test_a_pattern_is_resolved_off_the_heartbeat_and_again_for_a_new_topic_at_most_every_ten_seconds() -> None:
    node = Node()
    first = topics(**{"orders-eu": 2})
    a = node.send(hb("A", 0, join=True, regex="orders-.*"), first)
    assert (a.member_epoch, a.assignment) == (1, {})  # not resolved yet: nothing to assign
    node.h.advance(0)  # the resolution runs (Kafka's background executor): the epoch moves
    a = node.send(hb("A", 1, []), first)
    assert a.member_epoch == 2 and sum(len(p) for p in (a.assignment or {}).values()) == 2
    owned_eu = list(a.assignment[first["orders-eu"][0]])  # type: ignore[index]
    both = topics(**{"orders-eu": 2, "orders-us": 3, "other": 1})
    node.h.advance(5_000)
    a = node.send(hb("A", 2, owned_eu), both)
    node.h.advance(0)
    assert node.send(hb("A", 2, owned_eu), both).member_epoch == 2  # within 10 s of the last resolution
    node.h.advance(5_000)
    node.send(hb("A", 2, owned_eu), both)
    node.h.advance(0)
    a = node.send(hb("A", 2, owned_eu), both)
    assert a.member_epoch == 3  # the new topic moved the group epoch
    assert sorted(len(p) for p in (a.assignment or {}).values()) == [2, 3]


def test_an_invalid_pattern_is_refused_with_invalid_regular_expression() -> None:
    code, _ = Node().refused(hb("A", 0, join=True, regex="orders-(["))
    assert code is E.INVALID_REGULAR_EXPRESSION


def test_more_partitions_or_a_re_created_topic_move_the_group_epoch() -> None:
    node = Node()
    a = node.send(hb("A", 0, join=True))
    grown = {"orders": (ORDERS, 8)}
    a = node.send(hb("A", 2, [0, 1, 2, 3, 4, 5]), grown)
    assert (a.member_epoch, owned(a)) == (3, list(range(8)))
    new_id = uuid.UUID(int=12)
    recreated = {"orders": (new_id, 8)}
    a = node.send(hb("A", 3, list(range(8))), recreated)
    assert (a.member_epoch, a.assignment) == (3, {})  # first give up the old topic's partitions
    a = node.send(hb("A", 3, []), recreated)
    assert (a.member_epoch, owned(a, new_id)) == (4, list(range(8)))  # then the new topic's


@pytest.mark.parametrize("member, epoch, version, expected", [
    ("A", 2, 9, E.NONE),
    ("A", 0, 9, E.STALE_MEMBER_EPOCH),  # older than the partition's assignment epoch (2)
    ("A", 1, 9, E.STALE_MEMBER_EPOCH),
    ("A", 3, 9, E.STALE_MEMBER_EPOCH),  # newer than the member's
    ("nobody", 2, 9, E.UNKNOWN_MEMBER_ID),
    ("A", 2, 8, E.UNSUPPORTED_VERSION),
    ("", -1, 9, E.UNKNOWN_MEMBER_ID),  # the group has members: no admin commit
])
def test_who_may_commit_a_consumer_groups_offsets(member: str, epoch: int, version: int, expected: ErrorCode) -> None:
    node = Node()
    node.send(hb("A", 0, join=True))
    codes = commit_offsets(node.coordinator, "g", epoch, member, None,
                           [OffsetToCommit("orders", 0, 5, topic_id=ORDERS)], 0, node.h.now, version)
    assert codes == {("orders", 0): expected}


def test_who_may_fetch_a_consumer_groups_offsets() -> None:
    node = Node()
    node.send(hb("A", 0, join=True))
    fetch = fetch_offsets
    assert fetch(node.coordinator, "g", None, "A", 2)[0] is E.NONE
    assert fetch(node.coordinator, "g", None, None, -1)[0] is E.NONE  # an admin tool
    assert fetch(node.coordinator, "g", None, "A", 1)[0] is E.STALE_MEMBER_EPOCH  # the exact epoch only
    assert fetch(node.coordinator, "g", None, "B", 2)[0] is E.UNKNOWN_MEMBER_ID
    assert fetch(node.coordinator, "g", None, "", -1)[0] is E.UNKNOWN_MEMBER_ID  # only null skips the check


def test_a_static_member_that_left_is_still_a_member_for_commits() -> None:
    node = Node()
    node.send(hb("A", 0, join=True, instance_id="i-a"))
    node.send(hb("A", -2, instance_id="i-a"))
    commit = [OffsetToCommit("orders", 0, 5)]
    assert commit_offsets(node.coordinator, "g", 2, "A", None, commit, 0, node.h.now) == {
        ("orders", 0): E.STALE_MEMBER_EPOCH}  # it is at epoch -2 now
    assert commit_offsets(node.coordinator, "g", -1, "", None, commit, 0, node.h.now) == {
        ("orders", 0): E.UNKNOWN_MEMBER_ID}  # the group is not empty


def test_a_commit_with_a_member_epoch_to_a_group_that_is_not_there() -> None:
    node = Node()
    commit = [OffsetToCommit("orders", 0, 5)]
    assert commit_offsets(node.coordinator, "nope", 3, "A", None, commit, 0, node.h.now, 9) == {
        ("orders", 0): E.GROUP_ID_NOT_FOUND}
    assert commit_offsets(node.coordinator, "nope", 3, "A", None, commit, 0, node.h.now, 8) == {
        ("orders", 0): E.ILLEGAL_GENERATION}


def test_an_empty_consumer_group_takes_admin_commits() -> None:
    node = Node()
    node.send(hb("A", 0, join=True))
    node.send(hb("A", -1))
    codes = commit_offsets(node.coordinator, "g", -1, "", None, [OffsetToCommit("orders", 0, 5)], 0, node.h.now)
    assert codes == {("orders", 0): E.NONE}


def test_delete_groups_takes_an_empty_consumer_group_and_its_offsets_and_refuses_a_live_one() -> None:
    from groupclient.coordinator.group.retention import delete_groups

    node = Node()
    node.send(hb("A", 0, join=True))
    commit_offsets(node.coordinator, "g", 2, "A", None, [OffsetToCommit("orders", 0, 7)], 0, node.h.now)
    assert delete_groups(node.coordinator, ["g", "nope"]) == {"g": E.NON_EMPTY_GROUP, "nope": E.GROUP_ID_NOT_FOUND}
    node.send(hb("A", -1))
    assert delete_groups(node.coordinator, ["g"]) == {"g": E.NONE}
    assert node.coordinator.consumer.get("g") is None
    assert fetch_offsets(node.coordinator, "g", [("orders", 0)])[1] == {("orders", 0): None}
