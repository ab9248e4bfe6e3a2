"""Every state a member can be in, under either group protocol, as transition tables; and the one
table of what each state shows through kafka-python's API (``group_metadata().state``).

The two protocols' members go through different steps, so each has its own enum and table:

* :class:`ClassicMemberState`: JoinGroup, then SyncGroup, then stable (the Java client's
  ``AbstractCoordinator.MemberState``);
* :class:`ConsumerMemberState`: KIP-848's heartbeat-driven states (the Java client's
  ``MemberState`` of ``ConsumerMembershipManager``), without the two whose work groupclient does in
  one step on the application thread (FENCED: the partitions are dropped at once and the member
  rejoins; PREPARE_LEAVING: the listener runs before the leave is asked for).

A state's ``value`` is what ``group_metadata().phase`` and ``repr(consumer)`` show.
"""

from __future__ import annotations

import enum

from kafka.structs import MemberState as KafkaPythonState


class ClassicMemberState(enum.Enum):
    """A member of a classic group (JoinGroup/SyncGroup)."""

    UNJOINED = "unjoined"  # not in the group (new, left, or reset after an error)
    PREPARING_REBALANCE = "preparing-rebalance"  # JoinGroup sent, waiting for the answer
    COMPLETING_REBALANCE = "completing-rebalance"  # joined; SyncGroup sent, waiting for the assignment
    STABLE = "stable"  # has an assignment for the current generation


class ConsumerMemberState(enum.Enum):
    """A member of a consumer-protocol group (KIP-848)."""

    UNSUBSCRIBED = "unsubscribed"  # not in the group: no subscription, or left
    JOINING = "joining"  # a heartbeat with epoch 0 is due or on its way
    RECONCILING = "reconciling"  # the target assignment differs from what the member owns
    ACKNOWLEDGING = "acknowledging"  # reconciled: the heartbeat that says so is due at once
    STABLE = "stable"  # owns its target assignment
    LEAVING = "leaving"  # the heartbeat with epoch -1 (-2 for a static member) is due
    STALE = "stale"  # left because poll() was not called in time; rejoins on the next poll()
    FATAL = "fatal"  # refused for good; the error is raised once from poll()


AnyMemberState = ClassicMemberState | ConsumerMemberState

C = ClassicMemberState
S = ConsumerMemberState

# the consumer-protocol states in which the member has a place (and an epoch) in the group
IN_GROUP = frozenset({S.JOINING, S.RECONCILING, S.ACKNOWLEDGING, S.STABLE})

# state -> (the states it may go to, what kafka-python's group_metadata().state shows for it)
STATES: dict[AnyMemberState, tuple[frozenset[AnyMemberState], KafkaPythonState]] = {
    C.UNJOINED: (frozenset({C.PREPARING_REBALANCE}), KafkaPythonState.UNJOINED),
    C.PREPARING_REBALANCE: (frozenset({C.COMPLETING_REBALANCE, C.UNJOINED}), KafkaPythonState.REBALANCING),
    C.COMPLETING_REBALANCE: (frozenset({C.STABLE, C.PREPARING_REBALANCE, C.UNJOINED}), KafkaPythonState.REBALANCING),
    C.STABLE: (frozenset({C.PREPARING_REBALANCE, C.UNJOINED}), KafkaPythonState.STABLE),
    S.UNSUBSCRIBED: (frozenset({S.JOINING, S.FATAL}), KafkaPythonState.UNJOINED),
    S.JOINING: (frozenset({S.RECONCILING, S.STABLE, S.LEAVING, S.STALE, S.UNSUBSCRIBED, S.FATAL}),
                KafkaPythonState.REBALANCING),
    S.RECONCILING: (frozenset({S.ACKNOWLEDGING, S.STABLE, S.JOINING, S.LEAVING, S.STALE, S.UNSUBSCRIBED, S.FATAL}),
                    KafkaPythonState.REBALANCING),
    S.ACKNOWLEDGING: (frozenset({S.RECONCILING, S.STABLE, S.JOINING, S.LEAVING, S.STALE, S.UNSUBSCRIBED, S.FATAL}),
                      KafkaPythonState.REBALANCING),
    S.STABLE: (frozenset({S.RECONCILING, S.JOINING, S.LEAVING, S.STALE, S.UNSUBSCRIBED, S.FATAL}),
               KafkaPythonState.STABLE),
    S.LEAVING: (frozenset({S.UNSUBSCRIBED, S.STALE, S.JOINING, S.FATAL}), KafkaPythonState.UNJOINED),
    S.STALE: (frozenset({S.JOINING, S.UNSUBSCRIBED, S.FATAL}), KafkaPythonState.UNJOINED),
    S.FATAL: (frozenset(), KafkaPythonState.UNJOINED),
}


class IllegalMemberTransition(RuntimeError):
    """A transition the table does not allow: a bug of groupclient's."""


def check_transition(current: AnyMemberState, target: AnyMemberState) -> None:
    """Raise :class:`IllegalMemberTransition` unless the table lets ``current`` go to ``target``
    (staying is always allowed)."""
    if target is not current and target not in STATES[current][0]:
        raise IllegalMemberTransition(f"member cannot go from {current.value} to {target.value}")


def shown_as(state: AnyMemberState) -> KafkaPythonState:
    """What kafka-python's ``group_metadata().state`` shows for ``state``."""
    return STATES[state][1]
