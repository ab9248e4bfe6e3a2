"""The sync consumer's group features through AsyncGroupConsumer: static membership, SASL over
TLS, the poll-interval check dropping the partitions (records fetched before are not handed out
after, and on_partitions_lost runs on the loop), interceptors on the consumer thread, rebalance
events on the loop, metrics()."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from groupclient.aio import AsyncGroupConsumer, ConsumerRebalanceListener
from groupclient.aio.structs import TopicPartition
from groupclient.coordinator import EmbeddedCluster
from groupclient.coordinator.security import ListenerSecurity
from groupclient.testing.certificates import Certificates, make_certificates

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

FAST: dict[str, Any] = {"fetch_max_wait_ms": 100, "heartbeat_interval_ms": 300, "auto_offset_reset": "earliest"}


async def take(consumer: AsyncGroupConsumer, count: int, timeout_s: float = 15) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        for records in (await consumer.getmany(timeout_ms=100)).values():
            got += records
    return got


async def test_a_static_member_restarting_within_its_session_keeps_its_partitions(quick_sessions: EmbeddedCluster) -> None:
    quick_sessions.create_topic("static", 4)
    quick_sessions.produce("static", [b"x"] * 40)
    settings = dict(FAST, bootstrap_servers=quick_sessions.bootstrap_servers, group_id="static", session_timeout_ms=6000,
                    partition_assignment_strategy=["range"])
    a = AsyncGroupConsumer("static", group_instance_id="a", **settings)
    b = AsyncGroupConsumer("static", group_instance_id="b", **settings)
    await a.start()
    await b.start()
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not (len(a.assignment()) == 2 and len(b.assignment()) == 2):
            await asyncio.gather(a.getmany(timeout_ms=100), b.getmany(timeout_ms=100))
        owned = a.assignment()
        generation = quick_sessions.describe_group("static")["generation"]  # type: ignore[index]
        await a.stop()  # a static member does not leave: its partitions wait for it
        a = AsyncGroupConsumer("static", group_instance_id="a", **settings)
        await a.start()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and a.assignment() != owned:
            await asyncio.gather(a.getmany(timeout_ms=100), b.getmany(timeout_ms=100))
        assert a.assignment() == owned
        assert quick_sessions.describe_group("static")["generation"] == generation  # type: ignore[index]
    finally:
        await asyncio.gather(a.stop(), b.stop())


async def test_sasl_scram_over_tls(tmp_path_factory: pytest.TempPathFactory) -> None:
    certs: Certificates = make_certificates(tmp_path_factory.mktemp("certs"))
    security = ListenerSecurity("SASL_SSL", ssl_certfile=str(certs.server), users={"alice": "alice-secret"})
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0, security=security) as cluster:
        cluster.create_topic("secure", 2)
        cluster.produce("secure", [f"r{i}".encode() for i in range(20)])
        async with AsyncGroupConsumer("secure", bootstrap_servers=cluster.bootstrap_servers, group_id="secure",
                                      security_protocol="SASL_SSL", ssl_cafile=str(certs.ca),
                                      sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice",
                                      sasl_plain_password="alice-secret", enable_auto_commit=False,
                                      **FAST) as consumer:
            got = await take(consumer, 20)
            await consumer.commit()
        assert sorted(r.value for r in got) == sorted(f"r{i}".encode() for i in range(20))
        assert sum(cluster.committed_offsets("secure").values()) == 20


async def test_partitions_dropped_by_the_poll_interval_check_void_the_records_fetched_before(
        quick_sessions: EmbeddedCluster) -> None:
    """The heartbeat thread drops the partitions when no fetch came within max_poll_interval_ms;
    records already in the buffer are not handed out after that (the member has no right to them
    any more), on_partitions_lost runs on the loop, and consumption goes on from the commit."""
    quick_sessions.create_topic("interval", 1)
    quick_sessions.produce("interval", [str(i).encode() for i in range(50)])
    loop_thread = threading.get_ident()
    lost: list[tuple[set[TopicPartition], int]] = []

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
            lost.append((set(partitions), threading.get_ident()))

    consumer = AsyncGroupConsumer(bootstrap_servers=quick_sessions.bootstrap_servers, group_id="interval",
                                  enable_auto_commit=False, session_timeout_ms=6000, max_poll_interval_ms=1500,
                                  max_poll_records=10, **FAST)
    await consumer.start()
    try:
        consumer.subscribe(["interval"], listener=Listener())
        first = await consumer.getmany(timeout_ms=10_000, max_records=5)
        assert [r.offset for r in first[TopicPartition("interval", 0)]] == [0, 1, 2, 3, 4]
        await consumer.commit()
        await asyncio.sleep(3)  # no getmany(): the poll interval runs out; more records are buffered
        after = await take(consumer, 45)
    finally:
        await consumer.stop()
    assert lost and lost[0][0] == {TopicPartition("interval", 0)} and lost[0][1] == loop_thread
    assert [r.offset for r in after] == list(range(5, 50))  # from the commit, each once


async def test_interceptors_run_on_the_consumer_thread_and_rebalance_events_on_the_loop(
        quick_sessions: EmbeddedCluster) -> None:
    quick_sessions.create_topic("hooks", 2)
    quick_sessions.produce("hooks", [b"h"] * 10)
    loop_thread = threading.get_ident()
    consumed_on: set[int] = set()
    events: list[tuple[Any, int]] = []

    class Interceptor:
        def on_consume(self, records: Any) -> Any:
            consumed_on.add(threading.get_ident())
            return records

        def on_commit(self, offsets: Any) -> None:
            pass

        def close(self) -> None:
            pass

    consumer = AsyncGroupConsumer("hooks", bootstrap_servers=quick_sessions.bootstrap_servers, group_id="hooks",
                                  interceptors=[Interceptor()],
                                  rebalance_event_callback=lambda event: events.append((event, threading.get_ident())),
                                  **FAST)
    async with consumer:
        assert len(await take(consumer, 10)) == 10
        metrics = consumer.metrics()
        assert metrics is not None
        assert metrics["consumer-fetch-manager-metrics"]["records-consumed-total"] >= 10
        assert consumer.group_metadata().member_id
    assert consumed_on and loop_thread not in consumed_on
    assert events and {thread for _, thread in events} == {loop_thread}
    assert events[0][0].assigned == {TopicPartition("hooks", 0), TopicPartition("hooks", 1)}


async def test_a_consumer_protocol_group_lives_in_the_background(kip848_bootstrap: str) -> None:
    """KIP-848 (group_protocol='consumer'), on the embedded coordinator and on Apache Kafka: start()
    returns once the first assignment is reconciled (a new topic's partitions may come in a second
    one: both brokers first answer an empty target), a second member gets its share and the first
    gives it up without either fetching, and a listener hears it all."""
    topic, group = f"bg848-{uuid.uuid4().hex[:8]}", f"bg848-g-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=kip848_bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 4, 1)])
    finally:
        admin.close()
    heard: list[tuple[str, frozenset[int]]] = []

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked: Any) -> None:
            heard.append(("revoked", frozenset(tp.partition for tp in revoked)))

        async def on_partitions_assigned(self, assigned: Any) -> None:
            heard.append(("assigned", frozenset(tp.partition for tp in assigned)))

    settings = dict(bootstrap_servers=kip848_bootstrap, group_id=group, group_protocol="consumer")
    first = AsyncGroupConsumer(**settings)
    first.subscribe([topic], listener=Listener())
    second = AsyncGroupConsumer(topic, **settings)
    try:
        await asyncio.wait_for(first.start(), 60)
        assert heard and heard[0][0] == "assigned", heard
        assert await waited(lambda: len(first.assignment()) == 4), first.assignment()
        await asyncio.wait_for(second.start(), 60)
        assert await waited(lambda: len(first.assignment()) == len(second.assignment()) == 2), (
            first.assignment(), second.assignment())
        assert not first.assignment() & second.assignment()
        assert ("assigned", frozenset({0, 1, 2, 3})) in heard, heard
        assert any(kind == "revoked" and len(moved) == 2 for kind, moved in heard), heard
    finally:
        await second.stop()
        await first.stop()


async def waited(condition: Any, timeout_s: float = 60) -> bool:
    """Sleep (no fetching) until ``condition()`` holds or ``timeout_s`` passed."""
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return bool(condition())
