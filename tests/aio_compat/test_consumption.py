"""Consuming: a group's records once each, getone() and async for, a pattern, a subset of the
partitions, pausing, and getmany() cancelled at any point (nothing lost, nothing twice)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from groupclient.coordinator import EmbeddedCluster
from tests.aio_compat.conftest import GA, Api, drain, new_topic, unique

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


def offsets(records: list[Any]) -> list[tuple[int, int]]:
    return sorted((r.partition, r.offset) for r in records)


async def test_a_group_member_gets_every_record_once(api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    topic = new_topic(cluster, 3, 90)
    consumer = make_consumer(topic, group_id=unique("g"), auto_offset_reset="earliest")
    await consumer.start()
    records = await drain(consumer, 90)
    assert len(records) == 90 and len(set(offsets(records))) == 90
    assert sorted(int(r.value) for r in records) == list(range(90))
    assert consumer.assignment() == {api.structs.TopicPartition(topic, p) for p in range(3)}
    assert consumer.subscription() == {topic}
    assert await consumer.getmany(timeout_ms=200) == {}


async def test_getone_then_async_for_continue_where_getmany_stopped(api: Api, cluster: EmbeddedCluster,
                                                                  make_consumer: Any) -> None:
    topic = new_topic(cluster, 1, 20)
    consumer = make_consumer(topic, group_id=unique("g"), auto_offset_reset="earliest")
    await consumer.start()
    first = await asyncio.wait_for(consumer.getone(), 10)
    batch = await consumer.getmany(timeout_ms=2000, max_records=4)
    rest = []
    async for record in consumer:
        rest.append(record)
        if len(rest) == 15:
            break
    got = [first.offset] + [r.offset for r in batch[api.structs.TopicPartition(topic, 0)]] + [r.offset for r in rest]
    assert got == list(range(20))
    assert await consumer.position(api.structs.TopicPartition(topic, 0)) == 20


async def test_max_records_bounds_a_batch(api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    topic = new_topic(cluster, 2, 40)
    consumer = make_consumer(topic, group_id=unique("g"), auto_offset_reset="earliest", max_poll_records=7)
    await consumer.start()
    sizes = []
    for _ in range(50):
        batch = await consumer.getmany(timeout_ms=200)
        if batch:
            sizes.append(sum(len(v) for v in batch.values()))
        if sum(sizes) >= 40:
            break
    assert sum(sizes) == 40 and max(sizes) <= 7
    assert sum(len(v) for v in (await consumer.getmany(timeout_ms=100, max_records=3)).values()) == 0


async def test_a_pattern_subscribes_to_the_matching_topics(api: Api, cluster: EmbeddedCluster,
                                                          make_consumer: Any) -> None:
    prefix = unique("pat")
    a, b = new_topic(cluster, 1, 5, prefix=prefix), new_topic(cluster, 2, 6, prefix=prefix)
    other = new_topic(cluster, 1, 5)
    consumer = make_consumer(group_id=unique("g"), auto_offset_reset="earliest")
    await consumer.start()
    consumer.subscribe(pattern=f"^{prefix}-.*")
    records = await drain(consumer, 11)
    assert sorted({r.topic for r in records}) == sorted({a, b}) and len(records) == 11
    assert consumer.subscription() == {a, b}
    assert other not in {tp.topic for tp in consumer.assignment()}


async def test_getmany_of_some_partitions_returns_only_theirs(api: Api, cluster: EmbeddedCluster,
                                                            make_consumer: Any) -> None:
    topic = new_topic(cluster, 2, 20)
    tp0, tp1 = api.structs.TopicPartition(topic, 0), api.structs.TopicPartition(topic, 1)
    consumer = make_consumer(auto_offset_reset="earliest")
    await consumer.start()
    consumer.assign([tp0, tp1])
    only0: list[Any] = []
    for _ in range(50):
        batch = await consumer.getmany(tp0, timeout_ms=100)
        assert set(batch) <= {tp0}
        only0 += batch.get(tp0, [])
        if len(only0) >= 10:
            break
    assert [r.offset for r in only0] == list(range(10))
    rest = await drain(consumer, 10)
    assert [(r.partition, r.offset) for r in rest] == [(1, o) for o in range(10)]


async def test_a_paused_partition_returns_nothing_until_resumed(api: Api, cluster: EmbeddedCluster,
                                                              make_consumer: Any) -> None:
    topic = new_topic(cluster, 2, 20)
    tp0, tp1 = api.structs.TopicPartition(topic, 0), api.structs.TopicPartition(topic, 1)
    consumer = make_consumer(auto_offset_reset="earliest")
    await consumer.start()
    consumer.assign([tp0, tp1])
    consumer.pause(tp0)
    assert consumer.paused() == {tp0}
    first = await drain(consumer, 10)
    assert {r.partition for r in first} == {1} and len(first) == 10
    assert await consumer.getmany(timeout_ms=300) == {}
    consumer.resume(tp0)
    assert consumer.paused() == set()
    second = await drain(consumer, 10)
    assert [(r.partition, r.offset) for r in second] == [(0, o) for o in range(10)]


@pytest.mark.parametrize("call", ["getmany", "getone"])
async def test_a_call_cancelled_at_any_await_point_loses_and_repeats_nothing(
        api: Api, cluster: EmbeddedCluster, make_consumer: Any, call: str) -> None:
    """A consume loop whose calls are cancelled after 0, 1, 2... 15 turns of the loop, so at
    every await point inside them, again and again: every record comes exactly once."""
    topic = new_topic(cluster, 3, 300)
    consumer = make_consumer(topic, group_id=unique("g"), auto_offset_reset="earliest", max_poll_records=1)
    await consumer.start()
    got: list[Any] = []
    cancelled = 0
    for attempt in range(2000):
        if len(got) >= 300:
            break
        task = asyncio.ensure_future(consumer.getone() if call == "getone" else consumer.getmany(timeout_ms=200))
        for _ in range(attempt % 16):
            await asyncio.sleep(0)
        if attempt % 3 != 2:  # every third call is let finish
            task.cancel()
        try:
            result = await task
        except asyncio.CancelledError:
            cancelled += 1
            continue
        got += [result] if not isinstance(result, dict) else [r for batch in result.values() for r in batch]
    got += await drain(consumer, 300 - len(got))
    # aiokafka prefetches everything, so few of its calls wait at all; groupclient's fetch one at a time
    assert cancelled >= (10 if api.lib == GA else 1), cancelled
    assert len(got) == 300 and len(set(offsets(got))) == 300
