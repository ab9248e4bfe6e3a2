"""Iteration: consumer_timeout_ms and StopIteration (ported from kafka-python's
test_kafka_consumer__blocking), the iterator after seek/seek_to_beginning/pause, after close."""

from __future__ import annotations

import time

import pytest
import kafka.errors as Errors
from kafka.structs import TopicPartition

from groupclient.coordinator import EmbeddedCluster

from .conftest import ConsumerFactory, iterate, new_topic, poll_until, unique

pytestmark = pytest.mark.integration

TIMEOUT_MS = 300


def test_consumer_timeout_ms_ends_iteration(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1)
    tp = TopicPartition(topic, 0)
    consumer = make_consumer(auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=TIMEOUT_MS)
    consumer.assign([tp])
    started = time.monotonic()
    with pytest.raises(StopIteration):
        next(consumer)  # nothing there: blocks consumer_timeout_ms
    assert TIMEOUT_MS / 1000 - 0.05 <= time.monotonic() - started < 3
    cluster.produce(topic, [b"%d" % i for i in range(10)])
    first = [next(consumer) for _ in range(5)]  # 10 available: no StopIteration
    assert [r.offset for r in first] == [0, 1, 2, 3, 4]
    rest = []
    started = time.monotonic()
    with pytest.raises(StopIteration):
        for _ in range(10):
            rest.append(next(consumer))
    assert [r.offset for r in rest] == [5, 6, 7, 8, 9]
    assert TIMEOUT_MS / 1000 - 0.05 <= time.monotonic() - started < 3


def test_for_loop_yields_everything_then_ends(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 2)
    consumer = make_consumer(topic, group_id=unique("group"), auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=500)
    assert poll_until(consumer, lambda: len(consumer.assignment()) == 2)  # join outside the timed part
    cluster.produce(topic, [b"%d" % i for i in range(10)])
    records = list(consumer)  # ends after consumer_timeout_ms without records
    assert sorted(r.value for r in records) == sorted(b"%d" % i for i in range(10))
    for p in (0, 1):
        assert [r.offset for r in records if r.partition == p] == [0, 1, 2, 3, 4]


def test_iterator_after_seek(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1, [b"%d" % i for i in range(10)])
    tp = TopicPartition(topic, 0)
    consumer = make_consumer(auto_offset_reset="earliest", consumer_timeout_ms=2000)
    consumer.assign([tp])
    assert [r.offset for r in iterate(consumer, 5)] == [0, 1, 2, 3, 4]
    consumer.seek(tp, 2)  # records fetched past 4 must not be yielded now
    assert [r.offset for r in iterate(consumer, 3)] == [2, 3, 4]
    consumer.seek(tp, 8)
    assert [r.offset for r in iterate(consumer, 2)] == [8, 9]


def test_iterator_after_seek_to_beginning(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1, [b"%d" % i for i in range(6)])
    tp = TopicPartition(topic, 0)
    consumer = make_consumer(auto_offset_reset="earliest", consumer_timeout_ms=2000)
    consumer.assign([tp])
    assert [r.offset for r in iterate(consumer, 4)] == [0, 1, 2, 3]
    consumer.seek_to_beginning(tp)
    assert [r.offset for r in iterate(consumer, 6)] == [0, 1, 2, 3, 4, 5]


def test_iteration_skips_a_paused_partition(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 2, [b"%d" % i for i in range(8)])
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    consumer = make_consumer(auto_offset_reset="earliest", consumer_timeout_ms=TIMEOUT_MS)
    consumer.assign([tp0, tp1])
    consumer.pause(tp1)
    first = list(consumer)
    assert [(r.partition, r.offset) for r in first] == [(0, i) for i in range(4)]
    consumer.resume(tp1)
    assert [(r.partition, r.offset) for r in consumer] == [(1, i) for i in range(4)]


def test_next_on_a_closed_consumer_stops_iteration(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """kafka-python: ``__next__`` of a closed consumer raises StopIteration, so a for loop over it
    simply ends."""
    topic = new_topic(cluster, 1, [b"x"])
    consumer = make_consumer(auto_offset_reset="earliest", consumer_timeout_ms=2000)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.close()
    with pytest.raises(StopIteration):
        next(consumer)
    assert list(consumer) == []


def test_poll_on_a_closed_consumer_raises_illegal_state(cluster: EmbeddedCluster,
                                                        make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1)
    consumer = make_consumer()
    consumer.assign([TopicPartition(topic, 0)])
    consumer.close()
    with pytest.raises(Errors.IllegalStateError):
        consumer.poll(timeout_ms=100)
    consumer.close()  # a second close is a no-op
