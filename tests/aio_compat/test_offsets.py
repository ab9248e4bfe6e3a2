"""Offsets: every commit form aiokafka takes, committed(), auto-commit, positions and every seek,
and the cluster queries (end, beginning, by time, partitions, topics, high watermark)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from groupclient.coordinator import EmbeddedCluster
from tests.aio_compat.conftest import Api, drain, new_topic, unique

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def test_every_commit_form(api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    topic = new_topic(cluster, 3, 30)
    tp0, tp1, tp2 = (api.structs.TopicPartition(topic, p) for p in range(3))
    group = unique("g")
    consumer = make_consumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    assert len(await drain(consumer, 30)) == 30
    assert await consumer.committed(tp0) is None
    await consumer.commit({tp0: 5})
    await consumer.commit({tp1: (7, "seven")})
    await consumer.commit({tp2: api.structs.OffsetAndMetadata(3, "three")})
    assert [await consumer.committed(tp) for tp in (tp0, tp1, tp2)] == [5, 7, 3]
    await consumer.commit()  # what was returned: everything
    assert [await consumer.committed(tp) for tp in (tp0, tp1, tp2)] == [10, 10, 10]
    assert cluster.committed_offsets(group) == {(topic, p): 10 for p in range(3)}


async def test_commit_covers_only_what_was_returned(api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    topic = new_topic(cluster, 1, 50)
    tp = api.structs.TopicPartition(topic, 0)
    consumer = make_consumer(topic, group_id=unique("g"), auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    batch = await consumer.getmany(timeout_ms=5000, max_records=12)
    assert [r.offset for r in batch[tp]] == list(range(12))
    await consumer.commit()
    assert await consumer.committed(tp) == 12
    assert await consumer.position(tp) == 12


async def test_auto_commit_commits_what_was_consumed_on_stop(api: Api, cluster: EmbeddedCluster,
                                                             make_consumer: Any) -> None:
    topic = new_topic(cluster, 2, 40)
    group = unique("g")
    consumer = make_consumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=True,
                             auto_commit_interval_ms=100)
    await consumer.start()
    assert len(await drain(consumer, 40)) == 40
    await consumer.stop()
    assert cluster.committed_offsets(group) == {(topic, 0): 20, (topic, 1): 20}


async def test_a_restarted_member_goes_on_from_the_commit(api: Api, cluster: EmbeddedCluster,
                                                          make_consumer: Any) -> None:
    topic = new_topic(cluster, 1, 30)
    group = unique("g")
    first = make_consumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
    await first.start()
    tp = api.structs.TopicPartition(topic, 0)
    assert [r.offset for r in (await first.getmany(timeout_ms=5000, max_records=10))[tp]] == list(range(10))
    await first.commit()
    await first.stop()
    second = make_consumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
    await second.start()
    assert [r.offset for r in await drain(second, 20)] == list(range(10, 30))


async def test_positions_and_seeks(api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    topic = new_topic(cluster, 1, 20)
    tp = api.structs.TopicPartition(topic, 0)
    group = unique("g")
    consumer = make_consumer(group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    consumer.assign([tp])
    assert consumer.assignment() == {tp}
    assert await consumer.position(tp) == 0
    assert len(await drain(consumer, 20)) == 20
    assert await consumer.position(tp) == 20
    consumer.seek(tp, 5)
    assert await consumer.position(tp) == 5
    assert (await consumer.getone()).offset == 5
    await consumer.seek_to_beginning(tp)
    assert await consumer.position(tp) == 0
    assert (await consumer.getone()).offset == 0
    await consumer.seek_to_end(tp)
    assert await consumer.position(tp) == 20
    await consumer.commit({tp: 13})
    await consumer.seek_to_committed(tp)
    assert await consumer.position(tp) == 13
    assert (await consumer.getone()).offset == 13


async def test_cluster_queries(api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    before = int(time.time() * 1000) - 1
    topic = new_topic(cluster, 2, 20)
    tp0, tp1 = api.structs.TopicPartition(topic, 0), api.structs.TopicPartition(topic, 1)
    consumer = make_consumer(auto_offset_reset="earliest")
    await consumer.start()
    assert topic in await consumer.topics()
    assert await consumer.end_offsets([tp0, tp1]) == {tp0: 10, tp1: 10}
    assert await consumer.beginning_offsets([tp0, tp1]) == {tp0: 0, tp1: 0}
    found = await consumer.offsets_for_times({tp0: before, tp1: int(time.time() * 1000) + 60_000})
    assert found[tp0].offset == 0 and found[tp1] is None
    consumer.assign([tp0])
    assert consumer.highwater(tp0) is None
    assert len(await drain(consumer, 10)) == 10
    assert consumer.highwater(tp0) == 10
    assert consumer.partitions_for_topic(topic) == {0, 1}  # known once the topic's metadata came
    assert consumer.partitions_for_topic(unique("nope")) is None
    assert consumer.last_stable_offset(tp0) == 10
    assert consumer.last_poll_timestamp(tp0) >= before
