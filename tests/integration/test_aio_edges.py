"""AsyncGroupConsumer at its edges: a revocation under way, a deserializer failing mid-batch,
stop() from a listener or during start(), unsubscribe() then assign(), position() with records
buffered, a partition-filtered getmany() loop, a listener task cancelled or calling getone()
through wait_for(), getmany(timeout_ms=0), slow handling of small batches.  Each was a defect."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from groupclient import RebalanceListenerError, RecordDeserializationError
from groupclient.aio import AsyncGroupConsumer, ConsumerRebalanceListener
from groupclient.aio.errors import ConsumerStoppedError, IllegalStateError
from groupclient.aio.fetch_jobs import FETCH_BATCHES
from groupclient.aio.structs import TopicPartition
from groupclient.coordinator import EmbeddedCluster
from tests.integration.test_aio_features import FAST

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]



def consumer(cluster: EmbeddedCluster, *topics: str, **settings: Any) -> AsyncGroupConsumer:
    return AsyncGroupConsumer(*topics, bootstrap_servers=cluster.bootstrap_servers, **{**FAST, **settings})


async def test_no_record_of_a_partition_being_revoked_is_handed_out_while_the_listener_runs(
        quick_sessions: EmbeddedCluster) -> None:
    """A task consumes while another member joins: from the moment the rebalance gives the
    partitions up (before its commit and on_partitions_revoked), none of theirs is handed out."""
    quick_sessions.create_topic("revoking", 2)
    quick_sessions.produce("revoking", [b"r"] * 20_000)
    handed: list[tuple[float, int]] = []
    revoking: list[float] = []

    class Slow(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
            if revoked:
                revoking.append(time.monotonic())
                await asyncio.sleep(0.5)  # the other task goes on asking for records meanwhile

    a = consumer(quick_sessions, group_id="revoking", max_poll_records=50, enable_auto_commit=True,
                 partition_assignment_strategy=["range"])
    await a.start()
    a.subscribe(["revoking"], listener=Slow())
    stop = asyncio.Event()

    async def consume() -> None:  # slowly, so that the buffer holds records when the rebalance comes
        while not stop.is_set():
            for records in (await a.getmany(timeout_ms=50, max_records=5)).values():
                handed.extend((time.monotonic(), r.partition) for r in records)
            await asyncio.sleep(0.01)
    task = asyncio.ensure_future(consume())
    b = consumer(quick_sessions, "revoking", group_id="revoking", max_poll_records=50, partition_assignment_strategy=["range"])
    try:
        while not handed:
            await asyncio.sleep(0.05)
        await b.start()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (b.assignment() and revoking and len(a.assignment()) == 1):
            await b.getmany(timeout_ms=100)
        assert revoking
        during = [p for t, p in handed if revoking[0] <= t <= revoking[0] + 0.5]
        assert during == [], f"{len(during)} records handed out while the partitions were being revoked"
    finally:
        stop.set()
        await task
        await asyncio.gather(a.stop(), b.stop())


async def test_a_deserializer_error_comes_after_the_records_before_it(quick_sessions: EmbeddedCluster) -> None:
    quick_sessions.create_topic("poison", 1)
    quick_sessions.produce("poison", [str(i).encode() if i != 5 else b"bad" for i in range(10)])
    tp = TopicPartition("poison", 0)

    def decode(value: bytes) -> int:
        return int(value)
    c = consumer(quick_sessions, group_id="poison", value_deserializer=decode, enable_auto_commit=False)
    await c.start()
    try:
        c.assign([tp])
        got: list[int] = []
        with pytest.raises(RecordDeserializationError) as raised:
            for _ in range(100):
                got += [r.value for r in (await c.getmany(timeout_ms=100)).get(tp, [])]
        assert got == [0, 1, 2, 3, 4] and raised.value.offset == 5
        c.seek(tp, 6)  # skip the bad record, as the error says
        for _ in range(100):
            got += [r.value for r in (await c.getmany(timeout_ms=100)).get(tp, [])]
            if len(got) == 9:
                break
        assert got == [0, 1, 2, 3, 4, 6, 7, 8, 9]
    finally:
        await c.stop()


async def test_small_batches_handled_slowly_keep_the_member_in_its_group(quick_sessions: EmbeddedCluster) -> None:
    """max_poll_interval_ms counts between the application's getone()/getmany() calls (aiokafka's
    rule), not between the consumer thread's fetches of several batches at a time."""
    quick_sessions.create_topic("slow", 1)
    quick_sessions.produce("slow", [b"s"] * 12)
    lost: list[Any] = []

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
            lost.append(partitions)

    c = consumer(quick_sessions, group_id="slow", max_poll_records=2, max_poll_interval_ms=1200, session_timeout_ms=6000)
    await c.start()
    try:
        c.subscribe(["slow"], listener=Listener())
        offsets = []
        for _ in range(12):
            record = await asyncio.wait_for(c.getone(), 10)
            offsets.append(record.offset)
            await asyncio.sleep(0.3)  # 0.6 s a batch of 2, 3.6 s for the 12
        assert offsets == list(range(12)) and lost == []
    finally:
        await c.stop()


