"""GroupConsumer against kafka-python's KafkaConsumer, same broker, same run.

- cold join latency: a fresh consumer, from construction to its first assignment (median);
- poll throughput: records/s draining a topic of N records with a fresh group;
- idle CPU: a stable member polling an idle topic, in its own process, as % of one core;
- wakeup latency: from wakeup() on another thread to WakeupError out of a blocked poll().

The broker is ``python -m groupclient.coordinator`` in its own process (``--broker tansu`` for
Tansu).  Usage: python benchmarks/consumer_bench.py [--records 200000] [--runs 5]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.brokers import BrokerProcess, coordinator, cpu_seconds, tansu  # noqa: E402
from kafka import KafkaConsumer, KafkaProducer  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402

from groupclient import GroupConsumer  # noqa: E402

CLIENTS: dict[str, Any] = {"groupclient": GroupConsumer, "kafka-python": KafkaConsumer}


def make(kind: str, bootstrap: str, group: str, **extra: Any) -> Any:
    # metadata_max_age_ms=5000 for both: kafka-python's leader may assign before it knows the topic
    # and then waits for the next metadata refresh (default 5 min) before rejoining
    return CLIENTS[kind](bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                         enable_auto_commit=False, session_timeout_ms=10000, heartbeat_interval_ms=1000,
                         metadata_max_age_ms=5000, **extra)


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, partitions, 1)])
    admin.close()


def join_latency(kind: str, bootstrap: str, topic: str, limit_s: float = 20) -> float:
    """Seconds to the first assignment; NaN if none came within ``limit_s``.

    kafka-python's leader can assign before it has metadata for the topic, assign nothing, and
    only rejoin after a later metadata refresh; such runs are counted and reported, not hidden.
    """
    started = time.monotonic()
    consumer = make(kind, bootstrap, f"join-{uuid.uuid4().hex[:8]}")
    consumer.subscribe([topic])
    elapsed = float("nan")
    while time.monotonic() - started < limit_s:
        consumer.poll(timeout_ms=10)
        if consumer.assignment():
            elapsed = time.monotonic() - started
            break
    consumer.close()
    return elapsed


def throughput(kind: str, bootstrap: str, topic: str, records: int) -> float:
    consumer = make(kind, bootstrap, f"tp-{uuid.uuid4().hex[:8]}", max_poll_records=2000)
    consumer.subscribe([topic])
    got = 0
    while not consumer.assignment():
        # the poll that completes the join may already return records: count them too
        got += sum(len(b) for b in consumer.poll(timeout_ms=10).values())
    started = time.monotonic()
    while got < records:
        for batch in consumer.poll(timeout_ms=500).values():
            got += len(batch)
        if time.monotonic() - started > 300:
            raise TimeoutError(f"only {got} of {records} records in 300 s")
    elapsed = time.monotonic() - started
    consumer.close()
    return records / elapsed


def idle_worker(kind: str, bootstrap: str, topic: str, seconds: float) -> None:
    """Runs in a child process: join, then poll an idle topic; the parent measures our CPU."""
    logging.basicConfig(level=logging.ERROR)
    consumer = make(kind, bootstrap, f"idle-{uuid.uuid4().hex[:8]}")
    consumer.subscribe([topic])
    while not consumer.assignment():
        consumer.poll(timeout_ms=10)
    print("stable", flush=True)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        consumer.poll(timeout_ms=1000)
    consumer.close()


def idle_cpu(kind: str, bootstrap: str, topic: str, seconds: float) -> float:
    child = subprocess.Popen([sys.executable, __file__, "--idle-worker", kind, "--bootstrap", bootstrap,
                              "--topic", topic, "--seconds", str(seconds + 5)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "stable"
    time.sleep(2)  # let the first fetches and heartbeats settle
    before = cpu_seconds(child.pid)
    time.sleep(seconds)
    used = cpu_seconds(child.pid) - before
    child.wait(60)
    return used / seconds


def wakeup_latency(bootstrap: str, topic: str) -> float:
    consumer = make("groupclient", bootstrap, f"wake-{uuid.uuid4().hex[:8]}")
    consumer.subscribe([topic])
    while not consumer.assignment():
        consumer.poll(timeout_ms=10)
    marks: list[float] = []

    def wake() -> None:
        time.sleep(0.3)
        marks.append(time.monotonic())
        consumer.wakeup()

    threading.Thread(target=wake).start()
    try:
        consumer.poll(timeout_ms=10_000)
    except Exception:
        pass
    elapsed = time.monotonic() - marks[0]
    consumer.close()
    return elapsed


def run(broker: BrokerProcess, args: argparse.Namespace) -> None:
    print(f"broker: {broker.name} at {broker.bootstrap}")
    data_topic, idle_topic = f"data-{uuid.uuid4().hex[:6]}", f"idle-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, data_topic, 4)
    create_topic(broker.bootstrap, idle_topic, 4)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=20, batch_size=256 * 1024)
    payload = b"x" * args.record_bytes
    for i in range(args.records):
        producer.send(data_topic, payload, partition=i % 4)
    producer.flush()
    producer.close()
    figures: dict[str, dict[str, float]] = {k: {} for k in CLIENTS}
    for kind in CLIENTS:
        samples = [join_latency(kind, broker.bootstrap, idle_topic) for _ in range(args.runs)]
        joined = [s for s in samples if s == s]
        figures[kind]["join"] = statistics.median(joined) if joined else float("nan")
        stuck = len(samples) - len(joined)
        print(f"{kind:13s} cold join: median {figures[kind]['join'] * 1000:.0f} ms "
              f"(runs: {', '.join(f'{s * 1000:.0f}' for s in joined)})"
              + (f"; {stuck} of {len(samples)} runs got no assignment within 20 s" if stuck else ""), flush=True)
    for kind in CLIENTS:
        samples = [throughput(kind, broker.bootstrap, data_topic, args.records) for _ in range(2)]
        figures[kind]["throughput"] = max(samples)
        print(f"{kind:13s} poll throughput: {figures[kind]['throughput']:,.0f} records/s "
              f"({args.records} records of {args.record_bytes} B; best of {len(samples)})", flush=True)
    for kind in CLIENTS:
        figures[kind]["idle"] = idle_cpu(kind, broker.bootstrap, idle_topic, args.idle_s)
        print(f"{kind:13s} idle stable member: {figures[kind]['idle'] * 100:.2f}% of a core", flush=True)
    print(f"groupclient   wakeup latency: {wakeup_latency(broker.bootstrap, idle_topic) * 1000:.1f} ms")
    ours, theirs = figures["groupclient"], figures["kafka-python"]
    print(f"ratio cold join groupclient/kafka-python: {ours['join'] / theirs['join']:.2f}x (target <= 0.5x)")
    print(f"ratio throughput groupclient/kafka-python: {ours['throughput'] / theirs['throughput']:.2f}x (target >= 1.0x)")
    print(f"ratio idle CPU groupclient/kafka-python: {ours['idle'] / max(theirs['idle'], 1e-9):.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--idle-s", type=float, default=20)
    parser.add_argument("--broker", choices=["groupclient", "tansu"], default="groupclient")
    parser.add_argument("--idle-worker", default=None)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--topic", default=None)
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    if args.idle_worker:
        idle_worker(args.idle_worker, args.bootstrap, args.topic, args.seconds)
        return 0
    logging.basicConfig(level=logging.ERROR)
    start = tansu if args.broker == "tansu" else coordinator
    with start() as broker:
        run(broker, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
