"""Consumers without a group_id (kafka-python's README examples, and its test_assign /
test_group_metadata_without_group_id_returns_empty_snapshot).

Without a group, kafka-python's subscribe() assigns every partition of the subscribed topics to
the consumer itself (no coordinator, no commits); commit(), commit_async() and committed()
raise IllegalStateError('Requires group_id'); group_metadata() is
``ConsumerGroupMetadata(group_id=None)`` (generation -1, member '', state '<unjoined>').
"""

from __future__ import annotations

import pytest
import kafka.errors as Errors
from kafka.structs import ConsumerGroupMetadata, MemberState, OffsetAndMetadata, TopicPartition

from groupclient.coordinator import EmbeddedCluster

from .conftest import ConsumerFactory, all_committed, drain, iterate, new_topic

pytestmark = pytest.mark.integration


def test_readme_first_example_consumes_every_partition_without_a_group(
        cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """``KafkaConsumer('my_favorite_topic', ...)`` then ``for msg in consumer``."""
    topic = new_topic(cluster, 3, [b"%d" % i for i in range(12)])
    before = all_committed(cluster)
    consumer = make_consumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=5000)
    assert consumer.subscription() == {topic}
    records = iterate(consumer, 12)
    assert sorted(int(r.value) for r in records) == list(range(12))
    assert {r.partition for r in records} == {0, 1, 2}
    assert consumer.assignment() == {TopicPartition(topic, p) for p in range(3)}
    consumer.close()
    assert all_committed(cluster) == before  # no group, no commits


def test_subscribe_method_without_a_group_assigns_every_partition_of_every_topic(
        cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    first, second = new_topic(cluster, 2, [b"a"] * 4), new_topic(cluster, 1, [b"b"] * 2)
    consumer = make_consumer(auto_offset_reset="earliest")
    consumer.subscribe([first, second])
    records = drain(consumer, 6)
    assert sorted(r.value for r in records) == [b"a"] * 4 + [b"b"] * 2
    assert consumer.assignment() == {TopicPartition(first, 0), TopicPartition(first, 1), TopicPartition(second, 0)}


def test_group_metadata_without_a_group(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1)
    consumer = make_consumer(topic)
    metadata = consumer.group_metadata()
    assert isinstance(metadata, ConsumerGroupMetadata)
    assert metadata == ConsumerGroupMetadata(group_id=None)
    assert tuple(metadata) == (None, -1, "", None, MemberState.UNJOINED)
    assert metadata.state == MemberState.UNJOINED


def test_commits_without_a_group_raise_illegal_state(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1, [b"x"])
    tp = TopicPartition(topic, 0)
    consumer = make_consumer(auto_offset_reset="earliest")
    consumer.assign([tp])
    assert len(drain(consumer, 1)) == 1
    with pytest.raises(Errors.IllegalStateError):
        consumer.commit(timeout_ms=5000)
    with pytest.raises(Errors.IllegalStateError):
        consumer.commit({tp: OffsetAndMetadata(1, "", -1)}, timeout_ms=5000)
    with pytest.raises(Errors.IllegalStateError):
        consumer.commit_async()
    with pytest.raises(Errors.IllegalStateError):
        consumer.committed(tp, timeout_ms=1000)


def test_readme_manual_assignment_example(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """``consumer.assign([TopicPartition('foobar', 2)]); msg = next(consumer)``."""
    topic = new_topic(cluster, 3)
    cluster.produce(topic, [b"on-2"], partition=2)
    consumer = make_consumer(auto_offset_reset="earliest", consumer_timeout_ms=5000)
    consumer.assign([TopicPartition(topic, 2)])
    msg = next(consumer)
    assert (msg.topic, msg.partition, msg.offset, msg.value) == (topic, 2, 0, b"on-2")
    assert consumer.assignment() == {TopicPartition(topic, 2)}
    assert consumer.subscription() is None


def test_assign_and_subscribe_exclude_each_other(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """Ported from kafka-python's test_assign."""
    topic = new_topic(cluster, 1)
    subscribed = make_consumer(topic)
    assert subscribed.assignment() == set()
    with pytest.raises(Errors.IllegalStateError):
        subscribed.assign([TopicPartition(topic, 0)])
    assigned = make_consumer()
    assert assigned.assignment() == set()
    assigned.assign([TopicPartition(topic, 0)])
    assert assigned.assignment() == {TopicPartition(topic, 0)}
    with pytest.raises(Errors.IllegalStateError):
        assigned.subscribe(topics=[topic])
    assigned.assign([])  # an empty assignment unsubscribes
    assert assigned.assignment() == set()
    assigned.subscribe(topics=[topic])  # allowed again
    assert assigned.subscription() == {topic}


def test_unsubscribe_then_subscribe_to_another_topic_without_a_group(
        cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    first, second = new_topic(cluster, 1, [b"first"]), new_topic(cluster, 1, [b"second"])
    consumer = make_consumer(first, auto_offset_reset="earliest")
    assert [r.value for r in drain(consumer, 1)] == [b"first"]
    consumer.unsubscribe()
    assert consumer.assignment() == set() and consumer.subscription() is None
    consumer.subscribe([second])
    assert [r.value for r in drain(consumer, 1)] == [b"second"]
    assert consumer.assignment() == {TopicPartition(second, 0)}