async def test_stop_from_inside_a_listener_returns_and_the_consumer_stops(quick_sessions: EmbeddedCluster) -> None:
    quick_sessions.create_topic("stop-inside", 1)
    quick_sessions.produce("stop-inside", [b"x"] * 3)
    c = consumer(quick_sessions, group_id="stop-inside")

    class Stopping(ConsumerRebalanceListener):
        async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
            await c.stop()

    await c.start()
    c.subscribe(["stop-inside"], listener=Stopping())
    got = await asyncio.wait_for(_all([record async for record in c]), 15)
    assert got == [] or all(r.topic == "stop-inside" for r in got)
    await asyncio.wait_for(c.stop(), 15)
    with pytest.raises(ConsumerStoppedError):
        await c.getmany()


async def _all(records: list[Any]) -> list[Any]:
    return records


async def test_stop_while_starting_closes_what_start_built(quick_sessions: EmbeddedCluster) -> None:
    c = consumer(quick_sessions, "anything", group_id="stop-start")
    starting = asyncio.ensure_future(c.start())
    await asyncio.sleep(0)
    await asyncio.wait_for(c.stop(), 15)
    with pytest.raises(ConsumerStoppedError):
        await starting
    with pytest.raises(ConsumerStoppedError):
        await c.getmany()
    await c.stop()


async def test_unsubscribe_then_assign_or_subscribe_at_once(quick_sessions: EmbeddedCluster) -> None:
    quick_sessions.create_topic("switch", 2)
    quick_sessions.produce("switch", [b"w"] * 10)
    p0, p1 = TopicPartition("switch", 0), TopicPartition("switch", 1)
    c = consumer(quick_sessions, group_id="switch")
    await c.start()
    try:
        c.assign([p0])
        c.unsubscribe()
        c.assign([p1])
        assert c.assignment() == {p1}
        got = []
        for _ in range(50):
            got += [r.partition for rs in (await c.getmany(timeout_ms=100)).values() for r in rs]
            if len(got) == 5:
                break
        assert got == [1] * 5 and c.assignment() == {p1}
        c.unsubscribe()
        c.subscribe(["switch"])
        for _ in range(100):
            await c.getmany(timeout_ms=100)
            if c.assignment() == {p0, p1}:
                break
        assert c.assignment() == {p0, p1}
    finally:
        await c.stop()


