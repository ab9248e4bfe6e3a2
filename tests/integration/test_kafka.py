"""Against a real Apache Kafka broker (KRaft): GroupConsumer groups, and mixed groups with
kafka-python, confluent-kafka and the Java KafkaConsumer."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest

from tests.integration import external
from tests.integration.peers import PeerSet, all_consumed, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.kafka]
PARTITIONS = 6


def group_name() -> str:
    return f"g-{uuid.uuid4().hex[:6]}"


def describe(members: list[Any]) -> list[str]:
    return [m.describe() for m in members]


def test_group_consumers_join_leave_sigkill(kafka_broker: Any, peers: PeerSet) -> None:
    bootstrap = kafka_broker.bootstrap
    topic, group = external.new_topic(bootstrap, PARTITIONS), group_name()
    counts: Counter[int] = Counter()
    expected = external.produce(bootstrap, topic, 300, PARTITIONS, counts)
    a, b, c = (peers.start("groupclient", bootstrap, group, topic) for _ in range(3))
    assert external.peer_cover([a, b, c], PARTITIONS), describe([a, b, c])
    assert wait_until(lambda: all_consumed([a, b, c], expected), 60), describe([a, b, c])
    assert b.terminate() == 0 and b.has_event("closed")
    assert external.peer_cover([a, c], PARTITIONS), describe([a, c])
    c.kill()  # no LeaveGroup: Kafka expires the session
    assert external.peer_cover([a], PARTITIONS), a.describe()
    expected |= external.produce(bootstrap, topic, 120, PARTITIONS, counts)
    assert wait_until(lambda: all_consumed([a, b, c], expected), 60), describe([a, b, c])
    assert external.commits_match(bootstrap, group, topic, PARTITIONS, counts)
    assert not any(m.errors for m in (a, b, c)), describe([a, b, c])


@pytest.mark.parametrize("leader", ["groupclient", "java"])
def test_mixed_range_group_with_every_client(kafka_broker: Any, peers: PeerSet, leader: str) -> None:
    """The first joiner leads: our assignment must be accepted by the Java follower and Java's by ours."""
    bootstrap = kafka_broker.bootstrap
    topic, group = external.new_topic(bootstrap, PARTITIONS), group_name()
    counts: Counter[int] = Counter()
    expected = external.produce(bootstrap, topic, 300, PARTITIONS, counts)
    first = peers.start(leader, bootstrap, group, topic)
    assert first.wait_for(lambda p: bool(p.assignment), 60), first.describe()
    others = [peers.start(kind, bootstrap, group, topic)
              for kind in ("groupclient", "kafka-python", "confluent", "java") if kind != leader]
    members = [first, *others]
    assert external.peer_cover(members, PARTITIONS, 90), describe(members)
    assert all(m.assignment for m in members), describe(members)
    expected |= external.produce(bootstrap, topic, 200, PARTITIONS, counts)
    assert wait_until(lambda: all_consumed(members, expected), 60), describe(members)
    assert external.commits_match(bootstrap, group, topic, PARTITIONS, counts)
    assert not any(m.errors for m in members), describe(members)


def test_mixed_cooperative_sticky_group(kafka_broker: Any, peers: PeerSet) -> None:
    """kafka-python, confluent-kafka and Java share incremental rebalances on Kafka.  groupclient
    has no cooperative-sticky assignor yet, so it is not in this group."""
    bootstrap = kafka_broker.bootstrap
    topic, group = external.new_topic(bootstrap, PARTITIONS), group_name()
    counts: Counter[int] = Counter()
    expected = external.produce(bootstrap, topic, 300, PARTITIONS, counts)
    members = [peers.start(kind, bootstrap, group, topic, "cooperative-sticky")
               for kind in ("java", "kafka-python", "confluent")]
    assert external.peer_cover(members, PARTITIONS, 90), describe(members)
    assert wait_until(lambda: all_consumed(members, expected), 60), describe(members)
    members[1].terminate()
    assert external.peer_cover([members[0], members[2]], PARTITIONS, 60), describe(members)
    assert external.commits_match(bootstrap, group, topic, PARTITIONS, counts)


def test_static_member_restart_without_rebalance_and_fencing(kafka_broker: Any, peers: PeerSet) -> None:
    bootstrap = kafka_broker.bootstrap
    topic, group = external.new_topic(bootstrap, 4), group_name()
    a = peers.start("groupclient", bootstrap, group, topic, instance_id="inst-a", session_ms=30000)
    b = peers.start("groupclient", bootstrap, group, topic, instance_id="inst-b", session_ms=30000)
    assert external.peer_cover([a, b], 4), describe([a, b])
    a_events = len([e for e in a.events if e["event"] in ("assigned", "revoked", "lost")])
    b_partitions = set(b.assignment)
    b.kill()
    b2 = peers.start("groupclient", bootstrap, group, topic, instance_id="inst-b", session_ms=30000)
    assert b2.wait_for(lambda p: p.assignment == b_partitions, 60), (b_partitions, b2.events, b2.describe())
    # no rebalance: the other member saw no revocation and no new assignment
    assert len([e for e in a.events if e["event"] in ("assigned", "revoked", "lost")]) == a_events
    counts: Counter[int] = Counter()
    expected = external.produce(bootstrap, topic, 80, 4, counts)
    assert wait_until(lambda: all_consumed([a, b2], expected), 60), describe([a, b2])
    # a second process with the same instance id fences the one that has it
    b3 = peers.start("groupclient", bootstrap, group, topic, instance_id="inst-b", session_ms=30000)
    assert b3.wait_for(lambda p: p.assignment == b_partitions, 60), b3.describe()
    external.produce(bootstrap, topic, 20, 4, counts)
    assert b2.wait_for(lambda p: bool(p.errors), 60), b2.describe()
    assert b2.errors[0]["type"] == "FatalGroupError" and "FENCED_INSTANCE_ID" in b2.errors[0]["message"]


def test_broker_restart_coordinator_rediscovery(peers: PeerSet) -> None:
    from tests.kafka.broker import KafkaBroker, missing_tools

    if missing_tools():
        pytest.skip("needs Java and Maven")
    with KafkaBroker() as broker:
        topic, group = external.new_topic(broker.bootstrap, 4), group_name()
        counts: Counter[int] = Counter()
        expected = external.produce(broker.bootstrap, topic, 100, 4, counts)
        members = [peers.start("groupclient", broker.bootstrap, group, topic) for _ in range(2)]
        assert external.peer_cover(members, 4), describe(members)
        assert wait_until(lambda: all_consumed(members, expected), 60), describe(members)
        broker.restart()  # connections drop; the coordinator must be found again
        expected |= external.produce(broker.bootstrap, topic, 100, 4, counts)
        assert wait_until(lambda: all_consumed(members, expected), 90), describe(members)
        assert external.peer_cover(members, 4), describe(members)
        assert external.commits_match(broker.bootstrap, group, topic, 4, counts)
        peers.stop_all()
        assert not any(m.errors for m in members), describe(members)
