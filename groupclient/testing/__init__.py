"""Deterministic simulation of a whole consumer group, for groupclient's tests and for yours.

``GroupSimulation`` runs real ``GroupConsumer`` members (their member logic, assignors and your
rebalance listeners) against the real coordinator core, over in-memory connections, on one fake
clock.  Faults (crashes, frozen members, slow polls, cut connections, error answers, coordinator
moves) are scripted or drawn from a seed, and invariants are checked after every step.  See
docs/testing.md.
"""

from .invariants import InvariantViolation, Invariants
from .members import Behaviour, ListenerEvent, SimMember
from .scheduler import Crashed, Scheduler, SimulationError
from .simulation import MEMBER_DEFAULTS, GroupSimulation

__all__ = [
    "Behaviour", "Crashed", "GroupSimulation", "InvariantViolation", "Invariants", "ListenerEvent",
    "MEMBER_DEFAULTS", "Scheduler", "SimMember", "SimulationError",
]
