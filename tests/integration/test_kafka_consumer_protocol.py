"""The consumer group protocol (KIP-848) on the embedded coordinator and on Apache Kafka 4.4 (the
``kip848_bootstrap`` fixture runs each test on both, with the same settings): groupclient members
with confluent-kafka (librdkafka) and the Java KafkaConsumer, all ``group.protocol=consumer``, each
in its own process.  Every scenario checks, from the members' own timestamped reports, that no two
members owned a partition at the same instant, that every record was consumed, and that the
commits are exact."""

from __future__ import annotations

import re
import time
import uuid
from collections import Counter
from typing import Any

import pytest

from groupclient import GroupConsumer
from groupclient.consumer import consumer_protocol_driver
from groupclient.errors import FatalGroupError
from groupclient.structs import TopicPartition
from tests.integration import external
from tests.integration.ownership import double_ownership
from tests.integration.peers import Peer, PeerSet, all_consumed, holds_for, wait_until

pytestmark = pytest.mark.integration
PARTITIONS = 6


def group_name() -> str:
    return f"g848-{uuid.uuid4().hex[:6]}"


def describe(members: list[Peer]) -> list[str]:
    return [m.describe() for m in members]


def start(peers: PeerSet, kind: str, bootstrap: str, group: str, topic: str, **kwargs: Any) -> Peer:
    return peers.start(kind, bootstrap, group, topic, protocol="consumer", **kwargs)


def check_exclusive(members: list[Peer]) -> None:
    overlaps = double_ownership(members, time.monotonic())
    assert not overlaps, overlaps


def test_a_mixed_group_scales_out_and_in_leaves_and_dies_with_one_owner_at_every_instant(
        kip848_bootstrap: str, peers: PeerSet) -> None:
    bootstrap = kip848_bootstrap
    topic, group = external.new_topic(bootstrap, PARTITIONS), group_name()
    counts: Counter[int] = Counter()
    expected = external.produce(bootstrap, topic, 300, PARTITIONS, counts)
    members: list[Peer] = []
    # scale out one member at a time: each new one gets partitions only once their owner let go;
    # kafka-python speaks the classic protocol, a classic member of the consumer group
    for kind in ("groupclient", "confluent", "java", "kafka-python", "groupclient"):
        members.append(peers.start(kind, bootstrap, group, topic) if kind == "kafka-python"
                       else start(peers, kind, bootstrap, group, topic))
        assert external.peer_cover(members, PARTITIONS, 90), describe(members)
        expected |= external.produce(bootstrap, topic, 60, PARTITIONS, counts)
    assert wait_until(lambda: all_consumed(members, expected), 60), describe(members)
    gc1, ck, java, kp, gc2 = members
    # graceful leaves (epoch -1): the others take over at once
    assert gc2.terminate() == 0 and gc2.has_event("closed"), gc2.describe()
    assert ck.terminate() == 0, ck.describe()
    live = [gc1, java, kp]
    assert external.peer_cover(live, PARTITIONS, 60), describe(live)
    expected |= external.produce(bootstrap, topic, 120, PARTITIONS, counts)
    assert wait_until(lambda: all_consumed(members, expected), 60), describe(members)
    # SIGKILL: no leave; Kafka fences each member after its session (10 s here; the classic
    # member's own session timeout) and reassigns
    java.kill()
    kp.kill()
    assert external.peer_cover([gc1], PARTITIONS, 60), gc1.describe()
    expected |= external.produce(bootstrap, topic, 120, PARTITIONS, counts)
    assert wait_until(lambda: all_consumed(members, expected), 60), describe(members)
    assert external.commits_match(bootstrap, group, topic, PARTITIONS, counts)
    check_exclusive(members)
    assert not any(m.errors for m in members), describe(members)


