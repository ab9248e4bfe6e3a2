"""Assignors by name: what ``partition_assignment_strategy`` may list.

Names resolve to the built-in assignors first, then to assignors other packages publish under the
``groupclient.assignors`` entry point group (``name = "package.module:Class"``).  kafka-python's
assignor classes are accepted and mapped to ours by their name, so a kafka-python configuration
carries over unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import Any

from ..errors import ConfigurationError
from .base import PartitionAssignor, common_protocol
from .range import RangeAssignor
from .roundrobin import RoundRobinAssignor
from .sticky import CooperativeStickyAssignor, StickyAssignor

ENTRY_POINT_GROUP = "groupclient.assignors"
BUILT_IN: dict[str, type[PartitionAssignor]] = {
    "range": RangeAssignor, "roundrobin": RoundRobinAssignor, "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}


def published_assignors() -> dict[str, Any]:
    """Entry points of the ``groupclient.assignors`` group, by name (not loaded yet)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _by_name(name: str, item: Any) -> PartitionAssignor:
    if name in BUILT_IN:
        return BUILT_IN[name]()
    published = published_assignors()
    if name not in published:
        raise ConfigurationError(f"unknown partition assignment strategy {item!r}; use one of "
                                 f"{sorted(BUILT_IN) + sorted(published)}, a PartitionAssignor, or publish one "
                                 f"under the {ENTRY_POINT_GROUP!r} entry point group")
    try:
        loaded = published[name].load()
    except Exception as exc:
        raise ConfigurationError(f"the assignor {name!r} ({published[name].value}) cannot be loaded: {exc!r}") from exc
    return _instance(loaded, item)


def _instance(item: Any, shown: Any) -> PartitionAssignor:
    if isinstance(item, PartitionAssignor):
        return item
    if isinstance(item, type) and issubclass(item, PartitionAssignor):
        return item()
    raise ConfigurationError(f"{shown!r} is not a groupclient PartitionAssignor")


def resolve_assignors(strategy: Iterable[Any]) -> list[PartitionAssignor]:
    """Instances, classes, names, or kafka-python assignor classes/instances; in preference order."""
    if isinstance(strategy, (str, bytes)) or isinstance(strategy, type) or isinstance(strategy, PartitionAssignor):
        strategy = [strategy]
    resolved: list[PartitionAssignor] = []
    for item in strategy:
        if isinstance(item, PartitionAssignor) or (isinstance(item, type) and issubclass(item, PartitionAssignor)):
            resolved.append(_instance(item, item))
            continue
        name = item if isinstance(item, str) else getattr(item, "name", None)
        if not isinstance(name, str):
            raise ConfigurationError(f"partition_assignment_strategy entries are names, PartitionAssignor "
                                     f"classes or instances, not {item!r}")
        resolved.append(_by_name(name, item))
    if not resolved:
        raise ConfigurationError("partition_assignment_strategy is empty")
    names = [a.name for a in resolved]
    if len(set(names)) != len(names) or not all(isinstance(n, str) and n for n in names):
        raise ConfigurationError(f"assignors need distinct, non-empty names: {names}")
    try:
        common_protocol(resolved)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    return resolved
