"""The "consumer" embedded protocol: what members put in JoinGroup metadata and SyncGroup assignments.

Subscriptions are written as version 3 (topics, user data, owned partitions, generation, rack),
as the Java client does; any version from 0 up is read, newer ones by their known fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from ..structs import TopicPartition

PROTOCOL_TYPE = "consumer"
SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3


@dataclass(frozen=True)
class Subscription:
    """One member's subscription, as the leader's assignor sees it."""

    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = field(default_factory=list)
    generation_id: int = -1  # the generation the owned partitions are from; -1 if not sent (v0-v1)
    group_instance_id: str | None = None  # filled in by the leader from the JoinGroup response
    rack_id: str | None = None  # the member's client_rack (v3)


@dataclass(frozen=True)
class Assignment:
    partitions: list[TopicPartition]
    user_data: bytes | None = None


def _by_topic(partitions: list[TopicPartition]) -> list[tuple[str, list[int]]]:
    grouped: dict[str, list[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return [(t, sorted(p)) for t, p in sorted(grouped.items())]


def encode_subscription(sub: Subscription, version: int = SUBSCRIPTION_VERSION) -> bytes:
    TP = ConsumerProtocolSubscription.TopicPartition
    return bytes(ConsumerProtocolSubscription(
        version=version, topics=sorted(sub.topics), user_data=sub.user_data,
        owned_partitions=[TP(topic=t, partitions=p) for t, p in _by_topic(sub.owned_partitions)],
        generation_id=sub.generation_id, rack_id=sub.rack_id,
    ).encode())


def decode_subscription(data: bytes) -> Subscription:
    decoded = ConsumerProtocolSubscription.decode(data)
    owned = [TopicPartition(t.topic, p) for t in (decoded.owned_partitions or []) for p in t.partitions]
    generation = decoded.generation_id if decoded.generation_id is not None else -1
    user_data = bytes(decoded.user_data) if decoded.user_data is not None else None
    return Subscription(list(decoded.topics), user_data, owned, generation, rack_id=decoded.rack_id or None)


def encode_assignment(assignment: Assignment, version: int = ASSIGNMENT_VERSION) -> bytes:
    TP = ConsumerProtocolAssignment.TopicPartition
    return bytes(ConsumerProtocolAssignment(
        version=version, user_data=assignment.user_data,
        assigned_partitions=[TP(topic=t, partitions=p) for t, p in _by_topic(assignment.partitions)],
    ).encode())


def decode_assignment(data: bytes) -> Assignment:
    if not data:
        return Assignment([])  # members a leader left out get empty bytes
    decoded = ConsumerProtocolAssignment.decode(data)
    partitions = [TopicPartition(t.topic, p) for t in decoded.assigned_partitions for p in t.partitions]
    user_data = bytes(decoded.user_data) if decoded.user_data is not None else None
    return Assignment(partitions, user_data)
