"""How a member of a consumer-protocol group moves from its current assignment to its target, on the
coordinator's side (Kafka 4.4's ``CurrentAssignmentBuilder``), as a pure function: no clock, no
I/O; the caller says who holds which partition.

A member never receives a partition before its previous owner has acknowledged giving it up:

- a new target first takes away what the member must give up (UNREVOKED_PARTITIONS): the member
  keeps what it keeps, stays at its epoch, and is told only that;
- a heartbeat whose owned partitions no longer hold any of those moves it on towards the target
  (a heartbeat that states no owned partitions, null, acknowledges nothing): to the target's
  epoch, or, if the target moved on meanwhile and takes more away, to that revocation, still at
  its epoch (Kafka 4.1 moved it one epoch on at each acknowledgement; Kafka 4.2 does not);
- it then receives what of its target nobody else holds any more; what another member still holds
  comes with a later heartbeat (UNRELEASED_PARTITIONS) until it has everything (STABLE).

A member whose subscription changed gives up the partitions of topics it no longer subscribes to
at once, without waiting for a new target (Kafka 4.2): a target computed before the change counts
as empty for those topics.

Each partition a member holds carries the epoch it was assigned at (``since``, Kafka 4.3's
KIP-1251): a partition it keeps keeps its epoch, one it receives gets the target's.  A commit at an
older member epoch is accepted for partitions assigned at or before that epoch (offset_rules.py).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

TopicId = uuid.UUID
Partitions = Mapping[TopicId, frozenset[int]]
Since = Mapping[tuple[TopicId, int], int]  # a held partition's assignment epoch
NONE: Partitions = {}


class MemberAssignmentState(enum.Enum):
    STABLE = "stable"  # holds its whole target, at the target's epoch
    UNREVOKED_PARTITIONS = "unrevoked_partitions"  # must give partitions up first
    UNRELEASED_PARTITIONS = "unreleased_partitions"  # waits for partitions others still hold


@dataclass(frozen=True)
class MemberAssignment:
    """A member's side of the group, as the coordinator keeps it."""

    epoch: int
    previous_epoch: int
    state: MemberAssignmentState = MemberAssignmentState.STABLE
    assigned: Partitions = field(default_factory=dict)  # what it may own now
    revoking: Partitions = field(default_factory=dict)  # what it must give up before going on
    # the epoch each partition of assigned and revoking was assigned at; one missing (an assignment
    # kept by a coordinator before Kafka 4.3's per-partition epochs) counts as the member's epoch
    since: Since = field(default_factory=dict)

    def assigned_since(self, topic: TopicId, partition: int) -> int | None:
        """The epoch the member was given a partition it holds or is giving up (None: it holds
        neither; Kafka's assignmentEpoch, else pendingRevocationEpoch)."""
        if partition not in self.assigned.get(topic, frozenset()) and \
                partition not in self.revoking.get(topic, frozenset()):
            return None
        return self.since.get((topic, partition), max(self.epoch, 0))


def since_zero(assigned: Partitions) -> dict[tuple[TopicId, int], int]:
    """Every partition as assigned at epoch 0 (a static member that left: Kafka's
    resetAssignedPartitionsEpochsToZero)."""
    return {(t, p): 0 for t, ps in assigned.items() for p in ps}


def _since_of(current: MemberAssignment, partitions: Partitions) -> dict[tuple[TopicId, int], int]:
    """The assignment epochs of partitions the member holds."""
    return {(t, p): current.since.get((t, p), max(current.epoch, 0)) for t, ps in partitions.items() for p in ps}


def _minus(a: Partitions, b: Partitions) -> dict[TopicId, frozenset[int]]:
    out = {t: ps - b.get(t, frozenset()) for t, ps in a.items()}
    return {t: ps for t, ps in out.items() if ps}


def _and(a: Partitions, b: Partitions) -> dict[TopicId, frozenset[int]]:
    out = {t: ps & b.get(t, frozenset()) for t, ps in a.items()}
    return {t: ps for t, ps in out.items() if ps}


def _holds_any(owned: Partitions, partitions: Partitions) -> bool:
    return any(owned.get(t, frozenset()) & ps for t, ps in partitions.items())


HeldBy = Callable[[TopicId, int], str | None]  # which other member holds (or is giving up) a partition


