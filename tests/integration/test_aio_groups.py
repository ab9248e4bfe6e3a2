"""AsyncGroupConsumer members in groups with every other client, each member in its own process:
groupclient's sync and async consumers, aiokafka 0.14 and confluent-kafka, with coroutine
listeners; no partition is owned by two members at any instant (tests/integration/ownership.py)."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from groupclient.coordinator import EmbeddedCluster
from tests.integration import external
from tests.integration.ownership import double_ownership
from tests.integration.peers import PeerSet, all_consumed, wait_stable_cover, wait_until
from tests.integration.test_peer_groups import committed_matches_end, produce

pytestmark = pytest.mark.integration

PARTITIONS = 6


def describe(members: list) -> list[str]:  # type: ignore[type-arg]
    return [m.describe() for m in members]


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_async_sync_aiokafka_and_confluent_members_share_an_eager_group(
        cluster: EmbeddedCluster, peers: PeerSet, strategy: str) -> None:
    group, topic = f"aio-mixed-{strategy}", f"aio-mixed-{strategy}-topic"
    cluster.create_topic(topic, PARTITIONS)
    expected = produce(cluster, topic, 300)
    kinds = ["groupclient-aio", "groupclient", "aiokafka"] + (["confluent"] if strategy == "range" else [])
    members = [peers.start(kind, cluster.bootstrap_servers, group, topic, strategy) for kind in kinds]
    assert wait_stable_cover(cluster, group, topic, PARTITIONS, members), describe(members)
    expected |= produce(cluster, topic, 300, start=300)
    assert wait_until(lambda: all_consumed(members, expected), 45), describe(members)
    # churn: the aiokafka member leaves, a second async member joins, the sync one leaves
    everyone = list(members)
    aiokafka_member = members[2]
    assert aiokafka_member.terminate() == 0, aiokafka_member.describe()
    late = peers.start("groupclient-aio", cluster.bootstrap_servers, group, topic, strategy)
    everyone.append(late)
    live = [m for m in members if m is not aiokafka_member] + [late]
    assert wait_stable_cover(cluster, group, topic, PARTITIONS, live), describe(live)
    assert members[1].terminate() == 0, members[1].describe()
    live.remove(members[1])
    assert wait_stable_cover(cluster, group, topic, PARTITIONS, live), describe(live)
    expected |= produce(cluster, topic, 300, start=600)
    assert wait_until(lambda: all_consumed(everyone, expected), 45), describe(everyone)
    assert committed_matches_end(cluster, group, topic)
    assert not double_ownership(everyone, time.monotonic())
    assert not any(m.errors for m in everyone), describe(everyone)
    assert {m.kind for m in members if m.has_event("assigned")} == set(kinds)


def test_async_members_rebalance_cooperatively_with_sync_and_confluent_ones(
        cluster: EmbeddedCluster, peers: PeerSet) -> None:
    """What aiokafka cannot: cooperative-sticky, so a join moves only the partitions it must."""
    group, topic = "aio-coop", "aio-coop-topic"
    cluster.create_topic(topic, PARTITIONS)
    expected = produce(cluster, topic, 300)
    first = peers.start("groupclient-aio", cluster.bootstrap_servers, group, topic, "cooperative-sticky")
    assert wait_stable_cover(cluster, group, topic, PARTITIONS, [first]), first.describe()
    others = [peers.start(kind, cluster.bootstrap_servers, group, topic, "cooperative-sticky")
              for kind in ("groupclient", "confluent", "groupclient-aio")]
    everyone = [first, *others]
    assert wait_stable_cover(cluster, group, topic, PARTITIONS, everyone), describe(everyone)
    expected |= produce(cluster, topic, 300, start=300)
    assert wait_until(lambda: all_consumed(everyone, expected), 45), describe(everyone)
    # the first member never gave up everything at once: each revocation was a part of what it had
    revoked = [set(e["partitions"]) for e in first.snapshot() if e["event"] == "revoked" and e["partitions"]]
    assert revoked and all(len(r) < PARTITIONS for r in revoked), first.describe()
    assert cluster.describe_group(group)["protocol"] == "cooperative-sticky"  # type: ignore[index]
    assert not double_ownership(everyone, time.monotonic())
    assert not any(m.errors for m in everyone), describe(everyone)


def test_async_members_speak_the_consumer_protocol_with_confluent(kip848_bootstrap: str, peers: PeerSet) -> None:
    """KIP-848 from asyncio: AsyncGroupConsumer(group_protocol='consumer') with librdkafka's."""
    bootstrap = kip848_bootstrap
    topic, group = external.new_topic(bootstrap, PARTITIONS), f"aio-848-{time.monotonic_ns() % 10**8}"
    counts: Counter[int] = Counter()
    members = [peers.start(kind, bootstrap, group, topic, protocol="consumer")
               for kind in ("groupclient-aio", "groupclient-aio", "confluent")]
    assert external.peer_cover(members, PARTITIONS, 90), describe(members)
    expected = external.produce(bootstrap, topic, 120, PARTITIONS, counts)
    assert wait_until(lambda: all_consumed(members, expected), 60), describe(members)
    assert members[0].terminate() == 0, members[0].describe()
    assert external.peer_cover(members[1:], PARTITIONS, 90), describe(members)
    expected |= external.produce(bootstrap, topic, 120, PARTITIONS, counts)
    assert wait_until(lambda: all_consumed(members, expected), 60), describe(members)
    assert external.commits_match(bootstrap, group, topic, PARTITIONS, counts)
    assert not double_ownership(members, time.monotonic())
    assert not any(m.errors for m in members), describe(members)
