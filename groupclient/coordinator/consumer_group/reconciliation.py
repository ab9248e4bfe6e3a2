"""How a member of a consumer-protocol group moves from its current assignment to its target, on the
coordinator's side (Kafka 4.1's ``CurrentAssignmentBuilder``), as a pure function: no clock, no
I/O; the caller says who holds which partition.

A member never receives a partition before its previous owner has acknowledged giving it up:

- a new target first takes away what the member must give up (UNREVOKED_PARTITIONS): the member
  keeps what it keeps, stays at its epoch, and is told only that;
- a heartbeat whose owned partitions no longer hold any of those moves it to the target's epoch
  (a heartbeat that states no owned partitions, null, acknowledges nothing);
- it then receives what of its target nobody else holds any more; what another member still holds
  comes with a later heartbeat (UNRELEASED_PARTITIONS) until it has everything (STABLE).

Measured on Kafka 4.1.1 (issue 24): when B joins a group where A holds 0-5, A's next heartbeat gets
{0,1,2} at the same epoch; A's heartbeat that reports owning only {0,1,2} moves it to the new
epoch; B gets {3,4,5} with its heartbeat after that.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

TopicId = uuid.UUID
Partitions = Mapping[TopicId, frozenset[int]]
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
                    owned: Partitions | None, held_by: HeldBy) -> MemberAssignment:
    """The member's assignment after a heartbeat that reported ``owned`` (None: not stated)."""
    if current.state is MemberAssignmentState.UNREVOKED_PARTITIONS:
        if owned is None or _holds_any(owned, current.revoking):
            return current  # still holds some of what it must give up
        # acknowledged: one epoch on (Kafka 4.1's epoch + 1); a target that moved on meanwhile may
        # take more away first, at that epoch
        return _compute(member_id, current, current.epoch + 1, target_epoch, target, owned, held_by)
    if current.epoch != target_epoch or current.state is MemberAssignmentState.UNRELEASED_PARTITIONS:
        return _compute(member_id, current, current.epoch, target_epoch, target, owned, held_by)
    return current


def _compute(member_id: str, current: MemberAssignment, epoch: int, target_epoch: int, target: Partitions,
             owned: Partitions | None, held_by: HeldBy) -> MemberAssignment:
    """Kafka's computeNextAssignment: revoke first — unless the member said it owns none of what
    goes (a static member taking its predecessor's place owns nothing yet) —, else towards the target.
    Each step makes the member's previous epoch its current one (Kafka's updateMemberEpoch)."""
    kept = _and(current.assigned, target)
    revoke = _minus(current.assigned, target)
    if revoke and (owned is None or _holds_any(owned, revoke)):
        return MemberAssignment(epoch, current.epoch, MemberAssignmentState.UNREVOKED_PARTITIONS, kept, revoke)
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
    return MemberAssignment(target_epoch, current.epoch, state, assigned)
