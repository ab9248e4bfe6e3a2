"""The assignor interface and its validation."""

from __future__ import annotations

import abc
import enum
from collections.abc import Iterable, Mapping
from typing import Any

from kafka.structs import TopicPartition

from ..errors import ConfigurationError
from ..group.consumer_protocol import Assignment, Subscription


class RebalanceProtocol(enum.Enum):
    EAGER = "eager"  # every member gives up all partitions before each rebalance
    COOPERATIVE = "cooperative"  # members keep partitions that do not move (KIP-429)


class PartitionAssignor(abc.ABC):
    """A pure function of the group's subscriptions and the partitions that exist."""

    name: str = ""
    rebalance_protocol: RebalanceProtocol = RebalanceProtocol.EAGER

    @abc.abstractmethod
    def assign(self, partitions_per_topic: Mapping[str, int],
               subscriptions: Mapping[str, Subscription]) -> dict[str, Assignment]:
        """Member id -> assignment, given each topic's partition count and each member's subscription."""

    def user_data(self, topics: set[str]) -> bytes | None:
        """Bytes each member sends along with its subscription (sticky assignors use this)."""
        return None

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        """Called on every member when it receives its assignment."""


def resolve_assignors(strategy: Iterable[Any]) -> list[PartitionAssignor]:
    """Instances, classes, or names ("range", "roundrobin"); kafka-python assignor classes are
    mapped to ours by their name."""
    from .range import RangeAssignor
    from .roundrobin import RoundRobinAssignor

    known: dict[str, type[PartitionAssignor]] = {"range": RangeAssignor, "roundrobin": RoundRobinAssignor}
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


def validate_assignment(assignor: PartitionAssignor, partitions_per_topic: Mapping[str, int],
                        subscriptions: Mapping[str, Subscription],
                        assignments: Mapping[str, Assignment]) -> None:
    """Reject an assignor's output that would break the group: unknown members or partitions,
    partitions given twice, or partitions of topics the member did not subscribe to."""
    where = f"assignor {assignor.name!r}"
    if not isinstance(assignments, Mapping):
        raise TypeError(f"{where} returned {type(assignments).__name__}, expected a dict of member id -> Assignment")
    seen: dict[TopicPartition, str] = {}
    for member_id, assignment in assignments.items():
        if member_id not in subscriptions:
            raise ValueError(f"{where} assigned to unknown member {member_id!r}")
        if not isinstance(assignment, Assignment):
            raise TypeError(f"{where} returned {type(assignment).__name__} for {member_id!r}, expected Assignment")
        for tp in assignment.partitions:
            count = partitions_per_topic.get(tp.topic)
            if count is None or not 0 <= tp.partition < count:
                raise ValueError(f"{where} assigned {tp}, which does not exist")
            if tp.topic not in subscriptions[member_id].topics:
                raise ValueError(f"{where} assigned {tp} to {member_id!r}, which did not subscribe to it")
            if tp in seen:
                raise ValueError(f"{where} assigned {tp} to both {seen[tp]!r} and {member_id!r}")
            seen[tp] = member_id
