"""Positions and offsets: seek*, position, highwater, pause/resume, beginning/end offsets,
offsets_for_times, commit/commit_async/committed (ported in part from kafka-python's
test/integration/test_consumer_integration.py).

Deliberate differences: ``test_difference_commit_async_future_completes_on_the_polling_thread``."""

from __future__ import annotations

import threading
import time

import pytest
import kafka.errors as Errors
from kafka.structs import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition

from groupclient.coordinator import EmbeddedCluster

from .conftest import KP, ConsumerFactory, drain, new_topic, poll_until, unique

pytestmark = pytest.mark.integration


def test_seek_moves_the_next_fetch(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1, [b"%d" % i for i in range(10)])
    tp = TopicPartition(topic, 0)
    consumer = make_consumer(auto_offset_reset="earliest")
    consumer.assign([tp])
    assert [r.offset for r in drain(consumer, 10)] == list(range(10))
    assert consumer.position(tp, timeout_ms=5000) == 10
    consumer.seek(tp, 7)
    assert consumer.position(tp, timeout_ms=5000) == 7
    assert [r.offset for r in drain(consumer, 3)] == [7, 8, 9]
    consumer.seek(tp, 2)
    assert [r.offset for r in drain(consumer, 2, max_records=2)] == [2, 3]


def test_seek_to_beginning_and_end(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 2, [b"%d" % i for i in range(8)])
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    consumer = make_consumer(auto_offset_reset="earliest")
    consumer.assign([tp0, tp1])
    assert len(drain(consumer, 8)) == 8
    consumer.seek_to_beginning(tp0)
    assert consumer.position(tp0, timeout_ms=5000) == 0 and consumer.position(tp1, timeout_ms=5000) == 4
    assert sorted(r.offset for r in drain(consumer, 4)) == [0, 1, 2, 3]
    consumer.seek_to_beginning()  # no argument: every assigned partition
    assert (consumer.position(tp0, timeout_ms=5000), consumer.position(tp1, timeout_ms=5000)) == (0, 0)
    consumer.seek_to_end()
    assert (consumer.position(tp0, timeout_ms=5000), consumer.position(tp1, timeout_ms=5000)) == (4, 4)
    assert drain(consumer, 1, timeout_s=0.5) == []


