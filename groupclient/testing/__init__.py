"""Deterministic simulation of a whole consumer group, for groupclient's tests and for yours.

``GroupSimulation`` runs real ``GroupConsumer`` members (their member logic, assignors and your
rebalance listeners) against the real coordinator core, over in-memory connections, on one fake
clock.  Faults (crashes, frozen members, slow polls, cut connections, error answers, coordinator
moves) are scripted or drawn from a seed, and invariants are checked after every step.  Share-group
members (``ShareConsumer`` applications, ``ShareBehaviour``) run beside them with invariants of
their own (``ShareInvariants``).  See docs/testing.md.

``GroupclientCluster`` is the ``EmbeddedCluster`` with test helpers that the pytest plugin
(``groupclient.testing.pytest_plugin``, docs/pytest-plugin.md) hands to tests.

Names are imported on first use, so that loading the pytest plugin (which pytest does in every
run once groupclient is installed) does not import the simulator.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cluster import GroupclientCluster
    from .invariants import InvariantViolation, Invariants
    from .members import Behaviour, ListenerEvent, SimMember
    from .scheduler import Crashed, Scheduler, SimulationError
    from .share_invariants import ShareInvariants
    from .share_members import ShareBehaviour, ShareSimMember
    from .simulation import CONSUMER_GROUP_DEFAULTS, MEMBER_DEFAULTS, GroupSimulation

_MODULE_OF = {
    "GroupclientCluster": ".cluster",
    "InvariantViolation": ".invariants", "Invariants": ".invariants",
    "Behaviour": ".members", "ListenerEvent": ".members", "SimMember": ".members",
    "Crashed": ".scheduler", "Scheduler": ".scheduler", "SimulationError": ".scheduler",
    "ShareInvariants": ".share_invariants", "ShareBehaviour": ".share_members", "ShareSimMember": ".share_members",
    "MEMBER_DEFAULTS": ".simulation", "CONSUMER_GROUP_DEFAULTS": ".simulation", "GroupSimulation": ".simulation",
}

__all__ = [
    "Behaviour", "CONSUMER_GROUP_DEFAULTS", "Crashed", "GroupSimulation", "GroupclientCluster", "InvariantViolation", "Invariants",
    "ListenerEvent", "MEMBER_DEFAULTS", "Scheduler", "ShareBehaviour", "ShareInvariants", "ShareSimMember", "SimMember",
    "SimulationError",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
