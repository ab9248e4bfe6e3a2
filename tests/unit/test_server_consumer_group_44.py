"""What Kafka 4.2-4.4 changed in a consumer-protocol group on the coordinator's side (sans-IO, on
given times): a new target at most once per assignment interval (KIP-1263), an empty group's
target catching up with its epoch (KAFKA-20442), commits at an older member epoch fenced partition
by partition (KIP-1251), a dropped pattern moving the epoch.  Each test's docstring says what
Kafka 4.4.0 does (its ``GroupMetadataManager``, ``CurrentAssignmentBuilder`` and
``ConsumerGroup.validateOffsetCommit``); docs/coordinator.md tables the differences from 4.1."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from groupclient.coordinator.config import CoordinatorConfig
from groupclient.coordinator.consumer_group.group import ConsumerGroup, GroupSettings
from groupclient.coordinator.consumer_group.offset_rules import offset_commit_error, offset_fetch_error
from groupclient.coordinator.consumer_group.records import group_record, member_record, rebuild
from groupclient.error_codes import ErrorCode
from groupclient.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest as Request

E = ErrorCode
ORDERS = uuid.UUID(int=11)
TOPICS = {"orders": (ORDERS, 6)}
ALL = [0, 1, 2, 3, 4, 5]


def hb(member: str, epoch: int, owned: list[int] | None = None, *, join: bool = False, instance: str | None = None,
       **fields: Any) -> Any:
    if join:
        fields.setdefault("rebalance_timeout_ms", 60000)
        fields.setdefault("subscribed_topic_names", ["orders"])
        owned = []
    tps = None if owned is None else ([Request.TopicPartitions(topic_id=ORDERS, partitions=owned)] if owned else [])
    return Request(version=1, group_id="g", member_id=member, member_epoch=epoch, instance_id=instance,
                   topic_partitions=tps, **fields)


def got(answer: Any) -> list[int] | None:
    return None if answer.assignment is None else sorted(answer.assignment.get(ORDERS, ()))


def test_a_new_target_waits_for_a_heartbeat_an_interval_after_the_last_one() -> None:
    """Kafka 4.4 at its default interval (1 s): A's join computes the first target at once (epoch
    2). B joins 100 ms later: the group epoch moves to 3 but the target stays at 2, so B is told
    epoch 2 and nothing, and the group is Assigning; A's heartbeats within the second change
    nothing.  The first heartbeat a second after the last computation computes epoch 3's target."""
    group = ConsumerGroup("g")
    assert group.settings.assignment_interval_ms == 1000 == CoordinatorConfig().group_consumer_assignment_interval_ms
    a = group.heartbeat(hb("A", 0, join=True), 0, TOPICS)
    assert (a.member_epoch, got(a)) == (2, ALL)
    b = group.heartbeat(hb("B", 0, join=True), 100, TOPICS)
    assert (b.member_epoch, got(b), group.epoch, group.assignment_epoch, group.state) == (2, [], 3, 2, "Assigning")
    a = group.heartbeat(hb("A", 2, ALL), 999, TOPICS)
    assert (a.member_epoch, a.assignment, group.assignment_epoch) == (2, None, 2)
    a = group.heartbeat(hb("A", 2, ALL), 1000, TOPICS)
    assert (a.member_epoch, len(got(a) or []), group.assignment_epoch, group.state) == (2, 3, 3, "Reconciling")


def test_an_interval_of_zero_computes_a_target_at_every_change() -> None:
    group = ConsumerGroup("g", GroupSettings(assignment_interval_ms=0))
    group.heartbeat(hb("A", 0, join=True), 0, TOPICS)
    group.heartbeat(hb("B", 0, join=True), 0, TOPICS)
    assert (group.epoch, group.assignment_epoch, group.state) == (3, 3, "Reconciling")


def test_the_last_member_leaving_brings_the_target_to_the_group_epoch_and_the_next_join_is_served_at_once() -> None:
    """Kafka 4.4 (KAFKA-20442): an empty group's target is at its epoch (Kafka 4.1 left it one
    behind), and the next member's target is computed at once, whenever the last one was."""
    group = ConsumerGroup("g")
    group.heartbeat(hb("A", 0, join=True), 0, TOPICS)
    group.heartbeat(hb("A", -1), 10, TOPICS)
    assert (group.epoch, group.assignment_epoch, group.state) == (3, 3, "Empty")
    b = group.heartbeat(hb("B", 0, join=True), 20, TOPICS)
    assert (b.member_epoch, got(b)) == (4, ALL)


