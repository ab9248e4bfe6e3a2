"""The assignor interface and its validation."""

from __future__ import annotations

import abc
import enum
from collections.abc import Mapping

from kafka.structs import TopicPartition

from ..protocol.consumer_protocol import Assignment, Subscription


class RebalanceProtocol(enum.Enum):
    EAGER = "eager"  # every member gives up all partitions before each rebalance
    COOPERATIVE = "cooperative"  # members keep partitions that do not move (KIP-429)


def member_order(member_id: str, sub: Subscription) -> tuple[int, str]:
    """Kafka's MemberInfo order: static members first, by instance id (so a restarted static
    member, with a new member id, keeps its place, KIP-345); then dynamic ones by member id."""
    if sub.group_instance_id is not None:
        return (0, sub.group_instance_id)
    return (1, member_id)


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
