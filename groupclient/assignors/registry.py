"""Assignors by name: what ``partition_assignment_strategy`` may list."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import ConfigurationError
from .base import PartitionAssignor
from .range import RangeAssignor
from .roundrobin import RoundRobinAssignor

BUILT_IN: dict[str, type[PartitionAssignor]] = {"range": RangeAssignor, "roundrobin": RoundRobinAssignor}


def resolve_assignors(strategy: Iterable[Any]) -> list[PartitionAssignor]:
    """Instances, classes, or names ("range", "roundrobin"); kafka-python assignor classes are
    mapped to ours by their name."""
    known = BUILT_IN
    resolved: list[PartitionAssignor] = []
    for item in strategy:
        if isinstance(item, PartitionAssignor):
            resolved.append(item)
        elif isinstance(item, type) and issubclass(item, PartitionAssignor):
            resolved.append(item())
        else:
            name = item if isinstance(item, str) else getattr(item, "name", None)
            if name not in known:
                raise ConfigurationError(f"unknown partition assignment strategy {item!r}; "
                                         f"use one of {sorted(known)} or a PartitionAssignor")
            resolved.append(known[name]())
    if not resolved:
        raise ConfigurationError("partition_assignment_strategy is empty")
    names = [a.name for a in resolved]
    if len(set(names)) != len(names) or not all(names):
        raise ConfigurationError(f"assignors need distinct, non-empty names: {names}")
    return resolved
