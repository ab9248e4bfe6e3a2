"""benchmarks/throughput.py's topics and the facts of its run: the values it writes (JSON-like
event text), how it produces them (confluent-kafka's producer, kafka-python's where it is absent),
the client and codec packages installed, and the machine."""

from __future__ import annotations

import contextlib
import importlib
import random
import time
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
BATCH_SIZE, LINGER_MS = 64 * 1024, 10
EVENTS = ["page_view", "click", "add_to_cart", "checkout", "search", "login", "logout", "purchase"]
COUNTRIES = ["US", "DE", "FR", "GB", "BR", "IN", "JP", "CA", "ES", "IT"]
AGENTS = ["Mozilla/5.0 (X11; Linux x86_64)", "Mozilla/5.0 (Windows NT 10.0; Win64; x64)",
          "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5)", "okhttp/4.12.0"]
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar "
         "papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()


def packages() -> dict[str, str | None]:
    """Versions of the clients and of the optional packages for codecs and CRCs (None: absent)."""
    found: dict[str, str | None] = {}
    for name in ("groupclient", "kafka-python", "confluent-kafka", "aiokafka", "crc32c", "lz4", "zstandard",
                 "python-snappy", "isal"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    for module in ("crc32c", "lz4.frame", "zstandard", "snappy", "isal"):  # installed is not importable
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
            continue
        found[module] = None
    with contextlib.suppress(ImportError):
        import confluent_kafka
        found["librdkafka"] = confluent_kafka.libversion()[0]
    return found


def machine() -> dict[str, Any]:
    """The CPU model and the memory, from /proc (Linux; empty elsewhere)."""
    found: dict[str, Any] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                found["cpu_model"] = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                found["memory_gb"] = int(line.split()[1]) / 1024 / 1024
    return found


def values(seed: int, size: int) -> Iterator[bytes]:
    """Endless ``size``-byte values: JSON arrays of events with random ids, cut to size."""
    rng = random.Random(seed)
    while True:
        parts, length = [], 0
        while length < size:
            event = (f'{{"event":"{rng.choice(EVENTS)}","user_id":{rng.randrange(10**7)},'
                     f'"session":"{rng.getrandbits(64):016x}","ts":{1_760_000_000_000 + rng.randrange(10**9)},'
                     f'"country":"{rng.choice(COUNTRIES)}","agent":"{rng.choice(AGENTS)}",'
                     f'"amount":{rng.random() * 500:.2f},"query":"{" ".join(rng.choices(WORDS, k=rng.randrange(1, 5)))}"}}')
            parts.append(event)
            length += len(event) + 1
        yield ("[" + ",".join(parts) + "]").encode()[:size]


def compression_ratio(codec: str, size: int) -> float:
    """Estimated: ~1 MB of values compressed in 64 KiB chunks with kafka-python's codec."""
    if codec == "none":
        return 1.0
    from kafka import codec as codecs
    encode = {"gzip": codecs.gzip_encode, "snappy": codecs.snappy_encode, "lz4": codecs.lz4_encode,
              "zstd": codecs.zstd_encode}[codec]
    gen = values(0, size)
    data = b"".join(next(gen) for _ in range(max(1, 1_000_000 // size)))
    chunks = [data[i:i + BATCH_SIZE] for i in range(0, len(data), BATCH_SIZE)]
    return sum(map(len, chunks)) / sum(len(encode(c)) for c in chunks)


def _user_key(i: int) -> bytes:
    return b"user-%d" % (i % 10007)


def traceparents(seed: int) -> Iterator[bytes]:
    """Endless W3C ``traceparent`` header values, sampled, each of a new trace and span (one
    producer span per record)."""
    rng = random.Random(seed)
    while True:
        yield b"00-%032x-%016x-01" % (rng.getrandbits(128) | 1, rng.getrandbits(64) | 1)


def produce(bootstrap: str, topic: str, partitions: int, codec: str, size: int, records: int, *,
            payloads: Iterator[bytes] | None = None, key: Callable[[int], bytes] | None = None,
            traceparent: bool = False) -> float:
    """Create ``topic`` and fill it; the seconds it took.  Raises unless every record arrived.

    confluent-kafka's producer when it is installed (a cell's 60 MB in seconds; its batches are
    what Java's producer writes too), kafka-python's otherwise; the same batch size and linger.
    ``payloads`` (default: JSON events, see values()) and ``key`` (default: ``user-<i mod 10007>``)
    make the records; ``traceparent``: each record has a ``traceparent`` header (see traceparents())."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    started = time.monotonic()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    admin.create_topics([NewTopic(topic, partitions, 1)])
    admin.close()
    per_batch = max(1, BATCH_SIZE // (size + 20))  # records per full batch: then the next partition
    sent = zip(range(records), payloads if payloads is not None else values(records + size + partitions, size))
    key = key or _user_key
    parents = traceparents(records + partitions) if traceparent else None

    def headers() -> list[tuple[str, bytes]] | None:
        return [("traceparent", next(parents))] if parents is not None else None
    try:
        import confluent_kafka
    except ImportError:
        confluent_kafka = None
    if confluent_kafka is not None:
        failures: list[str] = []
        producer = confluent_kafka.Producer({
            "bootstrap.servers": bootstrap, "compression.type": codec, "batch.size": BATCH_SIZE,
            "linger.ms": LINGER_MS, "acks": 1, "queue.buffering.max.kbytes": 256 * 1024, "enable.idempotence": False})

        def failed(err: Any, _msg: Any) -> None:
            if err is not None:
                failures.append(str(err))
        for i, value in sent:
            while True:
                try:
                    producer.produce(topic, value, key=key(i), partition=(i // per_batch) % partitions,
                                     on_delivery=failed, headers=headers())
                    break
                except BufferError:
                    producer.poll(0.05)  # the local queue is full: let deliveries drain
        if producer.flush(300) or failures:
            raise RuntimeError(f"{topic}: produce failed: {failures[:3]}")
    else:
        from kafka import KafkaProducer
        kproducer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec,
                                  batch_size=BATCH_SIZE, linger_ms=LINGER_MS, acks=1, max_block_ms=60000)
        try:
            for i, value in sent:
                kproducer.send(topic, value, key=key(i), partition=(i // per_batch) % partitions, headers=headers())
            kproducer.flush(timeout=300)
        finally:
            kproducer.close(timeout=30)
    counter = KafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    ends = counter.end_offsets([TopicPartition(topic, p) for p in range(partitions)])
    counter.close()
    if sum(ends.values()) != records:
        raise RuntimeError(f"{topic}: {sum(ends.values())} records on the broker, {records} produced")
    return time.monotonic() - started
