"""GroupConsumer members, each in its own process, on the embedded coordinator."""

from __future__ import annotations

import pytest

from groupclient.coordinator import EmbeddedCluster
from tests.integration.peers import PeerSet, all_consumed, wait_stable_cover, wait_until
from tests.integration.test_peer_groups import PARTITIONS, committed_matches_end, produce, run_group

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_three_group_consumers(cluster: EmbeddedCluster, peers: PeerSet, strategy: str) -> None:
    run_group(cluster, peers, ["groupclient"] * 3, strategy, f"gc-{strategy}")


def test_mixed_with_kafka_python_and_confluent(cluster: EmbeddedCluster, peers: PeerSet) -> None:
    members = run_group(cluster, peers, ["groupclient", "kafka-python", "confluent"], "range", "gc-mixed")
    assert all(m.assignment for m in members)


def test_join_leave_sigkill(cluster: EmbeddedCluster, peers: PeerSet) -> None:
    group, topic = "gc-life", "gc-life-topic"
    a, b, c = run_group(cluster, peers, ["groupclient"] * 3, "range", group)
    assert b.terminate() == 0 and b.has_event("closed")
    assert wait_stable_cover(cluster, group, topic, PARTITIONS, [a, c], 30), [a.describe(), c.describe()]
    expected = produce(cluster, topic, 120, start=1000)
    assert wait_until(lambda: all_consumed([a, c], expected), 30), [a.describe(), c.describe()]
    c.kill()
    assert wait_stable_cover(cluster, group, topic, PARTITIONS, [a], 30), a.describe()
    expected = produce(cluster, topic, 120, start=2000)
    assert wait_until(lambda: all_consumed([a], expected), 30), a.describe()
    d = peers.start("groupclient", cluster.bootstrap_servers, group, topic)
    assert wait_stable_cover(cluster, group, topic, PARTITIONS, [a, d], 30), [a.describe(), d.describe()]
    expected = produce(cluster, topic, 120, start=3000)
    assert wait_until(lambda: all_consumed([a, d], expected), 30)
    assert committed_matches_end(cluster, group, topic)
    assert not any(p.errors for p in (a, d))


def test_coordinator_node_stopped_rediscovery(peers: PeerSet) -> None:
    group, topic = "gc-failover", "gc-failover-topic"
    with EmbeddedCluster(nodes=3, group_initial_rebalance_delay_ms=0) as cluster:
        cluster.create_topic(topic, 6)
        members = [peers.start("groupclient", cluster.bootstrap_servers, group, topic) for _ in range(3)]
        assert wait_stable_cover(cluster, group, topic, 6, members), [m.describe() for m in members]
        expected = set(cluster.produce(topic, [b"before"] * 120))
        assert wait_until(lambda: all_consumed(members, expected), 30)
        old = cluster.coordinator_of(group)
        assert old is not None
        cluster.stop_node(old)
        assert cluster.coordinator_of(group) != old
        expected |= set(cluster.produce(topic, [b"after"] * 120))
        assert wait_until(lambda: all_consumed(members, expected), 60), [m.describe() for m in members]
        assert wait_stable_cover(cluster, group, topic, 6, members), [m.describe() for m in members]
        end = {(topic, p): o for p, o in cluster.end_offsets(topic).items()}
        assert wait_until(lambda: cluster.committed_offsets(group) == end, 30), cluster.committed_offsets(group)
        peers.stop_all()
        assert not any(m.errors for m in members), [m.describe() for m in members]


def test_member_exceeding_max_poll_interval_leaves_and_rejoins(cluster: EmbeddedCluster, peers: PeerSet) -> None:
    group, topic = "gc-slow", "gc-slow-topic"
    cluster.create_topic(topic, PARTITIONS)
    fast = [peers.start("groupclient", cluster.bootstrap_servers, group, topic) for _ in range(2)]
    slow = peers.start("groupclient", cluster.bootstrap_servers, group, topic,
                       extra=["--max-poll-interval-ms", "3000", "--stall-after", "1", "--stall-ms", "6000"])
    members = fast + [slow]
    assert wait_stable_cover(cluster, group, topic, PARTITIONS, members), [m.describe() for m in members]
    owned_before = set(slow.assignment)
    expected = produce(cluster, topic, 300)
    assert slow.wait_for(lambda p: p.has_event("stalling"), 30), slow.describe()
    # while it stalls, the coordinator sees it leave and the others take every partition
    assert wait_stable_cover(cluster, group, topic, PARTITIONS, fast, 20), [m.describe() for m in members]
    assert slow.wait_for(lambda p: p.has_event("stalled"), 30), slow.describe()
    stalled = next(e for e in slow.events if e["event"] == "stalled")
    assert stalled["assignment"] == [], "the slow member still claimed partitions after it left"
    # its next poll tells the listener the partitions were lost (not revoked: no commit for them)
    assert owned_before
    assert slow.wait_for(lambda p: any(e["event"] == "lost" and set(e["partitions"]) == owned_before
                                       for e in p.events), 30), slow.describe()
    after_stall = slow.events[next(i for i, e in enumerate(slow.events) if e["event"] == "stalling"):]
    # (the rejoin's eager revoke is of nothing, as in kafka-python: they were given up as lost)
    assert not any(e["event"] == "revoked" and e["partitions"] for e in after_stall)
    # it comes back on its next poll
    assert wait_stable_cover(cluster, group, topic, PARTITIONS, members, 30), [m.describe() for m in members]
    expected |= produce(cluster, topic, 150, start=300)
    assert wait_until(lambda: all_consumed(members, expected), 30), [m.describe() for m in members]
    assert committed_matches_end(cluster, group, topic)
