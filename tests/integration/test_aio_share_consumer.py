"""groupclient.aio.AsyncShareConsumer on the embedded coordinator and on Apache Kafka 4.4: the
ShareConsumer's calls as coroutines, the event loop never blocked by them (a poll that waits
leaves the loop running other tasks), and the acknowledgement commit callback run on the loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from groupclient import AcknowledgeType
from groupclient.aio import AsyncShareConsumer
from groupclient.structs import TopicPartition
from tests.integration import test_share_consumer
from tests.integration.test_share_consumer import Cluster

cluster = test_share_consumer.cluster  # the fixture: both clusters

A = AcknowledgeType


async def drain(consumer: AsyncShareConsumer[bytes, bytes], wanted: int, timeout_s: float = 40,
                acknowledge: bool = False) -> list[Any]:
    got: list[Any] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while len(got) < wanted and loop.time() < deadline:
        for records in (await consumer.poll(timeout_ms=200)).values():
            got += records
            if acknowledge:
                for record in records:
                    await consumer.acknowledge(record)
    return got


def test_records_come_as_coroutines_and_a_waiting_poll_leaves_the_loop_free(cluster: Cluster) -> None:
    topic, group = cluster.share_topic(20)

    async def main() -> None:
        async with AsyncShareConsumer(topic, bootstrap_servers=cluster.bootstrap_servers, group_id=group) as consumer:
            got = await drain(consumer, 20)
            assert sorted(r.offset for r in got) == list(range(20)) and {r.delivery_count for r in got} == {1}
            assert set((await consumer.commit_sync()).values()) == {None}
            ticks = 0

            async def tick() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            ticker = asyncio.create_task(tick())
            assert await consumer.poll(timeout_ms=1000) == {}  # nothing left: it waits its full second
            ticker.cancel()
            assert ticks >= 20  # the loop ran other tasks meanwhile
            assert await consumer.acquisition_lock_timeout_ms() == 30000

    asyncio.run(main())


def test_explicit_acknowledgements_and_the_callback_on_the_loop(cluster: Cluster) -> None:
    topic, group = cluster.share_topic(3)
    calls: list[tuple[dict[TopicPartition, set[int]], Any, bool]] = []

    async def main() -> None:
        loop_thread = threading.get_ident()

        async def callback(offsets: dict[TopicPartition, set[int]], error: Exception | None) -> None:
            calls.append((offsets, error, threading.get_ident() == loop_thread))

        async with AsyncShareConsumer(topic, bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                                      share_acknowledgement_mode="explicit",
                                      acknowledgement_commit_callback=callback) as consumer:
            got = await drain(consumer, 3)
            await consumer.acknowledge(got[0], A.RELEASE)
            for record in got[1:]:
                await consumer.acknowledge(record)
            assert await consumer.commit_sync() == {TopicPartition(topic, 0): None}
            again = await drain(consumer, 1, acknowledge=True)
            assert [(r.offset, r.delivery_count) for r in again] == [(0, 2)]
            await consumer.commit_sync()

    asyncio.run(main())
    assert calls[0] == ({TopicPartition(topic, 0): {0, 1, 2}}, None, True)
    assert all(on_loop for _, _, on_loop in calls)
