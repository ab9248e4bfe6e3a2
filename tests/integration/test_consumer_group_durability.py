"""Consumer-protocol (KIP-848) groups are durable and movable on the embedded coordinator: when the
node that coordinates a group stops, another node serves it at the same epochs, and a coordinator
restarted on its data dir has its groups back — in both cases the members (groupclient,
confluent-kafka and the Java consumer, each in its own process) go on without being fenced, no
partition has two owners at any instant, every record is consumed and the commits are exact."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchmarks.brokers import free_port
from groupclient.coordinator import EmbeddedCluster
from tests.conftest import KIP848_SETTINGS
from tests.integration import external
from tests.integration.ownership import double_ownership
from tests.integration.peers import Peer, PeerSet, all_consumed, wait_until

pytestmark = pytest.mark.integration
PARTITIONS = 6


def describe(members: list[Peer]) -> list[str]:
    return [m.describe() for m in members]


def lost(members: list[Peer]) -> list[str]:
    """Members that were told to drop partitions without giving them back (fenced)."""
    return [m.name for m in members if m.has_event("lost")]


def stable(cluster: EmbeddedCluster, group: str, members: int) -> dict[str, Any] | None:
    """The group once every member is at the target's epoch with all of its target."""
    found: list[dict[str, Any] | None] = [None]

    def settled() -> bool:
        found[0] = cluster.describe_consumer_group(group)
        return found[0] is not None and found[0]["state"] == "Stable" and len(found[0]["members"]) == members

    return found[0] if wait_until(settled, 60) else None


def test_a_consumer_group_moves_to_another_node_at_the_same_epochs(peers: PeerSet) -> None:
    group, topic = "failover848", "failover848-topic"
    with EmbeddedCluster(nodes=3, **KIP848_SETTINGS) as cluster:  # type: ignore[arg-type]
        cluster.create_topic(topic, PARTITIONS)
        bootstrap = cluster.bootstrap_servers
        members = [peers.start(kind, bootstrap, group, topic, protocol="consumer")
                   for kind in ("groupclient", "confluent", "java")]
        assert external.peer_cover(members, PARTITIONS, 90), describe(members)
        counts: Counter[int] = Counter()
        expected = external.produce(bootstrap, topic, 120, PARTITIONS, counts)
        assert wait_until(lambda: all_consumed(members, expected), 60), describe(members)
        before = stable(cluster, group, 3)
        assert before is not None, cluster.describe_consumer_group(group)
        old = cluster.coordinator_of(group)
        assert old is not None
        cluster.stop_node(old)
        new = cluster.coordinator_of(group)
        assert new is not None and new != old
        moved = cluster.describe_consumer_group(group)
        assert moved is not None and (moved["epoch"], moved["members"]) == (before["epoch"], before["members"])
        expected |= external.produce(bootstrap, topic, 120, PARTITIONS, counts)
        assert wait_until(lambda: all_consumed(members, expected), 60), describe(members)
        after = stable(cluster, group, 3)
        assert after is not None and after["epoch"] == before["epoch"], (before, after)
        assert external.commits_match(bootstrap, group, topic, PARTITIONS, counts)
        assert not lost(members) and not any(m.errors for m in members), describe(members)
        assert not double_ownership(members, time.monotonic())
        peers.stop_all()  # while the cluster still runs, so members leave cleanly


def test_a_restarted_coordinator_has_its_consumer_groups_back(tmp_path: Path, peers: PeerSet) -> None:
    group, topic = "restart848", "restart848-topic"
    port = free_port()
    settings: dict[str, Any] = dict(KIP848_SETTINGS, data_dir=tmp_path, ports=[port])
    counts: Counter[int] = Counter()
    with EmbeddedCluster(**settings) as first:
        first.create_topic(topic, PARTITIONS)
        members = [peers.start(kind, first.bootstrap_servers, group, topic, protocol="consumer")
                   for kind in ("groupclient", "confluent")]
        assert external.peer_cover(members, PARTITIONS, 90), describe(members)
        expected = external.produce(first.bootstrap_servers, topic, 60, PARTITIONS, counts)
        assert wait_until(lambda: all_consumed(members, expected), 60), describe(members)
        before = stable(first, group, 2)
        assert before is not None, first.describe_consumer_group(group)
    # the coordinator is gone for a moment (less than a session); the members keep their partitions
    with EmbeddedCluster(**settings) as second:
        back = second.describe_consumer_group(group)
        assert back is not None and (back["epoch"], back["members"]) == (before["epoch"], before["members"])
        expected |= external.produce(second.bootstrap_servers, topic, 60, PARTITIONS, counts)
        assert wait_until(lambda: all_consumed(members, expected), 60), describe(members)
        after = stable(second, group, 2)
        assert after is not None and after["epoch"] == before["epoch"], (before, after)
        assert external.commits_match(second.bootstrap_servers, group, topic, PARTITIONS, counts)
        assert not lost(members) and not any(m.errors for m in members), describe(members)
        assert not double_ownership(members, time.monotonic())
        peers.stop_all()
