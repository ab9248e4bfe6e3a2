"""groupclient's ShareConsumer in share groups of the embedded coordinator and of Apache Kafka 4.4:
Java's rules for implicit and explicit acknowledgement, what RELEASE, REJECT and RENEW do, records
shared by two members with none delivered to both, a lock that ran out, and close()."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from groupclient import AcknowledgeType, ShareConsumer
from groupclient.coordinator import EmbeddedCluster
from groupclient.errors import IllegalStateError, InvalidRecordStateError
from groupclient.structs import TopicPartition
from tests.integration import external
from tests.integration.kip848_wire import unique

A = AcknowledgeType


class Cluster:
    """Either cluster, with one test's topic and share group."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers

    def share_topic(self, records: int, partitions: int = 1, lock_ms: int | None = None) -> tuple[str, str]:
        """A new topic of ``records`` records (spread over its partitions) and a share group that
        reads it from the start: (topic, group)."""
        topic, group = unique("sct"), unique("scg")
        external.create_topic(self.bootstrap_servers, topic, partitions)
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap_servers)
        try:
            assert admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, group, configs={
                "share.auto.offset.reset": "earliest", "share.assignment.interval.ms": "0",
                **({"share.record.lock.duration.ms": str(lock_ms)} if lock_ms else {})})]) == {"group": {group: "OK"}}
        finally:
            admin.close()
        producer = KafkaProducer(bootstrap_servers=self.bootstrap_servers, linger_ms=20)
        try:
            for future in [producer.send(topic, f"r{i}".encode(), partition=i % partitions) for i in range(records)]:
                future.get(10)
        finally:
            producer.close()
        return topic, group

    def consumer(self, topic: str, group: str, **config: Any) -> ShareConsumer[bytes, bytes]:
        return ShareConsumer(topic, bootstrap_servers=self.bootstrap_servers, group_id=group, **config)


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """The embedded coordinator, then Apache Kafka 4.4 (tests/kafka/broker.py)."""
    if request.param == "kafka":
        yield Cluster(request.getfixturevalue("kafka_broker").bootstrap)
        return
    with EmbeddedCluster(nodes=1) as embedded:
        yield Cluster(embedded.bootstrap_servers)


def drain(consumers: list[ShareConsumer[bytes, bytes]], wanted: int, timeout_s: float = 40,
          acknowledge: bool = False) -> list[list[Any]]:
    """Poll each consumer in turn until ``wanted`` records came in all (or ``timeout_s``); with
    ``acknowledge`` each record is accepted (explicit mode)."""
    got: list[list[Any]] = [[] for _ in consumers]
    deadline = time.monotonic() + timeout_s
    while sum(map(len, got)) < wanted and time.monotonic() < deadline:
        for mine, consumer in zip(got, consumers):
            for records in consumer.poll(timeout_ms=200).values():
                mine.extend(records)
                if acknowledge:
                    for record in records:
                        consumer.acknowledge(record)
    return got