async def test_position_is_the_next_record_handed_out_while_the_thread_fetches_ahead(
        quick_sessions: EmbeddedCluster) -> None:
    # a getmany() hands out what the buffer holds: up to two fetch jobs' worth (the one it waited
    # for and the one fetched ahead, 2 x FETCH_BATCHES x max_poll_records), and the getone() after
    # it one more. The topic holds more than every round can take, or the last getone() waits for
    # a record that will never come: with a fixed 25,000 records and jobs grown to 8 batches of
    # 500, four rounds of 8,001 took them all on a loaded machine (a CI run failed so).
    rounds, max_poll = 5, 100
    most_handed = 2 * FETCH_BATCHES * max_poll
    quick_sessions.create_topic("pos", 1)
    quick_sessions.produce("pos", [b"p"] * (rounds * (most_handed + 1) + 1))
    tp = TopicPartition("pos", 0)
    c = consumer(quick_sessions, group_id="pos", max_poll_records=max_poll)
    await c.start()
    try:
        c.assign([tp])
        for _ in range(rounds):  # everything buffered each time: the next fetch starts at once, ahead
            handed = (await c.getmany(timeout_ms=5000)).get(tp, [])
            assert 0 < len(handed) <= most_handed
            position = await c.position(tp)
            assert position == handed[-1].offset + 1
            assert (await asyncio.wait_for(c.getone(), 10)).offset == position
    finally:
        await c.stop()


async def test_a_partition_filtered_getmany_loop_does_not_buffer_the_other_partitions_without_end(
        quick_sessions: EmbeddedCluster) -> None:
    quick_sessions.create_topic("filtered", 2)
    quick_sessions.produce("filtered", [b"f" * 10] * 20_000, partition=1)
    quick_sessions.produce("filtered", [b"f" * 10] * 2_000, partition=0)
    p0, p1 = TopicPartition("filtered", 0), TopicPartition("filtered", 1)
    c = consumer(quick_sessions, group_id="filtered", max_poll_records=100)
    await c.start()
    try:
        c.assign([p0, p1])
        got = 0
        for _ in range(200):
            got += len((await c.getmany(p0, timeout_ms=50)).get(p0, []))
            if got == 2000:
                break
        assert got == 2000
        held = c._buffer.counts().get(p1, 0)  # noqa: SLF001  (what the consumer keeps in memory)
        assert held <= 2 * 4 * 100, held  # two fetch jobs' worth at most, not the 20,000
    finally:
        await c.stop()


async def test_a_listener_task_cancelled_or_awaiting_getone_through_wait_for(quick_sessions: EmbeddedCluster) -> None:
    quick_sessions.create_topic("guard", 1)
    quick_sessions.produce("guard", [b"g"] * 5)
    seen: list[str] = []

    class Guarded(ConsumerRebalanceListener):
        async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
            if not assigned:
                return
            try:
                await asyncio.wait_for(c.getone(), 5)  # a task of its own: still the listener's
            except IllegalStateError:
                seen.append("refused")
            asyncio.current_task().cancel()  # type: ignore[union-attr]
            await asyncio.sleep(1)

    c = consumer(quick_sessions, group_id="guard")
    await c.start()
    try:
        c.subscribe(["guard"], listener=Guarded())
        started = time.monotonic()
        with pytest.raises(RebalanceListenerError):
            for _ in range(100):
                await c.getmany(timeout_ms=100)
        assert seen == ["refused"] and time.monotonic() - started < 4
        assert len([r for _ in range(50) for rs in (await c.getmany(timeout_ms=100)).values() for r in rs]) >= 0
        assert c.assignment() == {TopicPartition("guard", 0)}
    finally:
        await c.stop()


async def test_getmany_with_no_time_returns_at_once(quick_sessions: EmbeddedCluster) -> None:
    quick_sessions.create_topic("instant", 1)
    c = consumer(quick_sessions, "instant", group_id="instant")
    await c.start()
    try:
        waiting = asyncio.ensure_future(c.getone())
        await asyncio.sleep(0.3)
        took = []
        for _ in range(5):
            started = time.monotonic()
            assert await c.getmany(timeout_ms=0) == {}
            took.append(time.monotonic() - started)
        assert max(took) < 0.05, took
        waiting.cancel()
    finally:
        await c.stop()
