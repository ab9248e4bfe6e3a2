"""Commits cover exactly what the application was given: iteration, poll(max_records), close(),
the ``with`` block, auto-commit (ported in part from kafka-python's
test_kafka_consumer__offset_commit_resume).

kafka-python 3.0.12's ``__exit__`` is ``self.close(autocommit=exc_type is None)``: a ``with``
block left by an exception does NOT auto-commit; a clean exit does.
"""

from __future__ import annotations

import pytest

from kafka.structs import TopicPartition

from groupclient.coordinator import EmbeddedCluster

from .conftest import ConsumerFactory, drain, iterate, new_topic, poll_until, unique

pytestmark = pytest.mark.integration

# auto-commit enabled, but its timer never fires during a test: only close() / rebalances commit
NO_PERIODIC_COMMIT = {"enable_auto_commit": True, "auto_commit_interval_ms": 60000}


def test_iterating_three_records_then_close_commits_last_yielded_plus_one(
        cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1, [b"%d" % i for i in range(10)])
    group = unique("group")
    consumer = make_consumer(topic, group_id=group, auto_offset_reset="earliest", consumer_timeout_ms=5000,
                             **NO_PERIODIC_COMMIT)
    offsets = []
    for record in consumer:
        offsets.append(record.offset)
        if len(offsets) == 3:
            break
    consumer.close()
    assert offsets == [0, 1, 2]
    # the whole batch of 10 was fetched; only what was yielded counts as consumed
    assert cluster.committed_offsets(group) == {(topic, 0): 3}


def test_poll_max_records_then_close_commits_only_the_returned_records(
        cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 2, [b"%d" % i for i in range(20)])
    group = unique("group")
    consumer = make_consumer(topic, group_id=group, auto_offset_reset="earliest", **NO_PERIODIC_COMMIT)
    returned = drain(consumer, 1, max_records=4)
    assert 1 <= len(returned) <= 4
    consumer.close()
    last = {}
    for r in returned:
        last[r.partition] = max(last.get(r.partition, -1), r.offset)
    committed = cluster.committed_offsets(group)
    for p in (0, 1):
        # a partition nothing was returned from is committed at its start (0) or not at all
        assert committed.get((topic, p), 0) == last.get(p, -1) + 1, (returned, committed)


def test_with_block_left_by_an_exception_does_not_auto_commit(cluster: EmbeddedCluster,
                                                              make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1)
    group = unique("group")
    consumer = make_consumer(topic, group_id=group, auto_offset_reset="earliest", consumer_timeout_ms=5000,
                             **NO_PERIODIC_COMMIT)
    # join before the records exist, so nothing was consumed before the with block
    assert poll_until(consumer, lambda: bool(consumer.assignment()))
    cluster.produce(topic, [b"%d" % i for i in range(10)])
    seen = []
    try:
        with consumer:
            for record in consumer:
                seen.append(record.offset)
                if len(seen) == 3:
                    raise RuntimeError("processing record 2 failed")
    except RuntimeError:
        pass
    assert seen == [0, 1, 2]
    # kafka-python: close(autocommit=False), so offset 3 (or anything past 0) is never committed
    assert cluster.committed_offsets(group).get((topic, 0), 0) == 0
    assert drain(make_consumer(topic, group_id=group, auto_offset_reset="earliest",
                               enable_auto_commit=False), 1)[0].offset == 0  # redelivered from the start


def test_with_block_left_normally_auto_commits(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1, [b"%d" % i for i in range(10)])
    group = unique("group")
    with make_consumer(topic, group_id=group, auto_offset_reset="earliest", consumer_timeout_ms=5000,
                       **NO_PERIODIC_COMMIT) as consumer:
        assert [r.offset for r in iterate(consumer, 3)] == [0, 1, 2]
    assert cluster.committed_offsets(group) == {(topic, 0): 3}


def test_close_without_autocommit_commits_nothing(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1, [b"%d" % i for i in range(5)])
    group = unique("group")
    consumer = make_consumer(topic, group_id=group, auto_offset_reset="earliest", **NO_PERIODIC_COMMIT)
    assert len(drain(consumer, 5)) == 5
    consumer.close(autocommit=False)
    assert cluster.committed_offsets(group).get((topic, 0), 0) == 0


def test_auto_commit_disabled_close_commits_nothing(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1, [b"%d" % i for i in range(5)])
    group = unique("group")
    consumer = make_consumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
    assert len(drain(consumer, 5)) == 5
    consumer.close()
    assert cluster.committed_offsets(group) == {}


def test_periodic_auto_commit_commits_what_poll_returned(cluster: EmbeddedCluster,
                                                         make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 2, [b"%d" % i for i in range(10)])
    group = unique("group")
    consumer = make_consumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=True,
                             auto_commit_interval_ms=100)
    assert len(drain(consumer, 10)) == 10
    assert poll_until(consumer, lambda: cluster.committed_offsets(group) == {(topic, 0): 5, (topic, 1): 5},
                      timeout_s=5), cluster.committed_offsets(group)


def test_commit_after_iteration_commits_what_was_yielded(cluster: EmbeddedCluster,
                                                        make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1, [b"%d" % i for i in range(10)])
    group = unique("group")
    consumer = make_consumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=5000)
    assert [r.offset for r in iterate(consumer, 4)] == [0, 1, 2, 3]
    consumer.commit(timeout_ms=5000)
    assert consumer.committed(TopicPartition(topic, 0), timeout_ms=5000) == 4
    assert cluster.committed_offsets(group) == {(topic, 0): 4}


def test_a_second_consumer_resumes_where_the_first_stopped(cluster: EmbeddedCluster,
                                                          make_consumer: ConsumerFactory) -> None:
    """Ported from kafka-python's test_kafka_consumer__offset_commit_resume (with-blocks, auto-commit)."""
    topic = new_topic(cluster, 2)
    cluster.produce(topic, [b"a%d" % i for i in range(10)], partition=0)
    cluster.produce(topic, [b"b%d" % i for i in range(10)], partition=1)
    group = unique("group")
    settings = dict(group_id=group, enable_auto_commit=True, auto_commit_interval_ms=100,
                    auto_offset_reset="earliest", consumer_timeout_ms=5000)
    with make_consumer(topic, **settings) as first:
        got_first = iterate(first, 15)
    assert len(got_first) == 15
    with make_consumer(topic, **settings) as second:
        got_second = iterate(second, 5)
        assert drain(second, 1, timeout_s=0.5) == []  # nothing left
    values = sorted(r.value for r in got_first + got_second)
    assert values == sorted([b"a%d" % i for i in range(10)] + [b"b%d" % i for i in range(10)])
