"""Testing a consumer application with groupclient's pytest plugin: no Docker, no JVM.

With groupclient installed, pytest loads the plugin by itself; ``groupclient_cluster`` is a Kafka-wire
cluster on 127.0.0.1 for each test (a ``groupclient.testing.GroupclientCluster``).  The application
below is tested with kafka-python, confluent-kafka and groupclient's ``GroupConsumer``.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from kafka import KafkaConsumer, KafkaProducer

from groupclient import GroupConsumer
from groupclient.testing import GroupclientCluster

ORDERS = [("alice", 30), ("bob", 5), ("alice", 12), ("carol", 7), ("bob", 1), ("alice", 8)]
TOTALS = Counter({"alice": 50, "bob": 6, "carol": 7})

# every test of this module gets a fresh cluster with a 3-partition "orders" topic
pytestmark = pytest.mark.groupclient_cluster(topics={"orders": 3})


# -- the application under test ----------------------------------------------------------
def parse_order(value: bytes) -> tuple[str, int]:
    customer, amount = value.decode().split(":")
    return customer, int(amount)


def bill_orders(consumer: Any, expected: int, timeout_s: float = 15.0) -> Counter[str]:
    """Total ``customer:amount`` orders per customer, committing after each batch.

    ``consumer`` is a kafka-python ``KafkaConsumer`` or a groupclient ``GroupConsumer`` (same API).
    """
    totals: Counter[str] = Counter()
    seen = 0
    deadline = time.monotonic() + timeout_s
    for _ in range(1000):
        if seen >= expected or time.monotonic() > deadline:
            break
        batch = [r for records in consumer.poll(timeout_ms=200).values() for r in records]
        for record in batch:
            customer, amount = parse_order(record.value)
            totals[customer] += amount
        seen += len(batch)
        if batch:
            consumer.commit()
    return totals


def bill_orders_confluent(consumer: Consumer, expected: int, timeout_s: float = 15.0) -> Counter[str]:
    """``bill_orders`` for a confluent-kafka ``Consumer``."""
    totals: Counter[str] = Counter()
    seen = 0
    deadline = time.monotonic() + timeout_s
    for _ in range(1000):
        if seen >= expected or time.monotonic() > deadline:
            break
        batch = consumer.consume(num_messages=100, timeout=0.2)
        for message in batch:
            if message.error() is not None:
                raise KafkaException(message.error())
            customer, amount = parse_order(message.value())
            totals[customer] += amount
        seen += len(batch)
        if batch:
            consumer.commit(asynchronous=False)
    return totals


# -- tests ---------------------------------------------------------------------------------
def order_records() -> list[tuple[str, str]]:
    return [(customer, f"{customer}:{amount}") for customer, amount in ORDERS]


def kafka_python_consumer(bootstrap_servers: str, **settings: Any) -> KafkaConsumer:
    """A kafka-python consumer in group "billing" of "orders" that knows the topic's partitions
    before its first poll().

    kafka-python 3.0.12 joins before its metadata has the topic, assigns nothing, and rejoins once
    the metadata comes; if a poll() times out during that second rebalance, it never applies the
    assignment (its leader's assignment clears the reason it rejoined, and the next poll() no longer
    waits for the join).  Asking for the partitions first makes the first assignment the whole one.
    """
    consumer = KafkaConsumer("orders", bootstrap_servers=bootstrap_servers, group_id="billing", **settings)
    assert consumer.partitions_for_topic("orders")
    return consumer


def test_kafka_python_producer_and_consumer(groupclient_cluster: GroupclientCluster) -> None:
    producer = KafkaProducer(bootstrap_servers=groupclient_cluster.bootstrap_servers)
    try:
        for customer, value in order_records():
            producer.send("orders", key=customer.encode(), value=value.encode())
        producer.flush(timeout=10)
    finally:
        producer.close(timeout=5)

    consumer = kafka_python_consumer(groupclient_cluster.bootstrap_servers, auto_offset_reset="earliest",
                                     enable_auto_commit=False)
    try:
        assert bill_orders(consumer, expected=len(ORDERS)) == TOTALS
    finally:
        consumer.close()
    assert groupclient_cluster.caught_up("billing", "orders")


def test_confluent_kafka_producer_and_consumer(groupclient_cluster: GroupclientCluster) -> None:
    common = {"bootstrap.servers": groupclient_cluster.bootstrap_servers, "broker.address.family": "v4"}
    producer = Producer(common)
    for customer, value in order_records():
        producer.produce("orders", key=customer, value=value)
    assert producer.flush(10) == 0

    consumer = Consumer({**common, "group.id": "billing", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    try:
        consumer.subscribe(["orders"])
        assert bill_orders_confluent(consumer, expected=len(ORDERS)) == TOTALS
    finally:
        consumer.close()
    assert groupclient_cluster.caught_up("billing", "orders")


def test_group_consumer(groupclient_cluster: GroupclientCluster) -> None:
    groupclient_cluster.produce("orders", order_records())  # (key, value) pairs, str or bytes
    consumer = GroupConsumer("orders", bootstrap_servers=groupclient_cluster.bootstrap_servers,
                             group_id="billing", auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        assert bill_orders(consumer, expected=len(ORDERS)) == TOTALS
    finally:
        consumer.close()
    assert groupclient_cluster.committed("billing", "orders") == groupclient_cluster.end_offsets("orders")


def test_consumer_survives_failed_fetches(groupclient_cluster: GroupclientCluster) -> None:
    groupclient_cluster.produce("orders", order_records())
    groupclient_cluster.fail("Fetch", error="NOT_LEADER_OR_FOLLOWER", count=3)
    consumer = GroupConsumer("orders", bootstrap_servers=groupclient_cluster.bootstrap_servers,
                             group_id="billing", auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        assert bill_orders(consumer, expected=len(ORDERS)) == TOTALS
    finally:
        consumer.close()
    assert groupclient_cluster.fired("Fetch") == 3
    assert groupclient_cluster.caught_up("billing", "orders")


def test_consumer_survives_a_coordinator_error_on_heartbeat(groupclient_cluster: GroupclientCluster) -> None:
    consumer = kafka_python_consumer(groupclient_cluster.bootstrap_servers, auto_offset_reset="earliest",
                                     enable_auto_commit=False, heartbeat_interval_ms=100)
    try:
        groupclient_cluster.produce("orders", order_records()[:3])
        assert bill_orders(consumer, expected=3) == Counter({"alice": 42, "bob": 5})
        # the next two heartbeats are told the coordinator moved: the consumer looks it up again
        groupclient_cluster.fail("Heartbeat", error="NOT_COORDINATOR", count=2)
        assert groupclient_cluster.wait_until(lambda: groupclient_cluster.fired("Heartbeat") == 2, timeout_s=10)
        groupclient_cluster.produce("orders", order_records()[3:])
        assert bill_orders(consumer, expected=3) == Counter({"carol": 7, "bob": 1, "alice": 8})
    finally:
        consumer.close()
    assert groupclient_cluster.caught_up("billing", "orders")


@pytest.mark.groupclient_cluster(nodes=3, topics={"orders": 6})
def test_consumer_carries_on_when_its_coordinator_node_stops(groupclient_cluster: GroupclientCluster) -> None:
    consumer = GroupConsumer("orders", bootstrap_servers=groupclient_cluster.bootstrap_servers,
                             group_id="billing", auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        groupclient_cluster.produce("orders", order_records()[:3])
        assert bill_orders(consumer, expected=3) == Counter({"alice": 42, "bob": 5})
        coordinator = groupclient_cluster.coordinator_of("billing")
        assert coordinator is not None
        groupclient_cluster.stop_node(coordinator)
        groupclient_cluster.produce("orders", order_records()[3:])
        assert bill_orders(consumer, expected=3) == Counter({"carol": 7, "bob": 1, "alice": 8})
    finally:
        consumer.close()
    assert groupclient_cluster.caught_up("billing", "orders")
