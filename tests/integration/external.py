"""Helpers for brokers we only reach over the wire (Tansu, Apache Kafka)."""

from __future__ import annotations

import uuid
from collections import Counter

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from groupclient import GroupConsumer, TopicPartition
from tests.integration.peers import Peer, exclusive_cover, wait_until


def new_topic(bootstrap: str, partitions: int) -> str:
    return create_topic(bootstrap, f"t-{uuid.uuid4().hex[:8]}", partitions)


def create_topic(bootstrap: str, topic: str, partitions: int) -> str:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, partitions, 1)])
    admin.close()
    return topic


def produce(bootstrap: str, topic: str, count: int, partitions: int, counts: Counter[int]) -> set[tuple[int, int]]:
    """Produce ``count`` records round-robin; remember per partition how many went where."""
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    futures = [producer.send(topic, f"v{i}".encode(), partition=i % partitions) for i in range(count)]
    producer.flush()
    placed = {(m.partition, m.offset) for m in (f.get(10) for f in futures)}
    producer.close()
    for partition, _ in placed:
        counts[partition] += 1
    return placed


def peer_cover(members: list[Peer], partitions: int, timeout_s: float = 60) -> bool:
    """A stable point: every partition owned by exactly one of ``members`` by their own account,
    and every member owning some (so a point before the last member joined does not count)."""
    def stable() -> bool:
        owned = [set(m.assignment) for m in members]
        return exclusive_cover(owned, partitions) and all(owned[: min(len(owned), partitions)])
    return wait_until(stable, timeout_s)


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    with GroupConsumer(bootstrap_servers=bootstrap, group_id=group) as reader:
        return {p: reader.committed(TopicPartition(topic, p), timeout_ms=10000) for p in range(partitions)}


def commits_match(bootstrap: str, group: str, topic: str, partitions: int, counts: Counter[int]) -> bool:
    expected = {p: counts[p] for p in range(partitions)}
    return wait_until(lambda: committed(bootstrap, group, topic, partitions) == expected, 30)


def topics(bootstrap: str) -> set[str]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return set(admin.list_topics())
    finally:
        admin.close()
