"""GroupConsumer on Tansu, a Kafka-compatible broker written in Rust (a peer we do not control).

Tansu quirks (see DEVELOPERS.md): it holds JoinGroup for half the session timeout, and its
ListOffsets LATEST is wrong, so expected offsets come from what the producer was told.
"""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from benchmarks.brokers import BrokerProcess
from tests.integration import external
from tests.integration.peers import Peer, PeerSet, all_consumed, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.tansu]
PARTITIONS = 4


def new_topic(broker: BrokerProcess) -> str:
    return external.new_topic(broker.bootstrap, PARTITIONS)


def produce(broker: BrokerProcess, topic: str, count: int, counts: Counter[int]) -> set[tuple[int, int]]:
    return external.produce(broker.bootstrap, topic, count, PARTITIONS, counts)


def peer_cover(members: list[Peer], timeout_s: float = 60) -> bool:
    return external.peer_cover(members, PARTITIONS, timeout_s)


def committed(broker: BrokerProcess, group: str, topic: str) -> dict[int, int | None]:
    return external.committed(broker.bootstrap, group, topic, PARTITIONS)


def test_group_consumers_on_tansu(tansu_broker: BrokerProcess, peers: PeerSet) -> None:
    topic, group = new_topic(tansu_broker), f"g-{uuid.uuid4().hex[:6]}"
    counts: Counter[int] = Counter()
    expected = produce(tansu_broker, topic, 200, counts)
    members = [peers.start("groupclient", tansu_broker.bootstrap, group, topic) for _ in range(3)]
    assert peer_cover(members), [m.describe() for m in members]
    assert wait_until(lambda: all_consumed(members, expected), 60), [m.describe() for m in members]

    # leave, then SIGKILL: the survivors take over every partition each time
    b, c = members[1], members[2]
    assert b.terminate() == 0
    assert peer_cover([members[0], c]), [m.describe() for m in members]
    c.kill()
    assert peer_cover([members[0]]), members[0].describe()
    expected |= produce(tansu_broker, topic, 100, counts)
    assert wait_until(lambda: all_consumed(members, expected), 60), [m.describe() for m in members]
    assert wait_until(lambda: committed(tansu_broker, group, topic) == {p: counts[p] for p in range(PARTITIONS)}, 30)
    assert not any(m.errors for m in members)


def test_mixed_with_kafka_python_on_tansu(tansu_broker: BrokerProcess, peers: PeerSet) -> None:
    topic, group = new_topic(tansu_broker), f"g-{uuid.uuid4().hex[:6]}"
    counts: Counter[int] = Counter()
    expected = produce(tansu_broker, topic, 200, counts)
    members = [peers.start(kind, tansu_broker.bootstrap, group, topic)
               for kind in ("groupclient", "groupclient", "kafka-python")]
    assert peer_cover(members), [m.describe() for m in members]
    assert wait_until(lambda: all_consumed(members, expected), 60), [m.describe() for m in members]
    assert wait_until(lambda: committed(tansu_broker, group, topic) == {p: counts[p] for p in range(PARTITIONS)}, 30)
    assert not any(m.errors for m in members), [m.describe() for m in members]


def test_member_exceeding_max_poll_interval_on_tansu(tansu_broker: BrokerProcess, peers: PeerSet) -> None:
    topic, group = new_topic(tansu_broker), f"g-{uuid.uuid4().hex[:6]}"
    counts: Counter[int] = Counter()
    fast = peers.start("groupclient", tansu_broker.bootstrap, group, topic)
    slow = peers.start("groupclient", tansu_broker.bootstrap, group, topic,
                       extra=["--max-poll-interval-ms", "4000", "--stall-after", "1", "--stall-ms", "9000"])
    assert peer_cover([fast, slow]), [fast.describe(), slow.describe()]
    expected = produce(tansu_broker, topic, 200, counts)
    assert slow.wait_for(lambda p: p.has_event("stalled"), 40), slow.describe()
    assert next(e for e in slow.events if e["event"] == "stalled")["assignment"] == []
    assert slow.wait_for(lambda p: p.has_event("lost"), 30), slow.describe()
    assert peer_cover([fast, slow]), [fast.describe(), slow.describe()]
    expected |= produce(tansu_broker, topic, 100, counts)
    assert wait_until(lambda: all_consumed([fast, slow], expected), 60), [fast.describe(), slow.describe()]
    assert wait_until(lambda: committed(tansu_broker, group, topic) == {p: counts[p] for p in range(PARTITIONS)}, 30)
