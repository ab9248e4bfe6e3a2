"""Batches as real producers write them, read on both record paths: confluent-kafka (librdkafka)
and kafka-python producers, every codec, records with and without keys, values and headers,
stored by the embedded broker as produced, then fetched by GroupConsumer on the compiled path and
on the Python path: the same records, all of them."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Producer
from kafka import KafkaProducer

from groupclient import GroupConsumer
from groupclient.coordinator import EmbeddedCluster
from groupclient.structs import TopicPartition
from tests.record_paths import on_path

pytestmark = pytest.mark.integration

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
COUNT = 300


def record(i: int) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]:
    key = None if i % 7 == 0 else f"key-{i}".encode()
    value = None if i % 11 == 0 and key is not None else (f'{{"n":{i},"text":"' + "abc" * (i % 50) + '"}').encode()
    headers = [] if i % 3 else [("trace", f"t{i}".encode()), ("empty", b"")]
    return key, value, headers


def produce(bootstrap: str, topic: str, producer: str, codec: str) -> None:
    if producer == "confluent-kafka":
        p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 20,
                      "batch.num.messages": 100})
        for i in range(COUNT):
            key, value, headers = record(i)
            p.produce(topic, value=value, key=key, headers=headers or None, partition=0)
        assert p.flush(30) == 0
    else:
        kp = KafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec,
                           linger_ms=20, batch_size=16384)
        futures = [kp.send(topic, value=v, key=k, headers=h, partition=0) for k, v, h in map(record, range(COUNT))]
        kp.flush(30)
        assert all(f.get(10).offset >= 0 for f in futures)
        kp.close(timeout=10)


def read_all(bootstrap: str, topic: str, path: str) -> list[tuple[Any, ...]]:
    with on_path(path):
        consumer = GroupConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
        try:
            consumer.assign([TopicPartition(topic, 0)])
            out: list[tuple[Any, ...]] = []
            for _ in range(100):  # bounded: 100 polls of up to 1 s
                for records in consumer.poll(timeout_ms=1000).values():
                    out += [tuple(r) for r in records]
                if len(out) >= COUNT:
                    break
            return out
        finally:
            consumer.close()


@pytest.fixture(scope="module")
def cluster() -> Any:
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0) as c:
        yield c


@pytest.mark.parametrize("producer", ["confluent-kafka", "kafka-python"])
@pytest.mark.parametrize("codec", CODECS)
def test_what_producers_write_reads_the_same_on_both_paths(cluster: EmbeddedCluster, producer: str,
                                                          codec: str) -> None:
    topic = f"written-{producer}-{codec}"
    cluster.create_topic(topic, 1)
    produce(cluster.bootstrap_servers, topic, producer, codec)
    native = read_all(cluster.bootstrap_servers, topic, "native")
    assert len(native) == COUNT
    assert native == read_all(cluster.bootstrap_servers, topic, "python")
    assert native == read_all(cluster.bootstrap_servers, topic, "ahead")
    expected = [(k, v, list(h)) for k, v, h in map(record, range(COUNT))]
    # librdkafka gives a record without headers no headers, and kafka-python []: both read as []
    assert [(r[6], r[7], list(r[8])) for r in native] == expected