def test_a_static_member_restarts_without_reassignment_and_a_duplicate_is_refused(
        kip848_bootstrap: str, peers: PeerSet) -> None:
    bootstrap = kip848_bootstrap
    topic, group = external.new_topic(bootstrap, 4), group_name()
    a = start(peers, "groupclient", bootstrap, group, topic, instance_id="inst-a")
    b = start(peers, "groupclient", bootstrap, group, topic, instance_id="inst-b")
    assert external.peer_cover([a, b], 4), describe([a, b])
    a_events = len([e for e in a.events if e["event"] in ("assigned", "revoked", "lost")])
    b_partitions = set(b.assignment)
    # a static member's close leaves with epoch -2: the broker keeps its partitions for it
    assert b.terminate() == 0, b.describe()
    b2 = start(peers, "groupclient", bootstrap, group, topic, instance_id="inst-b")
    assert b2.wait_for(lambda p: p.assignment == b_partitions, 60), (b_partitions, b2.describe())
    assert holds_for(lambda: len([e for e in a.events if e["event"] in ("assigned", "revoked", "lost")])
                     == a_events, 2), a.events
    counts: Counter[int] = Counter()
    expected = external.produce(bootstrap, topic, 80, 4, counts)
    assert wait_until(lambda: all_consumed([a, b2], expected), 60), describe([a, b2])
    # the same instance id while its holder is alive: refused (UNRELEASED_INSTANCE_ID), the holder goes on
    b3 = start(peers, "groupclient", bootstrap, group, topic, instance_id="inst-b")
    assert b3.wait_for(lambda p: bool(p.errors), 60), b3.describe()
    assert b3.errors[0]["type"] == "FatalGroupError" and "UNRELEASED_INSTANCE_ID" in b3.errors[0]["message"]
    assert "group_instance_id='inst-b'" in b3.errors[0]["message"], b3.errors
    expected |= external.produce(bootstrap, topic, 40, 4, counts)
    assert wait_until(lambda: all_consumed([a, b2], expected), 60), describe([a, b2])
    assert b2.assignment == b_partitions and not b2.errors
    check_exclusive([a, b, b2, b3])


def test_a_pattern_subscription_picks_up_a_new_topic(kip848_bootstrap: str) -> None:
    bootstrap = kip848_bootstrap
    prefix = f"pat{uuid.uuid4().hex[:6]}"
    first = f"{prefix}-a"
    external.create_topic(bootstrap, first, 2)
    consumer = GroupConsumer(bootstrap_servers=bootstrap, group_id=group_name(), group_protocol="consumer",
                             auto_offset_reset="earliest", metadata_max_age_ms=1000)
    try:
        consumer.subscribe(pattern=f"{prefix}-.*")
        deadline = time.monotonic() + 60
        while {tp.topic for tp in consumer.assignment()} != {first} and time.monotonic() < deadline:
            consumer.poll(200)
        assert consumer.assignment() == {TopicPartition(first, 0), TopicPartition(first, 1)}
        second = f"{prefix}-b"
        external.create_topic(bootstrap, second, 3)
        counts: Counter[int] = Counter()
        external.produce(bootstrap, second, 30, 3, counts)
        seen = 0
        while seen < 30 and time.monotonic() < deadline + 30:
            seen += sum(len(r) for tp, r in consumer.poll(200).items() if tp.topic == second)
        assert seen == 30
        assert {tp for tp in consumer.assignment() if tp.topic == second} == {TopicPartition(second, p) for p in range(3)}
    finally:
        consumer.close()


