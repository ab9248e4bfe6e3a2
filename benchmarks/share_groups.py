"""Share groups (KIP-932): groupclient's ShareConsumer against confluent-kafka's ShareConsumer, and
how a share group's consumption scales with its members on one partition; on Apache Kafka 4.4
(--kafka-version) and on the embedded coordinator, in the same run.

Usage:

    nice -n 5 python benchmarks/share_groups.py --out share.json
    python benchmarks/share_groups.py --quick          # the embedded coordinator only, small

throughput: --records (300,000) values of 100 B on a 6-partition topic, produced once; each client
drains it in a share group of its own (share.auto.offset.reset earliest, implicit acknowledgement,
max_poll_records 500), in its own process (benchmarks/share_worker.py), --runs times, the order
rotating; steady records/s = the records after the first third over the time from the third to
the last.  Target: groupclient / confluent-kafka >= 1.0 (medians of the runs).

scaling: one partition of --scaling-records (4,000) records; K in {1, 4, 8} groupclient consumers of
one share group, each in its own process, with 1 ms of work per record (a sleep: an I/O-bound job)
and 20 records a poll (record_limit); the group's steady records/s.  Target: 4 consumers >= 3.5x
one.  A consumer group could not do this: one partition has one consumer.

The ratios are printed with the targets met or missed; --out keeps every run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.brokers import coordinator  # noqa: E402

WORKER = Path(__file__).resolve().parent / "share_worker.py"
TARGETS = {"throughput": 1.0, "scaling": 3.5}


def produce(bootstrap: str, topic: str, records: int, partitions: int, size: int = 100) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 10, "batch.size": 65536,
                         "broker.address.family": "v4"})
    base = os.urandom(size)
    for i in range(records):
        while True:
            try:
                producer.produce(topic, base[:size - 8] + i.to_bytes(8, "big"), partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0


def earliest(bootstrap: str, group: str) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, group, configs={
            "share.auto.offset.reset": "earliest", "share.assignment.interval.ms": "0"})])
    finally:
        admin.close()


def run_group(bootstrap: str, topic: str, clients: list[str], total: int, work_ms: float = 0.0,
              max_records: int = 500, acquire_mode: str = "batch_optimized", timeout_s: float = 300) -> dict[str, Any]:
    """Start one worker per entry of ``clients`` in a new share group; stop them once ``total``
    records came in all: the group's steady records/s."""
    group = f"bench-{uuid.uuid4().hex[:8]}"
    earliest(bootstrap, group)
    events: list[tuple[float, int]] = []
    lock = threading.Condition()
    procs = [subprocess.Popen([sys.executable, str(WORKER), "--client", client, "--bootstrap", bootstrap,
                               "--group", group, "--topic", topic, "--max-records", str(max_records),
                               "--acquire-mode", acquire_mode, "--work-ms", str(work_ms)],
                              stdout=subprocess.PIPE, text=True) for client in clients]

    def read(proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            event = json.loads(line)
            if "n" in event:
                with lock:
                    events.append((event["t"], event["n"]))
                    lock.notify_all()

    readers = [threading.Thread(target=read, args=(p,), daemon=True) for p in procs]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + timeout_s
    try:
        with lock:
            while sum(n for _, n in events) < total and time.monotonic() < deadline:
                lock.wait(0.5)
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
    with lock:
        got = sorted(events)
    return {"clients": clients, "records": sum(n for _, n in got), "steady_rps": steady(got, total)}


def steady(events: list[tuple[float, int]], total: int) -> float:
    """Records after the first third of ``total`` over the time from then to the last."""
    done = 0
    start_t = None
    start_n = 0
    for t, n in events:
        done += n
        if start_t is None and done >= total / 3:
            start_t, start_n = t, done
    if start_t is None or events[-1][0] <= start_t:
        return 0.0
    return (done - start_n) / (events[-1][0] - start_t)


def throughput(bootstrap: str, records: int, runs: int) -> dict[str, Any]:
    topic = f"share-tp-{uuid.uuid4().hex[:6]}"
    produce(bootstrap, topic, records, 6)
    order = ["groupclient", "confluent"]
    results: dict[str, list[float]] = {c: [] for c in order}
    for run in range(runs):
        for client in order[run % 2:] + order[:run % 2]:
            results[client].append(run_group(bootstrap, topic, [client], records)["steady_rps"])
    medians = {c: statistics.median(v) for c, v in results.items()}
    return {"runs": results, "median_rps": medians,
            "ratio": medians["groupclient"] / medians["confluent"] if medians["confluent"] else 0.0}


def scaling(bootstrap: str, records: int, counts: list[int]) -> dict[str, Any]:
    rates: dict[int, float] = {}
    for k in counts:
        topic = f"share-one-{k}-{uuid.uuid4().hex[:6]}"
        produce(bootstrap, topic, records, 1)
        rates[k] = run_group(bootstrap, topic, ["groupclient"] * k, records, work_ms=1.0, max_records=20,
                             acquire_mode="record_limit")["steady_rps"]
    return {"rps": rates, "ratios": {k: rates[k] / rates[counts[0]] for k in counts if rates[counts[0]]}}


@contextlib.contextmanager
def kafka(version: str) -> Iterator[str]:
    from tests.kafka.broker import KafkaBroker, missing_tools

    if missing_tools():
        raise RuntimeError(f"the Kafka broker needs {', '.join(missing_tools())}")

    class BenchKafkaBroker(KafkaBroker):
        def _java(self, *java_args: str) -> list[str]:  # full JIT: the tests' broker is C1-only
            return [a for a in super()._java(*java_args) if a != "-XX:TieredStopAtLevel=1"]

    broker = BenchKafkaBroker(version=version)
    try:
        broker.start()
        yield broker.bootstrap
    finally:
        broker.close()


@contextlib.contextmanager
def embedded() -> Iterator[str]:
    with coordinator() as broker:
        yield broker.bootstrap


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", default="kafka,embedded")
    parser.add_argument("--kafka-version", default="4.4.0")
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--scaling-records", type=int, default=4000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--parts", default="throughput,scaling")
    parser.add_argument("--quick", action="store_true", help="embedded only, 60,000 records, one run")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.brokers, args.records, args.runs, args.scaling_records = "embedded", 60_000, 1, 2000
    parts = args.parts.split(",")
    report: dict[str, Any] = {}
    for name in args.brokers.split(","):
        with (kafka(args.kafka_version) if name == "kafka" else embedded()) as bootstrap:
            cell: dict[str, Any] = {}
            if "throughput" in parts:
                cell["throughput"] = t = throughput(bootstrap, args.records, args.runs)
                print(f"{name} throughput (100 B): groupclient {t['median_rps']['groupclient']:,.0f}/s, "
                      f"confluent-kafka {t['median_rps']['confluent']:,.0f}/s: {t['ratio']:.2f}x "
                      f"({'met' if t['ratio'] >= TARGETS['throughput'] else 'MISSED'}: >= {TARGETS['throughput']})",
                      flush=True)
            if "scaling" in parts:
                cell["scaling"] = s = scaling(bootstrap, args.scaling_records, [1, 4, 8])
                four = s["ratios"].get(4, 0.0)
                print(f"{name} scaling (1 partition, 1 ms a record): "
                      + ", ".join(f"{k}: {v:,.0f}/s" for k, v in s["rps"].items())
                      + f"; 4 consumers {four:.2f}x one ({'met' if four >= TARGETS['scaling'] else 'MISSED'}: "
                      f">= {TARGETS['scaling']}), 8: {s['ratios'].get(8, 0.0):.2f}x", flush=True)
            report[name] = cell
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
