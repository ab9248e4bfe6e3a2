"""The states of a member of a consumer-protocol group (KIP-848), as a transition table: the Java
client's ``MemberState``, without the two states whose work groupclient does in one step on the
application thread (FENCED: the partitions are dropped at once and the member rejoins;
PREPARE_LEAVING: the listener runs before the leave is asked for)."""

from __future__ import annotations

import enum


class ConsumerMemberState(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"  # not in the group: no subscription, or left
    JOINING = "joining"  # a heartbeat with epoch 0 is due or on its way
    RECONCILING = "reconciling"  # the target assignment differs from what the member owns
    ACKNOWLEDGING = "acknowledging"  # reconciled: the heartbeat that says so is due at once
    STABLE = "stable"  # owns its target assignment
    LEAVING = "leaving"  # the heartbeat with epoch -1 (-2 for a static member) is due
    STALE = "stale"  # left because poll() was not called in time; rejoins on the next poll()
    FATAL = "fatal"  # refused for good; the error is raised once from poll()


S = ConsumerMemberState
IN_GROUP = frozenset({S.JOINING, S.RECONCILING, S.ACKNOWLEDGING, S.STABLE})

ALLOWED: dict[ConsumerMemberState, frozenset[ConsumerMemberState]] = {
    S.UNSUBSCRIBED: frozenset({S.JOINING, S.FATAL}),
    S.JOINING: frozenset({S.RECONCILING, S.STABLE, S.LEAVING, S.STALE, S.UNSUBSCRIBED, S.FATAL}),
    S.RECONCILING: frozenset({S.ACKNOWLEDGING, S.STABLE, S.JOINING, S.LEAVING, S.STALE, S.UNSUBSCRIBED, S.FATAL}),
    S.ACKNOWLEDGING: frozenset({S.RECONCILING, S.STABLE, S.JOINING, S.LEAVING, S.STALE, S.UNSUBSCRIBED, S.FATAL}),
    S.STABLE: frozenset({S.RECONCILING, S.JOINING, S.LEAVING, S.STALE, S.UNSUBSCRIBED, S.FATAL}),
    S.LEAVING: frozenset({S.UNSUBSCRIBED, S.STALE, S.JOINING, S.FATAL}),
    S.STALE: frozenset({S.JOINING, S.UNSUBSCRIBED, S.FATAL}),
    S.FATAL: frozenset(),
}


class IllegalConsumerMemberTransition(RuntimeError):
    """A transition the table does not allow: a bug of groupclient's."""


def check_transition(current: ConsumerMemberState, target: ConsumerMemberState) -> None:
    if target is not current and target not in ALLOWED[current]:
        raise IllegalConsumerMemberTransition(f"member cannot go from {current.value} to {target.value}")
