"""Partition assignors: how a group's leader splits partitions among members.

Write your own by subclassing :class:`PartitionAssignor`; pass instances (or classes) in
``partition_assignment_strategy``, or publish it under the ``groupclient.assignors`` entry point
group.  See docs/assignors.md.
"""

from __future__ import annotations

from .base import AssignorError, ClusterView, PartitionAssignor, RebalanceProtocol, common_protocol, validate_assignment
from .range import RangeAssignor
from .registry import resolve_assignors
from .roundrobin import RoundRobinAssignor
from .sticky import CooperativeStickyAssignor, StickyAssignor

__all__ = [
    "AssignorError", "ClusterView", "CooperativeStickyAssignor", "PartitionAssignor", "RangeAssignor",
    "RebalanceProtocol", "RoundRobinAssignor", "StickyAssignor", "common_protocol", "resolve_assignors",
    "validate_assignment",
]