def next_assignment(member_id: str, current: MemberAssignment, target_epoch: int, target: Partitions,
                    owned: Partitions | None, held_by: HeldBy, subscribed: frozenset[TopicId] | None = None,
                    subscription_changed: bool = False) -> MemberAssignment:
    """The member's assignment after a heartbeat that reported ``owned`` (None: not stated).
    ``subscribed``: the ids of the topics it subscribes to (None: every topic of its target); a
    target's other topics count as not given to it.  ``subscription_changed``: this heartbeat
    changed its subscription."""
    if subscribed is not None:
        target = {t: ps for t, ps in target.items() if t in subscribed}
    dropping = subscription_changed and subscribed is not None
    if current.state is MemberAssignmentState.UNREVOKED_PARTITIONS:
        if owned is None or _holds_any(owned, current.revoking):
            if dropping:
                return _give_up_unsubscribed(current, subscribed or frozenset(), owned)
            return current  # still holds some of what it must give up
        return _compute(member_id, current, target_epoch, target, owned, held_by)
    if current.epoch != target_epoch or current.state is MemberAssignmentState.UNRELEASED_PARTITIONS:
        return _compute(member_id, current, target_epoch, target, owned, held_by)
    if dropping:
        return _give_up_unsubscribed(current, subscribed or frozenset(), owned)
    return current


def _give_up_unsubscribed(current: MemberAssignment, subscribed: frozenset[TopicId],
                          owned: Partitions | None) -> MemberAssignment:
    """Kafka's updateCurrentAssignment: what the member holds of topics it no longer subscribes to
    is to be given up now, at its epoch."""
    dropped = {t: ps for t, ps in current.assigned.items() if t not in subscribed}
    if not dropped:
        return current
    assigned = {t: ps for t, ps in current.assigned.items() if t in subscribed}
    revoking = dict(current.revoking)
    for t, ps in dropped.items():
        revoking[t] = revoking.get(t, frozenset()) | ps
    if owned is None or _holds_any(owned, revoking):
        return MemberAssignment(current.epoch, current.epoch, MemberAssignmentState.UNREVOKED_PARTITIONS,
                                assigned, revoking, current.since)
    # what it dropped it no longer owns: gone without a revocation (it stays in its state)
    return MemberAssignment(current.epoch, current.epoch, current.state, assigned, current.revoking,
                            {**_since_of(current, assigned), **_since_of(current, current.revoking)})


def _compute(member_id: str, current: MemberAssignment, target_epoch: int, target: Partitions,
             owned: Partitions | None, held_by: HeldBy) -> MemberAssignment:
    """Kafka's computeNextAssignment: revoke first — unless the member said it owns none of what
    goes (a static member taking its predecessor's place owns nothing yet) —, else towards the target.
    Each step makes the member's previous epoch its current one (Kafka's updateMemberEpoch)."""
    kept = _and(current.assigned, target)
    revoke = _minus(current.assigned, target)
    if revoke and (owned is None or _holds_any(owned, revoke)):
        return MemberAssignment(current.epoch, current.epoch, MemberAssignmentState.UNREVOKED_PARTITIONS, kept,
                                revoke, _since_of(current, current.assigned))
    return _towards(member_id, current, kept, target_epoch, target, held_by)


def _towards(member_id: str, current: MemberAssignment, kept: Partitions, target_epoch: int, target: Partitions,
             held_by: HeldBy) -> MemberAssignment:
    """At the target's epoch: what it keeps, and what of the rest nobody else holds."""
    assigned: dict[TopicId, frozenset[int]] = {}
    pending = False
    for topic, wanted in target.items():
        free = {p for p in wanted if p in kept.get(topic, frozenset()) or held_by(topic, p) in (None, member_id)}
        pending = pending or len(free) < len(wanted)
        if free:
            assigned[topic] = frozenset(free)
    state = MemberAssignmentState.UNRELEASED_PARTITIONS if pending else MemberAssignmentState.STABLE
    # what it keeps keeps its epoch; the rest is new to it at the target's epoch, a partition it
    # was giving up and is given back too (Kafka's computeNextAssignment)
    since = {(t, p): target_epoch for t, ps in assigned.items() for p in ps}
    since.update(_since_of(current, kept))
    return MemberAssignment(target_epoch, current.epoch, state, assigned, {}, since)
