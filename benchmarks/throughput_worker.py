"""Child process of ``benchmarks/throughput.py``: one client drains one topic, prints one JSON line.

    python benchmarks/throughput_worker.py CLIENT BOOTSTRAP TOPIC RECORDS [--broker-pid PID]
        [--timeout-s S] [--max-poll-records N] [--confluent-config JSON]

CLIENT is groupclient, kafka-python or confluent-kafka.  The consumer subscribes with a fresh
group id (earliest, no auto commit) and reads until it has RECORDS records, touching every
record's value.  It notes the wall time and its own CPU (all threads) at the first record, once a
third of the records were received, and at the last record; the broker's CPU (from /proc) at the
same marks when ``--broker-pid`` is given.  The JSON line is printed before ``close()``; the
worker then waits for its stdin to close so the parent can read this process's CPU before it exits.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.brokers import cpu_seconds  # noqa: E402

CLIENTS = ("groupclient", "kafka-python", "confluent-kafka")
# a client's poll loop, one (records, value bytes) per poll or consume call, and its close()
Batches = Callable[[], Iterator[tuple[int, int]]]


def python_client(kind: str, bootstrap: str, topic: str, group: str, max_poll_records: int) -> tuple[
        Batches, Callable[[], None]]:
    if kind == "groupclient":
        from groupclient import GroupConsumer
        Consumer: Any = GroupConsumer
    else:
        from kafka import KafkaConsumer
        Consumer = KafkaConsumer
    # metadata_max_age_ms: kafka-python's leader may assign before it knows the topic and then
    # waits for the next metadata refresh (default 5 min) to rejoin; same value for both clients
    consumer = Consumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                        enable_auto_commit=False, max_poll_records=max_poll_records,
                        metadata_max_age_ms=5000, client_id=f"bench-{kind}")
    consumer.subscribe([topic])

    def batches() -> Iterator[tuple[int, int]]:
        while True:
            got = size = 0
            for records in consumer.poll(timeout_ms=1000).values():
                got += len(records)
                for record in records:
                    value = record.value
                    size += len(value) if value is not None else 0
            yield got, size

    return batches, lambda: consumer.close(autocommit=False)


def confluent_client(bootstrap: str, topic: str, group: str, records: int,
                     extra: dict[str, Any]) -> tuple[Batches, Callable[[], None]]:
    from confluent_kafka import Consumer, KafkaException

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "client.id": "bench-confluent-kafka", **extra})
    consumer.subscribe([topic])

    def batches() -> Iterator[tuple[int, int]]:
        total = 0
        while True:
            size = got = 0
            # consume() returns when it has num_messages or after the timeout: asking for no more
            # than the records still to come keeps the last call from waiting out its 1 s timeout
            for msg in consumer.consume(num_messages=max(1, min(1000, records - total)), timeout=1.0):
                if msg.error():
                    if msg.error().fatal():
                        raise KafkaException(msg.error())
                    continue  # e.g. a transient broker-down event: not a record
                value = msg.value()
                size += len(value) if value is not None else 0
                got += 1
            total += got
            yield got, size

    return batches, consumer.close


def drain(args: argparse.Namespace) -> dict[str, Any]:
    group = f"tp-{args.client}-{uuid.uuid4().hex[:8]}"

    def broker_cpu() -> float:
        return cpu_seconds(args.broker_pid) if args.broker_pid else 0.0

    # CLOCK_PROCESS_CPUTIME_ID: every thread of this process (librdkafka's too), ns resolution
    # where /proc counts 10 ms ticks
    t0, cpu0 = time.monotonic(), time.process_time()
    if args.client == "confluent-kafka":
        batches, close = confluent_client(args.bootstrap, args.topic, group, args.records,
                                          json.loads(args.confluent_config))
    else:
        batches, close = python_client(args.client, args.bootstrap, args.topic, group, args.max_poll_records)
    deadline = t0 + args.timeout_s
    got = value_bytes = 0
    first = third = None
    latest, stall = 0.0, (0.0, 0)  # the longest wait for records after the first: (seconds, at record)
    for count, size in batches():
        now = time.monotonic()
        if count and first is None:
            first = latest = now
        if count:
            stall, latest = max(stall, (now - latest, got)), now
        got, value_bytes = got + count, value_bytes + size
        if third is None and count and got >= args.records // 3:
            third = (now, got, value_bytes, time.process_time(), broker_cpu())
        if got >= args.records or now > deadline:
            break
    last, cpu_last, broker_last = time.monotonic(), time.process_time(), broker_cpu()
    if got < args.records:
        return {"ok": False, "error": f"timeout: {got} of {args.records} records in {args.timeout_s:.0f} s"}
    assert first is not None and third is not None
    t3, got3, bytes3, cpu3, broker3 = third
    steady, seconds = got - got3, max(last - t3, 1e-9)
    return {
        "ok": True, "records": got, "value_bytes": value_bytes,
        "first_record_s": first - t0,           # construction, join and first fetch
        "total_s": last - t0,
        "steady_records_per_s": steady / seconds,
        "steady_mb_per_s": (value_bytes - bytes3) / seconds / 1e6,
        "steady_cpu_s_per_m": (cpu_last - cpu3) / steady * 1e6,
        "steady_broker_cpu_s_per_m": (broker_last - broker3) / steady * 1e6 if args.broker_pid else None,
        "overall_records_per_s": (got - 1) / max(last - first, 1e-9),  # first to last record
        "cpu_s": cpu_last - cpu0,               # this process, construction to last record
        "longest_stall_s": stall[0], "longest_stall_at": stall[1],
        "close": close,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("client", choices=CLIENTS)
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("records", type=int)
    parser.add_argument("--broker-pid", type=int, default=0)
    parser.add_argument("--timeout-s", type=float, default=300)
    parser.add_argument("--max-poll-records", type=int, default=500)
    parser.add_argument("--confluent-config", default="{}", help="JSON: more librdkafka settings")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    try:
        result = drain(args)
    except Exception as exc:  # reported to the parent as a failed run, with the traceback on stderr
        traceback.print_exc()
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    close = result.pop("close", None)
    print(json.dumps(result), flush=True)
    sys.stdin.read()  # the parent reads our CPU from /proc, then closes our stdin
    if close is not None:
        close()
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
