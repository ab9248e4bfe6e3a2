"""Partition assignors: how a group's leader splits partitions among members.

Write your own by subclassing :class:`PartitionAssignor`; pass instances (or classes) in
``partition_assignment_strategy``.
"""

from __future__ import annotations

from .base import PartitionAssignor, RebalanceProtocol
from .registry import resolve_assignors
from .range import RangeAssignor
from .roundrobin import RoundRobinAssignor

__all__ = ["PartitionAssignor", "RangeAssignor", "RebalanceProtocol", "RoundRobinAssignor", "resolve_assignors"]