@pytest.mark.parametrize("setting, code, hint", [
    ({"group_remote_assignor": "nope"}, "UNSUPPORTED_ASSIGNOR", "group_remote_assignor='nope' is not one of"),
    ({"pattern": "t\\N{DIGIT ONE}"}, "INVALID_REGULAR_EXPRESSION", "RE2/J"),
])
def test_a_refusal_is_raised_once_from_poll_with_what_to_do(kip848_bootstrap: str, setting: dict[str, str],
                                                            code: str, hint: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    setting = dict(setting)  # the parameter is shared by both clusters
    pattern = setting.pop("pattern", None)
    if pattern is not None:
        # the consumer refuses what RE2/J does not compile before sending it (test_broker_regex.py);
        # the broker's refusal is what a broker whose RE2/J reads less than the consumer's check
        # would answer: the check is taken out to reach it (the pattern kept as literal text)
        monkeypatch.setattr(consumer_protocol_driver, "broker_regex", lambda pattern: pattern)
        monkeypatch.setattr(consumer_protocol_driver, "compile_re2j", lambda pattern: re.compile(re.escape(pattern)))
    consumer = GroupConsumer(bootstrap_servers=kip848_bootstrap, group_id=group_name(),
                             group_protocol="consumer", **setting)  # type: ignore[arg-type]
    try:
        if pattern is not None:
            consumer.subscribe(pattern=pattern)
        else:
            consumer.subscribe(["anything"])
        with pytest.raises(FatalGroupError) as refused:
            for _ in range(100):
                consumer.poll(100)
        assert code in str(refused.value) and hint in str(refused.value), str(refused.value)
        assert consumer.poll(100) == {}  # once: the member stays out, as Java's
        assert consumer.group_metadata().phase == "fatal"
    finally:
        consumer.close()


def test_a_member_busy_longer_than_the_session_keeps_its_partitions(kip848_bootstrap: str) -> None:
    """The heartbeat thread keeps the member in the group while the application processes for
    longer than the broker's session (10 s here) but within max_poll_interval_ms."""
    bootstrap = kip848_bootstrap
    topic = external.new_topic(bootstrap, 2)
    calls: list[str] = []

    class Listener:
        def on_partitions_assigned(self, assigned: Any) -> None:
            calls.append("assigned")

        def on_partitions_revoked(self, revoked: Any) -> None:
            calls.append("revoked")

        def on_partitions_lost(self, lost: Any) -> None:
            calls.append("lost")

    consumer = GroupConsumer(bootstrap_servers=bootstrap, group_id=group_name(), group_protocol="consumer",
                             max_poll_interval_ms=60_000)
    try:
        consumer.subscribe([topic], listener=Listener())
        deadline = time.monotonic() + 60
        while len(consumer.assignment()) != 2 and time.monotonic() < deadline:
            consumer.poll(100)
        epoch = consumer.group_metadata().generation_id
        while consumer._group.member.session.timeout_ms is None and time.monotonic() < deadline:  # type: ignore[union-attr]
            consumer.poll(100)
        assert consumer._group.member.session.timeout_ms == 10_000  # type: ignore[union-attr]  # the broker's setting
        before = list(calls)  # "assigned" once per target reconciled (twice if a topic id came late)
        assert set(before) == {"assigned"}, before
        time.sleep(13)  # busy: no poll() for longer than the session
        consumer.poll(100)
        assert calls == before and len(consumer.assignment()) == 2, calls
        assert consumer.group_metadata().generation_id == epoch
    finally:
        consumer.close()


@pytest.mark.kafka
def test_the_docs_example_runs_on_kafka(kafka_broker: Any) -> None:
    """The block "docs/consumer.md: from groupclient import GroupConsumer", as written but for the
    broker's address."""
    from tests.docs.blocks import all_blocks

    [block] = [b for b in all_blocks() if b.key == "docs/consumer.md: from groupclient import GroupConsumer"]
    if "orders" not in external.topics(kafka_broker.bootstrap):
        external.create_topic(kafka_broker.bootstrap, "orders", 3)
    counts: Counter[int] = Counter()
    expected = external.produce(kafka_broker.bootstrap, "orders", 30, 3, counts)
    namespace: dict[str, Any] = {}
    exec(block.text.replace("127.0.0.1:9092", kafka_broker.bootstrap), namespace)
    consumer = namespace["consumer"]
    try:
        seen: set[tuple[int, int]] = set()
        deadline = time.monotonic() + 60
        while not expected <= seen and time.monotonic() < deadline:
            seen |= {(r.partition, r.offset) for records in consumer.poll(200).values() for r in records}
        assert expected <= seen
        while consumer.group_metadata().phase != "stable" and time.monotonic() < deadline:
            consumer.poll(100)  # its acknowledgement may still wait for a heartbeat's answer
        assert consumer.group_metadata().phase == "stable" and consumer.group_metadata().generation_id > 0
        coordinator = consumer.metrics()["consumer-coordinator-metrics"]
        assert coordinator["heartbeat-total"] >= 2 and coordinator["rebalance-total"] >= 1, coordinator
    finally:
        consumer.close()


@pytest.mark.kafka
def test_the_group_survives_a_broker_restart(peers: PeerSet) -> None:
    from tests.kafka.broker import KafkaBroker, missing_tools

    if missing_tools():
        pytest.skip("needs Java and Maven")
    with KafkaBroker() as broker:
        topic, group = external.new_topic(broker.bootstrap, 4), group_name()
        counts: Counter[int] = Counter()
        expected = external.produce(broker.bootstrap, topic, 100, 4, counts)
        members = [start(peers, kind, broker.bootstrap, group, topic) for kind in ("groupclient", "groupclient")]
        assert external.peer_cover(members, 4), describe(members)
        assert wait_until(lambda: all_consumed(members, expected), 60), describe(members)
        broker.restart()  # connections drop; the coordinator must be found again, the epoch kept
        expected |= external.produce(broker.bootstrap, topic, 100, 4, counts)
        assert wait_until(lambda: all_consumed(members, expected), 90), describe(members)
        assert external.peer_cover(members, 4), describe(members)
        assert external.commits_match(broker.bootstrap, group, topic, 4, counts)
        peers.stop_all()
        check_exclusive(members)
        assert not any(m.errors for m in members), describe(members)