def test_implicit_mode_hands_out_each_record_once_and_a_commit_accepts_them(cluster: Cluster) -> None:
    topic, group = cluster.share_topic(30, partitions=2)
    with cluster.consumer(topic, group) as consumer:
        [got] = drain([consumer], 30)
        assert sorted((r.partition, r.offset) for r in got) == sorted((i % 2, i // 2) for i in range(30))
        assert {r.delivery_count for r in got} == {1}
        assert {r.value for r in got} == {f"r{i}".encode() for i in range(30)}
        # the partitions of the last poll (each earlier poll accepted the one before it)
        last = consumer.commit_sync()
        assert last and set(last) <= {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        assert set(last.values()) == {None}
        assert consumer.commit_sync() == {}  # nothing more to send
        assert consumer.acquisition_lock_timeout_ms() == 30000
        assert consumer.metrics()["acknowledgements-accept-total"] == 30
    with cluster.consumer(topic, group) as again:  # all accepted: nothing comes back
        assert drain([again], 1, timeout_s=3) == [[]]


def test_close_in_implicit_mode_gives_the_last_poll_back_as_javas_does(cluster: Cluster) -> None:
    topic, group = cluster.share_topic(5)
    first = cluster.consumer(topic, group)
    [got] = drain([first], 5)
    first.close()  # not accepted: Java's close() releases what the last poll returned
    with cluster.consumer(topic, group) as second:
        [again] = drain([second], 5)
        assert sorted(r.offset for r in again) == sorted(r.offset for r in got) == list(range(5))
        assert {r.delivery_count for r in again} == {2}


def test_explicit_mode_release_reject_and_the_rules(cluster: Cluster) -> None:
    topic, group = cluster.share_topic(6)
    acks: list[tuple[dict[TopicPartition, set[int]], Exception | None]] = []
    with cluster.consumer(topic, group, share_acknowledgement_mode="explicit",
                          acknowledgement_commit_callback=lambda offsets, error: acks.append((offsets, error))
                          ) as consumer:
        [got] = drain([consumer], 6)
        assert [r.offset for r in got] == list(range(6))
        with pytest.raises(IllegalStateError, match="All records must be acknowledged in explicit"):
            consumer.poll(timeout_ms=0)
        consumer.acknowledge(got[0])
        consumer.acknowledge(got[1], A.RELEASE)
        consumer.acknowledge(got[2], A.REJECT)
        with pytest.raises(IllegalStateError, match="already acknowledged"):
            consumer.acknowledge(got[2], A.ACCEPT)
        for record in got[3:]:
            consumer.acknowledge(record, "accept")
        tp = TopicPartition(topic, 0)
        assert consumer.commit_sync() == {tp: None}
        assert acks == [({tp: set(range(6))}, None)]
        with pytest.raises(IllegalStateError, match="cannot be acknowledged"):
            consumer.acknowledge(got[0])  # its acknowledgement went
        [back] = drain([consumer], 1, acknowledge=True)
        assert [(r.offset, r.delivery_count) for r in back] == [(1, 2)]  # released: again; rejected: never
        assert drain([consumer], 1, timeout_s=2) == [[]]


def test_renew_keeps_a_record_and_the_next_poll_returns_it_again(cluster: Cluster) -> None:
    topic, group = cluster.share_topic(3)
    with cluster.consumer(topic, group, share_acknowledgement_mode="explicit") as consumer:
        [got] = drain([consumer], 3)
        consumer.acknowledge(got[0], A.RENEW)
        for record in got[1:]:
            consumer.acknowledge(record)
        renewed = consumer.poll(timeout_ms=10_000)
        assert [(r.offset, r.delivery_count) for r in renewed[TopicPartition(topic, 0)]] == [(0, 1)]
        with pytest.raises(IllegalStateError, match="All records must be acknowledged"):
            consumer.poll(timeout_ms=0)
        consumer.acknowledge(renewed[TopicPartition(topic, 0)][0])
        assert consumer.commit_sync() == {TopicPartition(topic, 0): None}
    with cluster.consumer(topic, group) as again:
        assert drain([again], 1, timeout_s=3) == [[]]


def test_two_members_share_a_partition_and_no_record_goes_to_both(cluster: Cluster) -> None:
    topic, group = cluster.share_topic(200)
    consumers = [cluster.consumer(topic, group, max_poll_records=10, share_acquire_mode="record_limit")
                 for _ in range(2)]
    try:
        got = drain(consumers, 200)
    finally:
        for consumer in consumers:
            consumer.close()
    offsets = [r.offset for mine in got for r in mine]
    assert sorted(offsets) == list(range(200))  # each once: none twice, none lost
    assert all(mine for mine in got), [len(mine) for mine in got]  # both worked


def test_an_acknowledgement_after_the_lock_ran_out_is_an_invalid_record_state(cluster: Cluster) -> None:
    topic, group = cluster.share_topic(1, lock_ms=15000)  # the broker's least lock
    slow = cluster.consumer(topic, group, share_acknowledgement_mode="explicit")
    other = cluster.consumer(topic, group, share_acknowledgement_mode="explicit")
    try:
        [[record]] = drain([slow], 1)
        # the lock runs out: the record goes to the other member, at its second delivery
        [taken] = drain([other], 1, timeout_s=60, acknowledge=True)
        assert [(r.offset, r.delivery_count) for r in taken] == [(0, 2)]
        slow.acknowledge(record)
        result = slow.commit_sync()
        assert isinstance(result[TopicPartition(topic, 0)], InvalidRecordStateError), result
    finally:
        slow.close()
        other.close()
