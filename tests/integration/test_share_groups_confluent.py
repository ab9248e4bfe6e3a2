"""Share groups (KIP-932) served to a real third-party share consumer, confluent-kafka's
``ShareConsumer`` (librdkafka 2.16: ShareGroupHeartbeat v1, ShareFetch and ShareAcknowledge v1-2),
by the embedded coordinator and by Apache Kafka 4.4 alike.  Members share a partition and no record
goes to two of them; a released record comes back one delivery later, a rejected one never; a group
starts where its ``share.auto.offset.reset`` says (set here with IncrementalAlterConfigs)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, ShareConsumer
from kafka import KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from groupclient.coordinator import EmbeddedCluster
from groupclient.protocol.share_group import ShareGroupDescribeRequest, ShareGroupDescribeResponse
from tests.integration import external
from tests.integration.kip848_wire import coordinator_of, unique
from tests.integration.peers import wait_until


class Cluster:
    """Either cluster, as these tests use it."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers

    def create_topic(self, name: str, partitions: int) -> None:
        external.create_topic(self.bootstrap_servers, name, partitions)

    def produce(self, topic: str, values: list[bytes], partition: int) -> None:
        producer = KafkaProducer(bootstrap_servers=self.bootstrap_servers)
        try:
            for future in [producer.send(topic, value, partition=partition) for value in values]:
                future.get(10)
        finally:
            producer.close()


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """The embedded coordinator, then Apache Kafka 4.4 (tests/kafka/broker.py)."""
    if request.param == "kafka":
        yield Cluster(request.getfixturevalue("kafka_broker").bootstrap)
        return
    with EmbeddedCluster(nodes=1) as embedded:
        yield Cluster(embedded.bootstrap_servers)


def earliest(cluster: Cluster, group: str) -> None:
    """The group starts at the earliest offset (its share.auto.offset.reset; Kafka's default is
    latest) and computes a target at each change (Kafka's default batches them a second apart)."""
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        assert admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, group, configs={
            "share.auto.offset.reset": "earliest", "share.assignment.interval.ms": "0"})]) == {"group": {group: "OK"}}
    finally:
        admin.close()


def share_consumer(cluster: Cluster, group: str, topic: str, **config: Any) -> ShareConsumer:
    consumer = ShareConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "log_level": 3,
                              **config})
    consumer.subscribe([topic])
    return consumer


def drain(consumers: list[ShareConsumer], wanted: int, timeout_s: float = 30) -> list[list[Any]]:
    """Poll each consumer in turn until ``wanted`` records came in all, or ``timeout_s``."""
    got: list[list[Any]] = [[] for _ in consumers]
    deadline = time.monotonic() + timeout_s
    while sum(map(len, got)) < wanted and time.monotonic() < deadline:
        for mine, consumer in zip(got, consumers):
            mine.extend(m for m in consumer.poll(0.5) or [] if m.error() is None)
    return got


def test_two_share_consumers_split_one_partition_with_no_record_delivered_twice(cluster: Cluster) -> None:
    group, topic = unique("share"), unique("q")
    cluster.create_topic(topic, 1)
    earliest(cluster, group)
    cluster.produce(topic, [f"r{i}".encode() for i in range(300)], partition=0)
    consumers = [share_consumer(cluster, group, topic, **{"max.poll.records": 20}) for _ in range(2)]
    try:
        got = drain(consumers, 300)
        values = [m.value() for mine in got for m in mine]
        assert sorted(values) == sorted(f"r{i}".encode() for i in range(300)), len(values)
        assert all(m.delivery_count() == 1 for mine in got for m in mine)
        wire = coordinator_of(cluster.bootstrap_servers, group)
        seen: list[Any] = []

        def shared() -> bool:  # a member learns of a change at its next heartbeat (5 s apart)
            for consumer in consumers:
                consumer.poll(0.1)
            [described] = wire.call(ShareGroupDescribeRequest(version=1, group_ids=[group],
                                                              include_authorized_operations=False),
                                    ShareGroupDescribeResponse).groups
            seen[:] = [described.error_code, described.group_state, described.assignor_name,
                       [[list(tp.partitions) for tp in m.assignment.topic_partitions] for m in described.members]]
            return seen == [0, "Stable", "simple", [[[0]], [[0]]]]  # one partition, shared by both

        try:
            assert wait_until(shared, 15), seen
        finally:
            wire.close()
    finally:
        for consumer in consumers:
            consumer.close()


def test_a_released_record_comes_back_one_delivery_later_and_a_rejected_one_never(cluster: Cluster) -> None:
    group, topic = unique("share"), unique("q")
    cluster.create_topic(topic, 1)
    earliest(cluster, group)
    cluster.produce(topic, [b"release", b"reject", b"accept"], partition=0)
    consumer = share_consumer(cluster, group, topic, **{"share.acknowledgement.mode": "explicit"})
    try:
        [first] = drain([consumer], 3)
        kinds = {b"release": AcknowledgeType.RELEASE, b"reject": AcknowledgeType.REJECT,
                 b"accept": AcknowledgeType.ACCEPT}
        for message in first:
            consumer.acknowledge(message, kinds[message.value()])
        consumer.commit_sync(10)
        [again] = drain([consumer], 1)
        assert [(m.value(), m.offset(), m.delivery_count()) for m in again] == [(b"release", 0, 2)]
        consumer.acknowledge(again[0], AcknowledgeType.ACCEPT)
        consumer.commit_sync(10)
        assert drain([consumer], 1, timeout_s=3) == [[]]
    finally:
        consumer.close()


def test_what_a_share_group_settled_survives_a_coordinator_restart(tmp_path: Path) -> None:
    """With a data dir: five records accepted and the rest released by a closing consumer; after a
    restart a new consumer gets only the five released ones, at their second delivery."""
    group, topic = unique("share"), unique("q")
    with EmbeddedCluster(nodes=1, data_dir=tmp_path) as embedded:
        cluster = Cluster(embedded.bootstrap_servers)
        cluster.create_topic(topic, 1)
        earliest(cluster, group)
        cluster.produce(topic, [f"r{i}".encode() for i in range(10)], partition=0)
        consumer = share_consumer(cluster, group, topic, **{"share.acknowledgement.mode": "explicit"})
        try:
            [first] = drain([consumer], 10)
            for message in first:
                if message.offset() < 5:
                    consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            consumer.commit_sync(10)
        finally:
            consumer.close()
    with EmbeddedCluster(nodes=1, data_dir=tmp_path) as embedded:
        cluster = Cluster(embedded.bootstrap_servers)
        consumer = share_consumer(cluster, group, topic)
        try:
            [again] = drain([consumer], 5)
            assert sorted((m.offset(), m.delivery_count()) for m in again) == [(o, 2) for o in range(5, 10)]
        finally:
            consumer.close()

