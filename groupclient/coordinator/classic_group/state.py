"""The classic group state machine, as a table.

A transition is legal only if the current state is listed as a valid previous state of
the target, exactly as in Kafka's ``GroupMetadata``.  Everything else is a bug and raises.
"""

from __future__ import annotations

import enum


class GroupState(enum.Enum):
    """A classic group's state (Kafka's GroupState, as DescribeGroups and ListGroups name it)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


S = GroupState

VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    # a member joined, left, or its metadata changed
    S.PREPARING_REBALANCE: frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}),
    # every member rejoined (or the join delay ran out); waiting for the leader's assignment
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE}),
    # the leader's assignment was received and propagated
    S.STABLE: frozenset({S.COMPLETING_REBALANCE}),
    # the last member left during a rebalance
    S.EMPTY: frozenset({S.PREPARING_REBALANCE}),
    # the group was unloaded (coordinator moved) or deleted
    S.DEAD: frozenset({S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD}),
}

# States in which a join or leave may start a new rebalance.
CAN_REBALANCE: frozenset[GroupState] = VALID_PREVIOUS_STATES[S.PREPARING_REBALANCE]


class IllegalStateTransition(RuntimeError):
    """A transition the table does not allow: a bug in the coordinator."""


def check_transition(group_id: str, current: GroupState, target: GroupState) -> None:
    """Raise IllegalStateTransition unless the table lets ``current`` go to ``target``."""
    if current not in VALID_PREVIOUS_STATES[target]:
        raise IllegalStateTransition(
            f"group {group_id!r} cannot go from {current.value} to {target.value}"
        )
