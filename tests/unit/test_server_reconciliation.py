"""The coordinator's side of moving a KIP-848 member to its target (Kafka 4.4's
CurrentAssignmentBuilder): a partition goes to its new owner only after its old owner said it gave
it up, in the order Kafka 4.1.1 was measured to follow (issue 24) and 4.4 keeps; each partition
carries the epoch it was assigned at (KIP-1251); a member whose subscription changed gives up what
it no longer subscribes to at once."""

from __future__ import annotations

import uuid

from groupclient.coordinator.consumer_group.reconciliation import (
    MemberAssignment, MemberAssignmentState as S, Partitions, next_assignment,
)

T = uuid.UUID(int=7)


def parts(*ps: int) -> Partitions:
    return {T: frozenset(ps)} if ps else {}


class Group:
    """Two members' assignments and who holds what, as the coordinator keeps them."""

    def __init__(self, members: dict[str, MemberAssignment]) -> None:
        self.members = members

    def held_by(self, topic: uuid.UUID, p: int) -> str | None:
        for member_id, m in self.members.items():
            if p in m.assigned.get(topic, frozenset()) or p in m.revoking.get(topic, frozenset()):
                return member_id
        return None

    def heartbeat(self, member_id: str, target_epoch: int, target: Partitions, owned: Partitions | None) -> MemberAssignment:
        self.members[member_id] = next_assignment(member_id, self.members[member_id], target_epoch, target, owned,
                                                  self.held_by)
        return self.members[member_id]


def test_a_partition_moves_only_after_its_owner_gave_it_up_in_kafkas_order() -> None:
    group = Group({"A": MemberAssignment(1, 0, S.STABLE, parts(0, 1, 2, 3, 4, 5)), "B": MemberAssignment(0, -1)})
    targets = {"A": parts(0, 1, 2), "B": parts(3, 4, 5)}  # epoch 2, after B joined
    b = group.heartbeat("B", 2, targets["B"], parts())  # B joins: nothing is free yet
    assert (b.epoch, b.state, b.assigned) == (2, S.UNRELEASED_PARTITIONS, {})
    a = group.heartbeat("A", 2, targets["A"], parts(0, 1, 2, 3, 4, 5))
    assert (a.epoch, a.state, a.assigned, a.revoking) == (1, S.UNREVOKED_PARTITIONS, parts(0, 1, 2), parts(3, 4, 5))
    assert group.heartbeat("B", 2, targets["B"], parts()).assigned == {}  # A has not given them up
    assert group.heartbeat("A", 2, targets["A"], None).state is S.UNREVOKED_PARTITIONS  # null owned: no ack
    assert group.heartbeat("A", 2, targets["A"], parts(0, 1, 3)).state is S.UNREVOKED_PARTITIONS  # still holds 3
    a = group.heartbeat("A", 2, targets["A"], parts(0, 1, 2))
    assert (a.epoch, a.previous_epoch, a.state, a.assigned, a.revoking) == (2, 1, S.STABLE, parts(0, 1, 2), {})
    b = group.heartbeat("B", 2, targets["B"], parts())
    assert (b.epoch, b.state, b.assigned) == (2, S.STABLE, parts(3, 4, 5))


def test_a_member_with_nothing_to_give_up_moves_to_the_new_epoch_at_once_and_waits_for_the_rest() -> None:
    group = Group({"A": MemberAssignment(3, 2, S.UNREVOKED_PARTITIONS, parts(0), parts(1)),
                   "B": MemberAssignment(3, 2, S.STABLE, parts(2))})
    b = group.heartbeat("B", 4, parts(1, 2), parts(2))
    assert (b.epoch, b.state, b.assigned) == (4, S.UNRELEASED_PARTITIONS, parts(2))  # 1 is still A's
    group.heartbeat("A", 4, parts(0), parts(0))
    b = group.heartbeat("B", 4, parts(1, 2), parts(2))
    assert (b.state, b.assigned) == (S.STABLE, parts(1, 2))


def test_a_stable_member_at_the_targets_epoch_is_left_as_it_is() -> None:
    current = MemberAssignment(5, 4, S.STABLE, parts(0, 1))
    assert next_assignment("A", current, 5, parts(0, 1), None, lambda t, p: None) is current


