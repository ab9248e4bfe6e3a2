"""Records: poll()'s shape, ConsumerRecord fields, headers, timestamps, deserializers, max_records.

Deliberate difference (asserted per library):

- ``test_difference_deserializers_are_not_called_for_null_key_or_value``: kafka-python 3 calls
  the key/value deserializer with ``None`` for a null key or value (so ``lambda v:
  json.loads(v)`` crashes on a tombstone); groupclient leaves a null key or value ``None``
  without calling the deserializer.
- ``test_difference_a_deserializer_failure_names_the_record_and_can_be_skipped``: kafka-python
  raises the deserializer's bare exception, with no partition or offset (and its next poll() does
  not return); groupclient raises ``RecordDeserializationError`` (also a ``ValueError``) naming the
  partition and offset, after the records before it, and ``seek(offset + 1)`` goes on past it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.consumer.fetcher import ConsumerRecord
from kafka.serializer import DefaultSerializer, Deserializer, JsonSerializer
from kafka.structs import TopicPartition

from groupclient.coordinator import EmbeddedCluster

from .conftest import KP, ConsumerFactory, drain, new_topic

pytestmark = pytest.mark.integration

TS = 1_600_000_000_000


def test_poll_returns_topic_partitions_mapped_to_lists_of_consumer_records(
        cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 2, [(b"k%d" % i, b"value-%d" % i) for i in range(6)], timestamp_ms=TS)
    consumer = make_consumer(auto_offset_reset="earliest")
    consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    records = []
    for _ in range(50):
        batch = consumer.poll(timeout_ms=100)
        assert type(batch) is dict
        for tp, recs in batch.items():
            assert type(tp) is TopicPartition and tp.topic == topic
            assert type(recs) is list and recs, "no empty lists in a poll() result"
            assert all(type(r) is ConsumerRecord and (r.topic, r.partition) == tp for r in recs)
            records += recs
        if len(records) >= 6:
            break
    # round robin: partition 0 holds records 0, 2, 4 and partition 1 holds 1, 3, 5
    expected = sorted(
        ConsumerRecord(topic, i % 2, 0, i // 2, TS, 0, b"k%d" % i, b"value-%d" % i, [], None,
                       len(b"k%d" % i), len(b"value-%d" % i), -1)
        for i in range(6))
    assert sorted(records) == expected
    assert ConsumerRecord._fields == (
        "topic", "partition", "leader_epoch", "offset", "timestamp", "timestamp_type", "key", "value",
        "headers", "checksum", "serialized_key_size", "serialized_value_size", "serialized_header_size")


def test_null_key_and_null_value_have_size_minus_one(cluster: EmbeddedCluster,
                                                     make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1, [(None, b"no-key"), (b"tombstone", None)])
    consumer = make_consumer(auto_offset_reset="earliest")
    consumer.assign([TopicPartition(topic, 0)])
    first, second = drain(consumer, 2)
    assert (first.key, first.value, first.serialized_key_size, first.serialized_value_size) == (None, b"no-key", -1, 6)
    assert (second.key, second.value, second.serialized_key_size, second.serialized_value_size) == (b"tombstone", None, 9, -1)


def test_headers_and_create_time_timestamps(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    try:
        producer.send(topic, b"v1", key=b"k", headers=[("trace", b"abc"), ("h\u00e9", b"")], timestamp_ms=1234567).get(10)
        producer.send(topic, b"v2", timestamp_ms=1234999).get(10)
    finally:
        producer.close()
    consumer = make_consumer(auto_offset_reset="earliest")
    consumer.assign([TopicPartition(topic, 0)])
    first, second = drain(consumer, 2)
    assert first.headers == [("trace", b"abc"), ("h\u00e9", b"")]
    assert first.serialized_header_size == len("trace") + 3 + len("h\u00e9".encode())  # bytes, utf-8 keys
    assert (first.timestamp, first.timestamp_type) == (1234567, 0)
    assert (second.headers, second.serialized_header_size) == ([], -1)
    assert (second.timestamp, second.timestamp_type) == (1234999, 0)


def test_gzip_compressed_batches_are_decoded(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, compression_type="gzip", linger_ms=50)
    try:
        futures = [producer.send(topic, b"compressed-%d" % i, key=b"%d" % i) for i in range(5)]
        producer.flush(10)
        assert all(f.get(10) for f in futures)
    finally:
        producer.close()
    consumer = make_consumer(auto_offset_reset="earliest")
    consumer.assign([TopicPartition(topic, 0)])
    records = drain(consumer, 5)
    assert [(r.offset, r.key, r.value) for r in records] == [(i, b"%d" % i, b"compressed-%d" % i) for i in range(5)]


def test_callable_deserializers(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1, [(b"key", b"caf\xc3\xa9")])
    consumer = make_consumer(auto_offset_reset="earliest", key_deserializer=lambda b: b.upper(),
                             value_deserializer=bytes.decode)
    consumer.assign([TopicPartition(topic, 0)])
    (record,) = drain(consumer, 1)
    assert (record.key, record.value) == (b"KEY", "caf\u00e9")
    assert (record.serialized_key_size, record.serialized_value_size) == (3, 5)  # sizes of the raw bytes


def test_readme_deserializer_objects(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """kafka-python's README: ``value_deserializer=JsonSerializer()`` gives dicts.  (The README
    subscribes without a group; that is test_groupless.py's subject, so this one assigns.)"""
    topic = new_topic(cluster, 1, [(b"id-1", json.dumps({"n": 1, "tags": ["a"]}).encode())])
    consumer = make_consumer(auto_offset_reset="earliest", key_deserializer=DefaultSerializer(),
                             value_deserializer=JsonSerializer())
    consumer.assign([TopicPartition(topic, 0)])
    (record,) = drain(consumer, 1)
    assert record.key == "id-1"
    assert isinstance(record.value, dict) and record.value == {"n": 1, "tags": ["a"]}


