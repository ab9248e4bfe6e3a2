"""The broker-side group state machine, as a table.

A transition is legal only if the current state is listed as a valid previous state of
the target, exactly as in Kafka's ``GroupMetadata``.  Everything else is a bug and raises.
"""

from __future__ import annotations

import enum
from collections.abc import Callable


class GroupState(enum.Enum):
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


class RebalanceCause(enum.Enum):
    """Why a group's generation (classic) or group epoch (consumer protocol) moved, in a word or
    two: a metric attribute (telemetry.py), so never a member id nor a client's own reason text,
    which only the log lines carry."""

    MEMBER_JOINED = "member_joined"
    MEMBER_LEFT = "member_left"
    # classic: no heartbeat within the session; consumer protocol: the session or the time to
    # give partitions up ran out
    MEMBER_EXPIRED = "member_expired"
    METADATA_CHANGED = "metadata_changed"  # classic: a member rejoined with other protocols
    LEADER_REJOINED = "leader_rejoined"
    STATIC_MEMBER_REJOINED = "static_member_rejoined"
    SYNC_TIMEOUT = "sync_timeout"  # members did not send SyncGroup within the rebalance timeout
    CONVERTED = "converted"  # a consumer group left with classic members only became a classic group
    SUBSCRIPTION_CHANGED = "subscription_changed"
    TOPICS_CHANGED = "topics_changed"  # a subscribed topic was created, deleted or grown; a pattern matched others


# Told of each new generation or group epoch: the group id, the group's protocol ("classic" or
# "consumer", Kafka's group types) and why, when the coordinator knows.
RebalanceHook = Callable[[str, str, RebalanceCause | None], None]
CLASSIC, CONSUMER = "classic", "consumer"


class IllegalStateTransition(RuntimeError):
    pass


def check_transition(group_id: str, current: GroupState, target: GroupState) -> None:
    if current not in VALID_PREVIOUS_STATES[target]:
        raise IllegalStateTransition(
            f"group {group_id!r} cannot go from {current.value} to {target.value}"
        )