def test_a_member_that_drops_its_pattern_moves_the_group_epoch_at_once() -> None:
    """Kafka 4.2: a pattern changed to none ("") moves the epoch (Kafka 4.1 waited for the next
    resolution); a new pattern does not until it is resolved."""
    group = ConsumerGroup("g", GroupSettings(assignment_interval_ms=0))
    group.heartbeat(hb("A", 0, join=True), 0, TOPICS)
    epoch = group.epoch
    group.heartbeat(hb("A", 2, None, subscribed_topic_regex="ord.*"), 0, TOPICS)
    assert group.epoch == epoch  # not resolved yet
    group.heartbeat(hb("A", 2, None, subscribed_topic_regex=""), 0, TOPICS)
    assert group.epoch == epoch + 1


def two_members_one_partition_moved() -> ConsumerGroup:
    """A at epoch 3 keeps 3 partitions assigned at epoch 2 (at once, interval 0); B at epoch 3
    holds the other three, assigned at epoch 3."""
    group = ConsumerGroup("g", GroupSettings(assignment_interval_ms=0))
    group.heartbeat(hb("A", 0, join=True), 0, TOPICS)
    group.heartbeat(hb("B", 0, join=True), 0, TOPICS)
    kept = got(group.heartbeat(hb("A", 2, ALL), 0, TOPICS)) or []
    group.heartbeat(hb("A", 2, kept), 0, TOPICS)
    group.heartbeat(hb("B", 3, []), 0, TOPICS)
    return group


def test_a_commit_at_an_older_epoch_is_taken_for_partitions_assigned_by_then_and_fenced_for_the_others() -> None:
    """Kafka 4.3 (KIP-1251): the member's own epoch is taken for any partition; a newer one never;
    an older one for partitions it holds (or gives up) that were assigned to it at or before that
    epoch — any other partition fails the whole commit with STALE_MEMBER_EPOCH.  Kafka 4.1 took
    the exact epoch only.  A fetch still needs the exact epoch."""
    group = two_members_one_partition_moved()
    a, b = group.members["A"], group.members["B"]
    kept = sorted(a.assignment.assigned[ORDERS])
    given = sorted(b.assignment.assigned[ORDERS])
    assert (a.assignment.epoch, a.assignment.assigned_since(ORDERS, kept[0])) == (3, 2)
    assert (b.assignment.epoch, b.assignment.assigned_since(ORDERS, given[0])) == (3, 3)

    def commit(member: str, epoch: int, *partitions: int) -> ErrorCode:
        return offset_commit_error(group, member, epoch, 9, [(ORDERS, p) for p in partitions])

    assert commit("A", 3, *kept) is E.NONE
    assert commit("A", 2, *kept) is E.NONE  # sent at epoch 2, arriving after A moved to 3
    assert commit("A", 1, kept[0]) is E.STALE_MEMBER_EPOCH  # before it had the partition
    assert commit("A", 2, kept[0], given[0]) is E.STALE_MEMBER_EPOCH  # one partition is not A's: all fail
    assert commit("B", 2, given[0]) is E.STALE_MEMBER_EPOCH  # B was given it at epoch 3
    assert commit("A", 4, *kept) is E.STALE_MEMBER_EPOCH  # newer than the member's
    assert offset_fetch_error(group, "A", 2) is E.STALE_MEMBER_EPOCH
    assert offset_fetch_error(group, "A", 3) is E.NONE


def test_a_partition_being_given_up_takes_commits_at_the_epoch_it_was_assigned_at() -> None:
    """Kafka 4.3: a partition pending revocation counts at its assignment epoch too, so the
    member's last commit before it lets the partition go is taken."""
    group = ConsumerGroup("g", GroupSettings(assignment_interval_ms=0))
    group.heartbeat(hb("A", 0, join=True), 0, TOPICS)
    group.heartbeat(hb("B", 0, join=True), 0, TOPICS)
    group.heartbeat(hb("A", 2, ALL), 0, TOPICS)
    going = sorted(group.members["A"].assignment.revoking[ORDERS])
    assert offset_commit_error(group, "A", 2, 9, [(ORDERS, p) for p in going]) is E.NONE


