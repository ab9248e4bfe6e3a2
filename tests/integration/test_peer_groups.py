"""Third-party clients (kafka-python 3.0.12, confluent-kafka/librdkafka) form groups on the
embedded coordinator, each member in its own process."""

from __future__ import annotations

import pytest

from groupclient.coordinator import EmbeddedCluster
from tests.integration.peers import Peer, PeerSet, all_consumed, wait_stable_cover, wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 6


def produce(cluster: EmbeddedCluster, topic: str, count: int, start: int = 0) -> set[tuple[int, int]]:
    placed = cluster.produce(topic, [f"r{start + i}".encode() for i in range(count)])
    return set(placed)


def committed_matches_end(cluster: EmbeddedCluster, group: str, topic: str) -> bool:
    end = {(topic, p): o for p, o in cluster.end_offsets(topic).items()}
    return wait_until(lambda: cluster.committed_offsets(group) == end, 20)


def run_group(cluster: EmbeddedCluster, peers: PeerSet, kinds: list[str], strategy: str, group: str) -> list[Peer]:
    topic = f"{group}-topic"
    cluster.create_topic(topic, PARTITIONS)
    expected = produce(cluster, topic, 300)
    members = [peers.start(kind, cluster.bootstrap_servers, group, topic, strategy) for kind in kinds]
    assert wait_stable_cover(cluster, group, topic, PARTITIONS, members), [m.describe() for m in members]
    expected |= produce(cluster, topic, 300, start=300)
    assert wait_until(lambda: all_consumed(members, expected), 45), [m.describe() for m in members]
    assert committed_matches_end(cluster, group, topic), (cluster.committed_offsets(group), cluster.end_offsets(topic))
    assert not any(m.errors for m in members), [m.describe() for m in members]
    return members


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_three_kafka_python_consumers(cluster: EmbeddedCluster, peers: PeerSet, strategy: str) -> None:
    run_group(cluster, peers, ["kafka-python"] * 3, strategy, f"kp-{strategy}")
    assert cluster.describe_group(f"kp-{strategy}")["protocol"] == strategy  # type: ignore[index]


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_three_confluent_consumers(cluster: EmbeddedCluster, peers: PeerSet, strategy: str) -> None:
    run_group(cluster, peers, ["confluent"] * 3, strategy, f"ck-{strategy}")
    assert cluster.describe_group(f"ck-{strategy}")["protocol"] == strategy  # type: ignore[index]


def test_mixed_group_kafka_python_and_confluent(cluster: EmbeddedCluster, peers: PeerSet) -> None:
    members = run_group(cluster, peers, ["kafka-python", "kafka-python", "confluent"], "range", "mixed")
    assert {m.kind for m in members if m.assignment} == {"kafka-python", "confluent"}


def test_join_leave_and_sigkill(cluster: EmbeddedCluster, peers: PeerSet) -> None:
    group, topic = "lifecycle", "lifecycle-topic"
    a, b, c = run_group(cluster, peers, ["kafka-python"] * 3, "range", group)
    generation = cluster.describe_group(group)["generation"]  # type: ignore[index]

    # graceful leave: LeaveGroup, the others take over at once
    assert b.terminate() == 0 and b.has_event("closed")
    assert wait_stable_cover(cluster, group, topic, PARTITIONS, [a, c], 30), [a.describe(), c.describe()]
    expected = produce(cluster, topic, 120, start=1000)
    assert wait_until(lambda: all_consumed([a, c], expected), 30)

    # SIGKILL: no LeaveGroup; the coordinator expires the session (6 s) and rebalances
    c.kill()
    assert wait_stable_cover(cluster, group, topic, PARTITIONS, [a], 30), a.describe()
    assert len(cluster.describe_group(group)["members"]) == 1  # type: ignore[index]
    expected = produce(cluster, topic, 120, start=2000)
    assert wait_until(lambda: all_consumed([a], expected), 30), a.describe()

    # a new member joins
    d = peers.start("kafka-python", cluster.bootstrap_servers, group, topic)
    assert wait_stable_cover(cluster, group, topic, PARTITIONS, [a, d], 30), [a.describe(), d.describe()]
    assert cluster.describe_group(group)["generation"] > generation + 2  # type: ignore[index]
    expected = produce(cluster, topic, 120, start=3000)
    assert wait_until(lambda: all_consumed([a, d], expected), 30)
    assert committed_matches_end(cluster, group, topic)
