"""Producing to a broker and reading back what a group committed, for the Spark tests."""

from __future__ import annotations

import uuid
from typing import Any

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from groupclient import GroupConsumer, TopicPartition


def new_topic(bootstrap: str, partitions: int) -> str:
    topic = f"spark-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()
    return topic


def produce(bootstrap: str, topic: str, count: int, partitions: int, start: int = 0) -> set[tuple[int, int]]:
    """``count`` records spread over the partitions; returns their (partition, offset)."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        futures = [producer.send(topic, f"v{i}".encode(), key=f"k{i}".encode(), partition=i % partitions,
                                 headers=[("n", str(i).encode())]) for i in range(start, start + count)]
        producer.flush()
        return {(m.partition, m.offset) for m in (f.get(30) for f in futures)}
    finally:
        producer.close()


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    """The group's committed offset per partition, as any other member would find it."""
    with GroupConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False) as consumer:
        return {p: consumer.committed(TopicPartition(topic, p)) for p in range(partitions)}  # type: ignore[misc]


def ends(placed: set[tuple[int, int]], partitions: int) -> dict[int, int]:
    return {p: max((o for q, o in placed if q == p), default=-1) + 1 for p in range(partitions)}


def config(bootstrap: str, group: str, **extra: Any) -> dict[str, Any]:
    return {"bootstrap_servers": bootstrap, "group_id": group, "auto_offset_reset": "earliest",
            "session_timeout_ms": 6000, "heartbeat_interval_ms": 1000, **extra}