def test_position_after_seek_to_end_without_poll(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """Ported from kafka-python: position() itself resolves a pending reset."""
    topic = new_topic(cluster, 1, [b"%d" % i for i in range(10)])
    tp = TopicPartition(topic, 0)
    consumer = make_consumer(enable_auto_commit=False)
    consumer.assign([tp])
    consumer.seek_to_end(tp)
    assert consumer.position(tp, timeout_ms=5000) == 10


def test_highwater_is_none_until_a_fetch_answered(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1, [b"%d" % i for i in range(5)])
    tp = TopicPartition(topic, 0)
    consumer = make_consumer(auto_offset_reset="earliest")
    consumer.assign([tp])
    assert consumer.highwater(tp) is None
    assert consumer.position(tp, timeout_ms=5000) == 0
    assert consumer.highwater(tp) is None  # ListOffsets does not set it, only a fetch answer does
    drain(consumer, 5)
    assert consumer.highwater(tp) == 5
    cluster.produce(topic, [b"more"] * 2)
    assert poll_until(consumer, lambda: consumer.highwater(tp) == 7, timeout_s=5)


def test_position_and_highwater_of_an_unassigned_partition_raise_illegal_state(
        cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 2)
    consumer = make_consumer()
    consumer.assign([TopicPartition(topic, 0)])
    other = TopicPartition(topic, 1)
    started = time.monotonic()
    with pytest.raises(Errors.IllegalStateError):
        consumer.position(other, timeout_ms=1000)
    with pytest.raises(Errors.IllegalStateError):
        consumer.highwater(other)
    assert time.monotonic() - started < 0.5, "raised at once, without waiting for the timeout"


def test_seek_of_an_unassigned_partition_raises_value_error(cluster: EmbeddedCluster,
                                                            make_consumer: ConsumerFactory) -> None:
    """kafka-python documents ``ValueError`` for seek(), seek_to_beginning() and seek_to_end() of a
    partition that is not assigned (and for the no-argument forms when nothing is assigned)."""
    topic = new_topic(cluster, 2)
    consumer = make_consumer()
    other = TopicPartition(topic, 1)
    with pytest.raises(ValueError):
        consumer.seek_to_beginning()  # nothing assigned
    with pytest.raises(ValueError):
        consumer.seek_to_end()
    consumer.assign([TopicPartition(topic, 0)])
    with pytest.raises(ValueError):
        consumer.seek(other, 0)
    with pytest.raises(ValueError):
        consumer.seek_to_beginning(other)
    with pytest.raises(ValueError):
        consumer.seek_to_end(other)


def test_seek_to_a_negative_offset_raises_value_error(cluster: EmbeddedCluster,
                                                      make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1)
    tp = TopicPartition(topic, 0)
    consumer = make_consumer()
    consumer.assign([tp])
    with pytest.raises(ValueError):
        consumer.seek(tp, -1)


def test_pause_resume_and_paused(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """Ported from kafka-python's test_paused, plus what pausing does to poll()."""
    topic = new_topic(cluster, 2, [b"%d" % i for i in range(10)])
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    consumer = make_consumer(auto_offset_reset="earliest")
    consumer.assign([tp0, tp1])
    assert consumer.paused() == set()
    consumer.pause(tp1)
    assert consumer.paused() == {tp1}
    records = drain(consumer, 5)
    assert {r.partition for r in records} == {0} and len(records) == 5
    assert drain(consumer, 1, timeout_s=0.5) == []  # partition 1 stays paused
    consumer.resume(tp1)
    assert consumer.paused() == set()
    assert sorted(r.offset for r in drain(consumer, 5) if r.partition == 1) == list(range(5))
    consumer.pause(tp0, tp1)
    assert consumer.paused() == {tp0, tp1}
    consumer.unsubscribe()
    assert consumer.paused() == set()


def test_beginning_and_end_offsets_do_not_need_an_assignment(cluster: EmbeddedCluster,
                                                            make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 3)
    cluster.produce(topic, [b"x"] * 4, partition=0)
    cluster.produce(topic, [b"y"] * 1, partition=2)
    tps = [TopicPartition(topic, p) for p in range(3)]
    consumer = make_consumer()
    assert consumer.beginning_offsets(tps) == {tp: 0 for tp in tps}
    assert consumer.end_offsets(tps) == {tps[0]: 4, tps[1]: 0, tps[2]: 1}
    assert consumer.assignment() == set()


def test_offsets_for_times(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """Ported from kafka-python's test_kafka_consumer_offsets_for_time and ..._search_many_partitions."""
    late = int(time.time()) * 1000
    middle, early = late - 1000, late - 2000
    topic = new_topic(cluster, 2)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    cluster.produce(topic, [b"first"], partition=0, timestamp_ms=early)
    cluster.produce(topic, [b"last"], partition=0, timestamp_ms=late)
    cluster.produce(topic, [b"other"], partition=1, timestamp_ms=middle)
    consumer = make_consumer()
    found = consumer.offsets_for_times({tp0: early})
    assert found == {tp0: OffsetAndTimestamp(0, early, -1)}
    assert type(found[tp0]) is OffsetAndTimestamp
    assert consumer.offsets_for_times({tp0: middle})[tp0][:2] == (1, late)
    assert consumer.offsets_for_times({tp0: late})[tp0][:2] == (1, late)
    assert consumer.offsets_for_times({tp0: 0})[tp0][:2] == (0, early)
    assert consumer.offsets_for_times({tp0: 9999999999999}) == {tp0: None}
    assert consumer.offsets_for_times({}) == {}
    both = consumer.offsets_for_times({tp0: middle, tp1: middle})
    assert {tp: (o.offset, o.timestamp) for tp, o in both.items()} == {tp0: (1, late), tp1: (0, middle)}


def test_offsets_for_times_errors(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """Ported from kafka-python's test_kafka_consumer_offsets_for_times_errors."""
    topic = new_topic(cluster, 1)
    consumer = make_consumer(request_timeout_ms=1000)
    with pytest.raises(ValueError):
        consumer.offsets_for_times({TopicPartition(topic, 0): -1})
    started = time.monotonic()
    with pytest.raises(Errors.KafkaTimeoutError):
        consumer.offsets_for_times({TopicPartition(topic, 100): 0}, timeout_ms=500)
    assert time.monotonic() - started < 3


def test_commit_offsets_and_committed_with_metadata(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 2, [b"%d" % i for i in range(10)])
    group = unique("group")
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    consumer = make_consumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
    # a subscribed consumer commits as a member of the group: join first (both clients raise
    # CommitFailedError for a commit before the first join)
    assert poll_until(consumer, lambda: len(consumer.assignment()) == 2)
    assert consumer.committed(tp0, timeout_ms=5000) is None
    assert consumer.committed(tp0, metadata=True, timeout_ms=5000) is None
    consumer.commit({tp0: OffsetAndMetadata(4, "note", -1)}, timeout_ms=5000)
    assert consumer.committed(tp0, timeout_ms=5000) == 4
    committed = consumer.committed(tp0, metadata=True, timeout_ms=5000)
    assert type(committed) is OffsetAndMetadata and (committed.offset, committed.metadata) == (4, "note")
    assert consumer.committed(tp1, timeout_ms=5000) is None
    assert cluster.committed_offsets(group) == {(topic, 0): 4}


def test_commit_without_offsets_commits_the_consumed_positions(cluster: EmbeddedCluster,
                                                               make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 2, [b"%d" % i for i in range(10)])
    group = unique("group")
    consumer = make_consumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
    assert len(drain(consumer, 10)) == 10
    consumer.commit(timeout_ms=5000)
    assert cluster.committed_offsets(group) == {(topic, 0): 5, (topic, 1): 5}
    assert consumer.committed(TopicPartition(topic, 1), timeout_ms=5000) == 5


def test_commit_async_runs_the_callback_and_completes_the_future(cluster: EmbeddedCluster,
                                                                 make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1, [b"%d" % i for i in range(5)])
    group = unique("group")
    tp = TopicPartition(topic, 0)
    consumer = make_consumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
    assert len(drain(consumer, 5)) == 5
    calls: list[tuple[dict, object]] = []
    future = consumer.commit_async(callback=lambda offsets, response: calls.append((offsets, response)))
    assert poll_until(consumer, lambda: bool(calls), timeout_s=5)
    assert len(calls) == 1
    offsets, response = calls[0]
    assert {t: o.offset for t, o in offsets.items()} == {tp: 5}
    assert not isinstance(response, Exception)
    assert future.is_done is True  # kafka.future.Future: an attribute, not a method
    assert future.succeeded() and not future.failed()
    assert cluster.committed_offsets(group) == {(topic, 0): 5}
    done = consumer.commit_async({tp: OffsetAndMetadata(2, "explicit", -1)})
    assert poll_until(consumer, lambda: future.is_done is True and done.is_done is True, timeout_s=5)
    assert consumer.committed(tp, metadata=True, timeout_ms=5000)[:2] == (2, "explicit")


def test_difference_commit_async_future_completes_on_the_polling_thread(
        lib: str, cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """kafka-python completes the future (and runs its callbacks) on its IO thread as soon as the
    answer comes; groupclient completes it on the thread that owns the consumer, from its next
    poll(), commit() or close(), as it runs the commit callback: no user code on the heartbeat
    thread."""
    topic = new_topic(cluster, 1, [b"%d" % i for i in range(3)])
    group = unique("group")
    tp = TopicPartition(topic, 0)
    consumer = make_consumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
    assert len(drain(consumer, 3)) == 3
    application = threading.current_thread().name
    ran_on: list[str] = []
    future = consumer.commit_async({tp: OffsetAndMetadata(1, "", -1)})
    future.add_callback(lambda _: ran_on.append(threading.current_thread().name))
    if lib == KP:
        assert cluster.wait_until(lambda: future.is_done is True, timeout_s=5)  # no poll() needed
        assert ran_on and ran_on[0] != application
    else:
        assert cluster.wait_until(lambda: cluster.committed_offsets(group) == {(topic, 0): 1}, timeout_s=5)
        assert future.is_done is False  # answered, but completed only by the owner's next call
        assert poll_until(consumer, lambda: future.is_done is True, timeout_s=5)
        assert ran_on == [application]


def test_commits_of_consumed_offsets_carry_the_last_records_leader_epoch(
        cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """kafka-python (and Java, KIP-320) commit ``OffsetAndMetadata(next offset, '', leader epoch of
    the last consumed record)``, and committed() reads that epoch back."""
    topic = new_topic(cluster, 1, [b"%d" % i for i in range(3)])
    group = unique("group")
    tp = TopicPartition(topic, 0)
    consumer = make_consumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
    records = drain(consumer, 3)
    epoch = records[-1].leader_epoch
    assert epoch is not None and epoch >= 0
    calls: list[dict] = []
    consumer.commit_async(callback=lambda offsets, response: calls.append(offsets))
    assert poll_until(consumer, lambda: bool(calls), timeout_s=5)
    assert calls[0] == {tp: OffsetAndMetadata(3, "", epoch)}
    assert consumer.committed(tp, metadata=True, timeout_ms=5000) == OffsetAndMetadata(3, "", epoch)
