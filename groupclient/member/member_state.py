"""The member's own view of its place in the group, as a transition table."""

from __future__ import annotations

import enum


class MemberState(enum.Enum):
    UNJOINED = "unjoined"  # not in the group (new, left, or reset after an error)
    PREPARING_REBALANCE = "preparing-rebalance"  # JoinGroup sent, waiting for the answer
    COMPLETING_REBALANCE = "completing-rebalance"  # joined; SyncGroup sent, waiting for the assignment
    STABLE = "stable"  # has an assignment for the current generation


M = MemberState

ALLOWED: dict[MemberState, frozenset[MemberState]] = {
    M.UNJOINED: frozenset({M.PREPARING_REBALANCE}),
    M.PREPARING_REBALANCE: frozenset({M.COMPLETING_REBALANCE, M.UNJOINED}),
    M.COMPLETING_REBALANCE: frozenset({M.STABLE, M.PREPARING_REBALANCE, M.UNJOINED}),
    M.STABLE: frozenset({M.PREPARING_REBALANCE, M.UNJOINED}),
}


class IllegalMemberTransition(RuntimeError):
    pass


def check_member_transition(current: MemberState, target: MemberState) -> None:
    if target not in ALLOWED[current] and target is not current:
        raise IllegalMemberTransition(f"member cannot go from {current.value} to {target.value}")