def test_a_target_that_moved_on_during_a_revocation_takes_the_rest_away_before_the_new_epoch() -> None:
    group = Group({"A": MemberAssignment(1, 0, S.UNREVOKED_PARTITIONS, parts(0, 1, 2), parts(3, 4, 5))})
    a = group.heartbeat("A", 3, parts(0, 1), parts(0, 1, 2))  # it gave 3-5 up; epoch 3 wants 2 too
    # revoking the rest at its epoch, as Kafka 4.2's CurrentAssignmentBuilder (Kafka 4.1 moved it
    # one epoch on, memberEpoch + 1, an epoch no target had)
    assert (a.epoch, a.previous_epoch, a.state, a.assigned, a.revoking) == (
        1, 1, S.UNREVOKED_PARTITIONS, parts(0, 1), parts(2))
    a = group.heartbeat("A", 3, parts(0, 1), parts(0, 1))
    assert (a.epoch, a.state, a.assigned) == (3, S.STABLE, parts(0, 1))


def test_a_member_that_owns_none_of_what_goes_is_not_asked_to_give_it_up() -> None:
    """Kafka 4.1 revokes only what the heartbeat says the member owns (ownsRevokedPartitions): a
    static member taking its predecessor's place (epoch 0, the predecessor's partitions, owning
    nothing yet) goes straight to the target's epoch with what it keeps; null owned partitions
    still mean it may own them all."""
    current = MemberAssignment(0, 0, S.STABLE, parts(0, 1, 2))
    free = next_assignment("A2", current, 4, parts(0, 1), {}, lambda t, p: None)
    assert (free.epoch, free.state, free.assigned, free.revoking) == (4, S.STABLE, parts(0, 1), {})
    asked = next_assignment("A2", current, 4, parts(0, 1), None, lambda t, p: None)
    assert (asked.epoch, asked.state, asked.revoking) == (0, S.UNREVOKED_PARTITIONS, parts(2))


def test_each_partition_keeps_the_epoch_it_was_assigned_at() -> None:
    """Kafka 4.3 (KIP-1251): what a member keeps keeps its epoch, what it receives gets the
    target's; a partition it gives up keeps its epoch until it is gone."""
    group = Group({"A": MemberAssignment(2, 1, S.STABLE, parts(0, 1, 2)), "B": MemberAssignment(0, 0)})
    a = group.heartbeat("A", 4, parts(0, 1), parts(0, 1, 2))
    assert (a.state, a.assigned_since(T, 0), a.assigned_since(T, 2)) == (S.UNREVOKED_PARTITIONS, 2, 2)
    a = group.heartbeat("A", 4, parts(0, 1, 3), parts(0, 1))
    assert (a.epoch, a.assigned, a.assigned_since(T, 1), a.assigned_since(T, 3)) == (4, parts(0, 1, 3), 2, 4)
    assert a.assigned_since(T, 2) is None  # gone
    b = group.heartbeat("B", 5, parts(2), parts())
    assert (b.epoch, b.assigned_since(T, 2)) == (5, 5)


def test_a_member_that_drops_a_topic_gives_its_partitions_up_without_waiting_for_a_new_target() -> None:
    """Kafka 4.2: the target still gives the member topic T (computed before it unsubscribed), but
    what it holds of T is to be revoked now, at its epoch."""
    other = uuid.UUID(int=8)
    current = MemberAssignment(3, 2, S.STABLE, {T: frozenset({0, 1}), other: frozenset({0})})
    target = {T: frozenset({0, 1}), other: frozenset({0})}
    a = next_assignment("A", current, 3, target, {T: frozenset({0, 1}), other: frozenset({0})},
                        lambda t, p: None, subscribed=frozenset({other}), subscription_changed=True)
    assert (a.epoch, a.state, a.assigned, a.revoking) == (3, S.UNREVOKED_PARTITIONS, {other: frozenset({0})},
                                                           {T: frozenset({0, 1})})
    a = next_assignment("A", a, 3, target, {other: frozenset({0})}, lambda t, p: None, subscribed=frozenset({other}))
    assert (a.epoch, a.state, a.assigned, a.revoking) == (3, S.STABLE, {other: frozenset({0})}, {})


def test_a_partition_given_back_while_it_was_being_given_up_is_new_at_the_targets_epoch() -> None:
    """Kafka 4.3: A held 2 since epoch 2; epoch 4's target takes it away, epoch 5's gives it back
    before A acknowledged: once A has let it go, it is assigned again at epoch 5 (a commit of it at
    epoch 3 is then refused), not kept at its old epoch."""
    a = MemberAssignment(3, 3, S.UNREVOKED_PARTITIONS, parts(0), parts(2), {(T, 0): 2, (T, 2): 2})
    a = next_assignment("A", a, 5, parts(0, 2), parts(0), lambda t, p: "A" if p == 2 else None)
    assert (a.epoch, a.state, a.assigned, a.assigned_since(T, 0), a.assigned_since(T, 2)) == (
        5, S.STABLE, parts(0, 2), 2, 5)
