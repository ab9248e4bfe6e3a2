"""The event loop and the group: the library never blocks the loop (lag measured by a watchdog
coroutine during consumption and rebalances), and a member whose own code blocks the loop for
twice the session timeout keeps its partitions (aiokafka's member, whose heartbeats are a task on
the blocked loop, is removed from the group)."""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from typing import Any

import pytest

from groupclient.coordinator import EmbeddedCluster
from tests.aio_compat.conftest import AK, GA, LIBS, api_of

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

SESSION_MS = 2000


class LagWatchdog:
    """Wakes every millisecond and records how late each wake-up was (ms)."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            self.lags.append((time.perf_counter() - before) * 1000 - 1)

    def __enter__(self) -> LagWatchdog:
        self._task = asyncio.ensure_future(self._run())
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._task is not None
        self._task.cancel()

    def p99(self) -> float:
        return statistics.quantiles(self.lags, n=100)[98]


async def test_the_library_does_not_block_the_loop_while_consuming_and_rebalancing(
        quick_sessions: EmbeddedCluster) -> None:
    """fetch_max_wait_ms 1000, a join that waits for a second member, a leave: were any of them
    waited for on the loop, a wake-up would be a second late.  A trickle of records keeps fetches
    waiting on the broker."""
    api = api_of(GA)
    cluster = quick_sessions
    cluster.create_topic("lag", 4)
    stop = threading.Event()

    def trickle() -> None:
        sent = 0
        while not stop.is_set() and sent < 5000:
            cluster.produce("lag", [b"x" * 100] * 50)
            sent += 50
            stop.wait(0.02)
    producer = threading.Thread(target=trickle, daemon=True)
    producer.start()
    settings: dict[str, Any] = dict(bootstrap_servers=cluster.bootstrap_servers, group_id="lag-group",
                                    auto_offset_reset="earliest", fetch_max_wait_ms=1000,
                                    session_timeout_ms=SESSION_MS, heartbeat_interval_ms=300)
    got = 0
    try:
        with LagWatchdog() as watchdog:
            a = api.consumer_class("lag", **settings)
            await a.start()
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                got += sum(len(v) for v in (await a.getmany(timeout_ms=200)).values())
            b = api.consumer_class("lag", **settings)
            await b.start()
            deadline = time.monotonic() + 4
            while time.monotonic() < deadline:
                batches = await asyncio.gather(a.getmany(timeout_ms=200), b.getmany(timeout_ms=200))
                got += sum(len(v) for batch in batches for v in batch.values())
            assert a.assignment() and b.assignment()
            await b.stop()
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline:
                got += sum(len(v) for v in (await a.getmany(timeout_ms=200)).values())
            await a.stop()
    finally:
        stop.set()
        producer.join(10)
    assert got > 1000
    print(f"loop lag over {len(watchdog.lags)} wake-ups: p50 {statistics.median(watchdog.lags):.2f} ms, "
          f"p99 {watchdog.p99():.2f} ms, max {max(watchdog.lags):.2f} ms")
    assert max(watchdog.lags) < 500, sorted(watchdog.lags)[-10:]


@pytest.mark.parametrize("lib", LIBS)
async def test_difference_a_member_blocking_the_loop_for_two_sessions_keeps_its_partitions(
        quick_sessions: EmbeddedCluster, lib: str) -> None:
    """groupclient: the heartbeat thread runs while the loop is blocked (for less than
    max_poll_interval_ms), so the member, its generation and its partitions stay; nothing is
    revoked or lost.  aiokafka 0.14: its heartbeat task waits for the loop, the coordinator ends
    the session, the member is removed (a new generation) and rejoins."""
    api = api_of(lib)
    cluster = quick_sessions
    topic, group = f"blocked-{lib}", f"blocked-{lib}"
    cluster.create_topic(topic, 3)
    cluster.produce(topic, [b"before"] * 30)
    events: list[str] = []

    class Listener(api.listener_base):  # type: ignore[misc,name-defined]
        async def on_partitions_revoked(self, revoked: Any) -> None:
            events.append(f"revoked {len(revoked)}")

        async def on_partitions_assigned(self, assigned: Any) -> None:
            events.append(f"assigned {len(assigned)}")

        async def on_partitions_lost(self, lost: Any) -> None:
            events.append(f"lost {len(lost)}")

    consumer = api.consumer_class(bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                                  auto_offset_reset="earliest", session_timeout_ms=SESSION_MS,
                                  heartbeat_interval_ms=300, fetch_max_wait_ms=100, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.subscribe([topic], listener=Listener())
        got = 0
        for _ in range(100):
            got += sum(len(v) for v in (await consumer.getmany(timeout_ms=100)).values())
            if got >= 30:
                break
        assert got == 30
        generation = cluster.describe_group(group)["generation"]  # type: ignore[index]
        events.clear()
        time.sleep(2 * SESSION_MS / 1000)  # the application's code holds the loop: two sessions
        cluster.produce(topic, [b"after"] * 30)
        for _ in range(100):
            got += sum(len(v) for v in (await consumer.getmany(timeout_ms=100)).values())
            if got >= 60:
                break
        after = cluster.describe_group(group)["generation"]  # type: ignore[index]
        seen = list(events)  # before stop(), which revokes through the listener (groupclient)
    finally:
        await consumer.stop()
    if lib == AK:
        assert after > generation, (generation, after, seen)
    else:
        assert after == generation and seen == [], (generation, after, seen)
        assert got == 60  # and nothing came twice