def test_a_static_member_that_left_has_its_commits_fenced_and_comes_back_holding_from_epoch_zero() -> None:
    """Kafka 4.3: leaving with epoch -2 resets its partitions' assignment epochs to 0; a commit
    under its id is newer than -2 and fenced; the instance back under a new id holds them from 0."""
    group = ConsumerGroup("g", GroupSettings(assignment_interval_ms=0))
    group.heartbeat(hb("A", 0, join=True, instance="i-a"), 0, TOPICS)
    group.heartbeat(hb("A", -2, instance="i-a"), 10, TOPICS)
    assert offset_commit_error(group, "A", 2, 9, [(ORDERS, 0)]) is E.STALE_MEMBER_EPOCH
    group.heartbeat(hb("A2", 0, join=True, instance="i-a"), 20, TOPICS)
    back = group.members["A2"].assignment
    assert {back.assigned_since(ORDERS, p) for p in ALL} == {0}


def test_the_assignment_epochs_survive_the_journal() -> None:
    group = two_members_one_partition_moved()
    again = rebuild(group_record(group), [member_record(group, m) for m in group.members.values()])
    for member_id in ("A", "B"):
        assert again.members[member_id].assignment == group.members[member_id].assignment
    older = member_record(group, group.members["A"])
    del older["since"]  # a record written before the epochs were kept: each counts at the member's epoch
    loaded = rebuild(group_record(group), [older]).members["A"].assignment
    assert {loaded.assigned_since(ORDERS, p) for p in loaded.assigned[ORDERS]} == {3}


@pytest.mark.parametrize("bounds, message", [
    ({"group_consumer_assignment_interval_ms": -1}, "0 <= group_consumer_min_assignment_interval_ms (0) <= "
                                                    "group_consumer_assignment_interval_ms (-1)"),
    ({"group_consumer_assignment_interval_ms": 20000}, "<= group_consumer_max_assignment_interval_ms (15000)"),
    ({"group_consumer_min_assignment_interval_ms": 2000}, "(2000) <= group_consumer_assignment_interval_ms (1000)"),
])
def test_the_assignment_interval_is_checked_against_its_bounds(bounds: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError) as refused:
        CoordinatorConfig(**bounds)  # type: ignore[arg-type]
    assert message in str(refused.value)


def test_a_rebuilt_group_keeps_the_assignor_its_members_ask_for_without_an_epoch_move() -> None:
    """The assignor most members ask for is counted again on loading, so the members' first
    heartbeats after a restart do not take it for a change (KAFKA-20434's rule)."""
    group = ConsumerGroup("g", GroupSettings(assignment_interval_ms=0))
    group.heartbeat(hb("A", 0, join=True, server_assignor="range"), 0, TOPICS)
    again = rebuild(group_record(group), [member_record(group, m) for m in group.members.values()],
                    GroupSettings(assignment_interval_ms=0))
    epoch = again.epoch
    again.heartbeat(hb("A", 2, ALL), 10, TOPICS)
    assert (again.epoch, again.assignor_name) == (epoch, "range")


def test_more_to_give_up_at_the_same_epoch_gets_the_whole_rebalance_timeout_again() -> None:
    """Kafka 4.2+: A acknowledges its revocation after the target moved on and is told to give up
    more, still at its epoch; Kafka schedules the rebalance timeout anew whenever the member
    changed, so A has the whole timeout again from then, not what was left of the first."""
    group = ConsumerGroup("g", GroupSettings(assignment_interval_ms=0, session_timeout_ms=200_000))
    group.heartbeat(hb("A", 0, join=True), 0, TOPICS)
    group.heartbeat(hb("B", 0, join=True), 0, TOPICS)
    group.heartbeat(hb("A", 2, ALL), 0, TOPICS)  # told to give three up by 60 s
    assert group.members["A"].revoke_by == 60_000
    group.heartbeat(hb("C", 0, join=True), 50_000, TOPICS)  # epoch 4: A is to keep two
    kept = sorted(group.members["A"].assignment.assigned[ORDERS])
    group.heartbeat(hb("A", 2, kept), 50_000, TOPICS)
    a = group.members["A"]
    assert (a.assignment.epoch, a.assignment.state.value, a.revoke_by) == (2, "unrevoked_partitions", 110_000)
    assert group.expire(100_000) == []
