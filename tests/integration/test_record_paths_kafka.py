"""Batches as Apache Kafka 4.4's own producer writes them, read on both record paths.

tests/kafka/JavaProducer.java (kafka-clients 4.4.0) writes :func:`record`'s records to a Kafka
4.4.0 broker: every codec; keys, values and headers present, absent and empty, a header without a
value, non-ASCII header keys and values; plain, idempotent (producer ids and sequences) and
transactional (commit and abort markers, aborted records).  GroupConsumer then reads each topic
on the compiled record path (batch by batch, and decoded ahead by a worker thread) and on the
Python one, read_uncommitted and read_committed: the same records on every path, and the ones that were written (read_committed without the aborted ones).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from groupclient import GroupConsumer
from groupclient.structs import TopicPartition
from tests.record_paths import on_path

pytestmark = [pytest.mark.integration, pytest.mark.kafka]

VERSION = "4.4.0"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
COUNT = 400
TRANSACTION = 50  # JavaProducer.java's records per transaction


def record(i: int) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]:
    """Record ``i``'s key, value and headers, as JavaProducer.java computes them."""
    key = None if i % 7 == 0 else f"key-{i}".encode()
    value = None if i % 11 == 0 and key is not None else (f'{{"n":{i},"text":"' + "abc" * (i % 50) + '"}').encode()
    headers: list[tuple[str, bytes | None]] = []
    if i % 3 == 0:
        headers += [("trace", f"t{i}".encode()), ("empty", b"")]
    if i % 5 == 0:
        headers.append(("nil", None))
    if i % 13 == 0:
        headers.append(("h\u00e9", "\u00fcnicode \u2603".encode()))
    return key, value, headers


@pytest.fixture(scope="module")
def broker() -> Iterator[Any]:
    from tests.kafka.broker import KafkaBroker, missing_tools

    if missing_tools():
        pytest.skip(f"Apache Kafka needs {', '.join(missing_tools())}")
    # the records carry fixed timestamps of 2023 (JavaProducer.java): under the default 7-day
    # retention the broker's retention check (first 30 s after start, then every 5 min) deletes
    # them, and a test reading after it finds the log starting at its end
    with KafkaBroker(version=VERSION, properties={"log.retention.ms": "-1"}) as running:
        yield running


def produce(bootstrap: str, topic: str, codec: str, mode: str) -> list[int]:
    """Runs JavaProducer; the first record numbers of the aborted transactions."""
    from tests.kafka.java_peer import java_command

    done = subprocess.run([*java_command("JavaProducer", VERSION), bootstrap, topic, codec, str(COUNT), mode],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["sent"] == COUNT
    return list(report["aborted"])


def read_all(bootstrap: str, topic: str, path: str, isolation: str, expected: int) -> list[Any]:
    with on_path(path):
        consumer = GroupConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                                 isolation_level=isolation)
        try:
            consumer.assign([TopicPartition(topic, 0)])
            out: list[Any] = []
            for _ in range(60):  # bounded: 60 polls of up to 1 s
                for records in consumer.poll(timeout_ms=1000).values():
                    out += records
                if len(out) >= expected:
                    break
            assert consumer.poll(timeout_ms=200) == {}  # nothing past the expected records
            return out
        finally:
            consumer.close()


@pytest.mark.parametrize("mode", ["plain", "idempotent", "transactions"])
@pytest.mark.parametrize("codec", CODECS)
def test_what_kafka_44_writes_reads_the_same_on_both_paths(broker: Any, codec: str, mode: str) -> None:
    topic = f"kafka-written-{codec}-{mode}"
    aborted = produce(broker.bootstrap, topic, codec, mode)
    assert (mode == "transactions") == bool(aborted)
    dropped = {i for first in aborted for i in range(first, min(first + TRANSACTION, COUNT))}
    for isolation, numbers in (("read_uncommitted", list(range(COUNT))),
                               ("read_committed", [i for i in range(COUNT) if i not in dropped])):
        native = read_all(broker.bootstrap, topic, "native", isolation, len(numbers))
        for path in ("ahead", "python"):
            other = read_all(broker.bootstrap, topic, path, isolation, len(numbers))
            assert [tuple(r) for r in native] == [tuple(r) for r in other], (isolation, path)
        assert [(r.key, r.value, list(r.headers)) for r in native] == [record(i) for i in numbers], isolation
        assert [r.timestamp for r in native] == [1_700_000_000_000 + i for i in numbers]
        offsets = [r.offset for r in native]
        assert offsets == sorted(set(offsets))
        if mode != "transactions":
            assert offsets == list(range(COUNT))
        else:  # a marker after each transaction: offsets skip one per transaction, more for aborted ones
            assert offsets[-1] > COUNT