class Recording(Deserializer):
    """kafka-python 3's interface: ``deserialize(topic, headers, data)`` and ``close()``."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.calls: list[tuple[str, Any, Any]] = []
        self.closed = False

    def deserialize(self, topic: str, headers: Any, data: bytes | None) -> Any:
        self.calls.append((topic, headers, data))
        return (self.tag, data)

    def close(self) -> None:
        self.closed = True


class LegacyDeserializer(Deserializer):
    """kafka-python 2's two-argument ``deserialize(topic, data)``; kafka-python 3 still accepts it."""

    def deserialize(self, topic: str, data: bytes) -> Any:  # type: ignore[override]
        return f"{topic}:{data.decode()}"


def test_deserializer_object_receives_topic_and_headers(cluster: EmbeddedCluster,
                                                        make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    try:
        producer.send(topic, b"v", key=b"k", headers=[("h", b"1")]).get(10)
    finally:
        producer.close()
    keys, values = Recording("key"), Recording("value")
    consumer = make_consumer(auto_offset_reset="earliest", key_deserializer=keys, value_deserializer=values)
    consumer.assign([TopicPartition(topic, 0)])
    (record,) = drain(consumer, 1)
    assert (record.key, record.value) == (("key", b"k"), ("value", b"v"))
    assert keys.calls == [(topic, [("h", b"1")], b"k")]
    assert values.calls == [(topic, [("h", b"1")], b"v")]


def test_legacy_two_argument_deserializer_object(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1, [(b"k", b"v")])
    consumer = make_consumer(auto_offset_reset="earliest", key_deserializer=LegacyDeserializer(),
                             value_deserializer=LegacyDeserializer())
    consumer.assign([TopicPartition(topic, 0)])
    (record,) = drain(consumer, 1)
    assert (record.key, record.value) == (f"{topic}:k", f"{topic}:v")


def test_close_closes_deserializer_objects(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """kafka-python's close() calls ``close()`` on both deserializers (Java does the same)."""
    keys, values = Recording("key"), Recording("value")
    consumer = make_consumer(key_deserializer=keys, value_deserializer=values)
    assert not keys.closed and not values.closed
    consumer.close()
    assert keys.closed and values.closed


def test_difference_deserializers_are_not_called_for_null_key_or_value(
        lib: str, cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """Deliberate difference: kafka-python calls deserializers with None; groupclient does not
    (a null key or value stays None, so a tombstone never reaches ``json.loads``)."""
    topic = new_topic(cluster, 1, [(None, b"v"), (b"k", None)])
    keys, values = Recording("key"), Recording("value")
    consumer = make_consumer(auto_offset_reset="earliest", key_deserializer=keys, value_deserializer=values)
    consumer.assign([TopicPartition(topic, 0)])
    first, second = drain(consumer, 2)
    if lib == KP:
        assert (first.key, first.value) == (("key", None), ("value", b"v"))
        assert (second.key, second.value) == (("key", b"k"), ("value", None))
    else:
        assert (first.key, first.value) == (None, ("value", b"v"))
        assert (second.key, second.value) == (("key", b"k"), None)
        assert [c[2] for c in keys.calls + values.calls] == [b"k", b"v"]


def test_difference_a_deserializer_failure_names_the_record_and_can_be_skipped(
        lib: str, cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    from groupclient.errors import RecordDeserializationError

    def number(data: bytes) -> int:
        return int(data)  # ValueError for b"x"

    topic = new_topic(cluster, 1, [b"0", b"1", b"x", b"3"])
    tp = TopicPartition(topic, 0)
    consumer = make_consumer(auto_offset_reset="earliest", value_deserializer=number)
    consumer.assign([tp])
    assert [r.value for r in drain(consumer, 2)] == [0, 1]
    with pytest.raises(ValueError) as raised:
        for _ in range(20):
            consumer.poll(timeout_ms=200)
    assert consumer.position(tp) == 2
    if lib == KP:
        assert type(raised.value) is ValueError  # which record? kafka-python does not say
        return  # and its next poll() does not return: the partition is stuck
    error = raised.value
    assert isinstance(error, RecordDeserializationError)
    assert (error.partition, error.offset, error.key_or_value) == (tp, 2, "value")
    assert isinstance(error.__cause__, ValueError) and "offset 2 of" in str(error)
    consumer.seek(error.partition, error.offset + 1)
    assert [r.value for r in drain(consumer, 1)] == [3]


def test_poll_max_records_returns_at_most_that_many_in_order(cluster: EmbeddedCluster,
                                                              make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1, [b"%d" % i for i in range(10)])
    consumer = make_consumer(auto_offset_reset="earliest")
    consumer.assign([TopicPartition(topic, 0)])
    offsets: list[int] = []
    for _ in range(60):
        batch = consumer.poll(timeout_ms=100, max_records=3)
        got = [r.offset for recs in batch.values() for r in recs]
        assert len(got) <= 3
        offsets += got
        if len(offsets) >= 10:
            break
    assert offsets == list(range(10))


def test_max_poll_records_setting_limits_each_poll(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 2, [b"%d" % i for i in range(12)])
    consumer = make_consumer(topic, group_id=topic, auto_offset_reset="earliest", max_poll_records=4,
                             enable_auto_commit=False)
    sizes: list[int] = []
    values: list[bytes] = []
    for _ in range(100):
        batch = consumer.poll(timeout_ms=100)
        got = [r.value for recs in batch.values() for r in recs]
        if got:
            sizes.append(len(got))
        values += got
        if len(values) >= 12:
            break
    assert sorted(values, key=int) == [b"%d" % i for i in range(12)]
    assert max(sizes) <= 4
