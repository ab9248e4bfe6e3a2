"""The 3-node Apache Kafka cluster of the chaos runs (tests/kafka/cluster.py): a leader killed
loses no acknowledged record, and a proxy's blackhole cuts off one client from one broker only."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest

from tests.kafka.cluster import KafkaCluster

pytestmark = [pytest.mark.integration, pytest.mark.kafka]


@pytest.fixture
def cluster(kafka_cluster: KafkaCluster) -> KafkaCluster:
    """The session's cluster (tests/conftest.py), every node running."""
    for i in range(kafka_cluster.nodes):
        if not kafka_cluster.alive(i):
            kafka_cluster.start_node(i)
    return kafka_cluster


def producer(cluster: KafkaCluster, client_id: str, **configs: Any) -> Any:
    from kafka import KafkaProducer

    return KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, client_id=client_id, acks="all",
                         **configs)


def send(prod: Any, topic: str, values: list[bytes], partitions: int, timeout_s: float = 40) -> None:
    futures = [prod.send(topic, value=v, partition=n % partitions) for n, v in enumerate(values)]
    prod.flush(timeout=timeout_s)
    for future in futures:
        future.get(timeout=1)  # acknowledged by the in-sync replicas, or raises


def read_all(cluster: KafkaCluster, topic: str, partitions: int, count: int, timeout_s: float = 20) -> list[bytes]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, client_id="reader", group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        got: list[bytes] = []
        deadline = time.monotonic() + timeout_s
        while len(got) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got += [r.value for r in records]
        return got
    finally:
        consumer.close()


def test_a_killed_leader_loses_no_acknowledged_record(cluster: KafkaCluster) -> None:
    topic, partitions = "failover", 3
    cluster.create_topic(topic, partitions)
    prod = producer(cluster, "failover-producer", retry_backoff_ms=200)
    try:
        before = [b"before-%d" % n for n in range(30)]
        send(prod, topic, before, partitions)
        leader = cluster.leaders(topic)[0]
        controller = cluster.active_controller()
        killed = time.monotonic()
        cluster.kill(leader)
        after = [b"after-%d" % n for n in range(30)]
        send(prod, topic, after, partitions)  # waits for the leaders to move (the node is fenced)
        moved = time.monotonic() - killed
        assert cluster.leaders(topic)[0] != leader
        assert cluster.end_offsets(topic) == {p: 20 for p in range(partitions)}
    finally:
        prod.close(timeout=5)
    restarted = time.monotonic()
    cluster.start_node(leader)
    print(f"node {leader} killed (the active controller: node {controller}): produced again after {moved:.1f} s; "
          f"restarted and serving in {time.monotonic() - restarted:.1f} s")
    assert cluster.alive(leader)
    assert sorted(read_all(cluster, topic, partitions, 60)) == sorted(before + after)
    assert cluster.end_offsets(topic) == {p: 20 for p in range(partitions)}


def metadata_request(client_id: str) -> bytes:
    """A Metadata v12 request for no topic, as a client with ``client_id`` sends it."""
    from kafka.protocol.metadata import MetadataRequest

    request = MetadataRequest(topics=[], allow_auto_topic_creation=False)
    request.with_header(correlation_id=7, client_id=client_id)
    return bytes(request.encode(version=12, header=True, framed=True))


def answers(address: str, client_id: str, timeout_s: float) -> bool:
    """Whether a Metadata request of ``client_id`` through the proxy at ``address`` is answered."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(metadata_request(client_id))
        try:
            return len(sock.recv(4)) > 0
        except socket.timeout:
            return False


def test_a_blackhole_cuts_one_client_off_one_broker(cluster: KafkaCluster) -> None:
    topic = "blackhole"
    cluster.create_topic(topic, 1)
    node = cluster.leaders(topic)[0]
    proxy = cluster.proxies[node]
    # not idempotent: kafka-python 3.0.12's idempotent producer, once a batch in flight expires,
    # drops its producer id and never sends (nor expires) another batch
    cut = producer(cluster, "cut.0", request_timeout_ms=1500, delivery_timeout_ms=3000, enable_idempotence=False)
    ok = producer(cluster, "ok.0", request_timeout_ms=1500, delivery_timeout_ms=3000)
    try:
        send(cut, topic, [b"cut-before"], 1)
        send(ok, topic, [b"ok-before"], 1)
        proxy.blackhole("cut.")
        assert not answers(proxy.address, "cut.1", timeout_s=1.0)  # a new connection is cut off too
        assert answers(proxy.address, "ok.1", timeout_s=5.0)
        other = cluster.proxies[(node + 1) % cluster.nodes]
        assert answers(other.address, "cut.1", timeout_s=5.0)  # other brokers still serve it
        from kafka.errors import KafkaTimeoutError

        with pytest.raises(KafkaTimeoutError):  # its delivery timeout (3 s) passes unanswered
            send(cut, topic, [b"cut-during"], 1, timeout_s=10)
        send(ok, topic, [b"ok-during"], 1)
        stats = proxy.stats()
        assert stats.discarded["cut.0"] > 0 and stats.acted[("blackhole", "cut.")] >= 2
        proxy.heal()
        send(cut, topic, [b"cut-after"], 1)  # the healed client reconnects
    finally:
        proxy.heal()
        cut.close(timeout=5)
        ok.close(timeout=5)
    assert not proxy.errors
    assert sorted(read_all(cluster, topic, 1, 4)) == [b"cut-after", b"cut-before", b"ok-before", b"ok-during"]
