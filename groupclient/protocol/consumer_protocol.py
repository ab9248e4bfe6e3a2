"""The "consumer" embedded protocol: what members put in JoinGroup metadata and SyncGroup assignments."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafka.structs import TopicPartition

PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True)
class Subscription:
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = field(default_factory=list)
    generation_id: int = -1
    group_instance_id: str | None = None  # filled in by the leader from the JoinGroup response


@dataclass(frozen=True)
class Assignment:
    partitions: list[TopicPartition]
    user_data: bytes | None = None


def encode_subscription(sub: Subscription, version: int = 1) -> bytes:
    owned: dict[str, list[int]] = {}
    for tp in sub.owned_partitions:
        owned.setdefault(tp.topic, []).append(tp.partition)
    return bytes(ConsumerProtocolSubscription(
        version=version, topics=sorted(sub.topics), user_data=sub.user_data,
        owned_partitions=[ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=sorted(p))
                          for t, p in sorted(owned.items())],
        generation_id=sub.generation_id, rack_id=None,
    ).encode())


def decode_subscription(data: bytes) -> Subscription:
    decoded = ConsumerProtocolSubscription.decode(data)
    owned = [TopicPartition(t.topic, p) for t in (decoded.owned_partitions or []) for p in t.partitions]
    generation = decoded.generation_id if decoded.generation_id is not None else -1
    return Subscription(list(decoded.topics), decoded.user_data, owned, generation)


def encode_assignment(assignment: Assignment) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for tp in assignment.partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return bytes(ConsumerProtocolAssignment(
        version=1, user_data=assignment.user_data,
        assigned_partitions=[ConsumerProtocolAssignment.TopicPartition(topic=t, partitions=sorted(p))
                             for t, p in sorted(by_topic.items())],
    ).encode())


def decode_assignment(data: bytes) -> Assignment:
    if not data:
        return Assignment([])  # members a leader left out get empty bytes
    decoded = ConsumerProtocolAssignment.decode(data)
    partitions = [TopicPartition(t.topic, p) for t in decoded.assigned_partitions for p in t.partitions]
    return Assignment(partitions, decoded.user_data)
