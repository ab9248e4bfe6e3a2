"""The coordinator's side of moving a KIP-848 member to its target (Kafka 4.1's
CurrentAssignmentBuilder): a partition goes to its new owner only after its old owner said it gave
it up, in the order Kafka 4.1.1 was measured to follow (issue 24)."""

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
    # one epoch on, as Kafka 4.1's CurrentAssignmentBuilder (memberEpoch + 1), and revoking the rest
    assert (a.epoch, a.previous_epoch, a.state, a.assigned, a.revoking) == (
        2, 1, S.UNREVOKED_PARTITIONS, parts(0, 1), parts(2))
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
