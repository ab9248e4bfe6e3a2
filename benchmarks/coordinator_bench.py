"""Coordinator benchmarks, against Tansu in the same run.

1. Cold join latency of 3 and 20 kafka-python consumers: from creating the consumers until every
   partition is owned (one partition per consumer), median of several runs.
2. CPU of the coordinator process while 1000 members in 100 groups heartbeat once a second.
3. The same under KIP-848's consumer protocol (``--protocols``): 1000 ConsumerGroupHeartbeat members
   in 100 groups at a 1 s interval, each group owning a 10-partition topic, against 1000 classic
   members in a coordinator of the same settings, in the same run: CPU per member and the ratio.

Usage: python benchmarks/coordinator_bench.py [--runs 3] [--skip-tansu] [--protocols-only]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import ContextManager

sys.path.insert(0, str(Path(__file__).resolve().parent))

from brokers import BrokerProcess, coordinator, cpu_seconds, tansu, tansu_binary  # noqa: E402
from heartbeat_load import run_load  # noqa: E402
from kafka import KafkaConsumer  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402


def join_latency(broker: BrokerProcess, consumers: int, run: int) -> float:
    topic = f"join-{consumers}-{run}"
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(topic, consumers, 1)])
    admin.close()
    time.sleep(0.5)
    done = threading.Event()
    members: list[KafkaConsumer] = []
    lock = threading.Lock()
    stop = threading.Event()

    def member() -> None:
        c = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=f"g-{topic}",
                          session_timeout_ms=6000, heartbeat_interval_ms=1000, enable_auto_commit=False)
        with lock:
            members.append(c)
        while not stop.is_set():
            c.poll(timeout_ms=50)
        c.close()

    started = time.monotonic()
    threads = [threading.Thread(target=member, daemon=True) for _ in range(consumers)]
    for t in threads:
        t.start()
    deadline = started + 120
    elapsed = float("nan")
    while time.monotonic() < deadline:
        with lock:
            owned = [tp.partition for c in members for tp in c.assignment()]
        if len(members) == consumers and sorted(owned) == list(range(consumers)):
            elapsed = time.monotonic() - started
            break
        time.sleep(0.01)
    done.set()
    stop.set()
    for t in threads:
        t.join(30)
    return elapsed


def heartbeat_cpu(broker: BrokerProcess, groups: int, per_group: int, measure_s: float,
                  protocol: str = "classic") -> tuple[float, int, dict[int, int]]:
    marks: list[float] = []

    def mark(token: object = None) -> object:
        marks.append(cpu_seconds(broker.pid))
        return None

    stats = asyncio.run(run_load(broker.bootstrap, groups, per_group, settle_s=120, measure_s=measure_s,
                                 on_measure_start=mark, protocol=protocol))
    cpu = (marks[1] - marks[0]) / measure_s
    return cpu, stats.heartbeats, stats.errors


def protocols(measure_s: float, runs: int) -> None:
    """Coordinator CPU per heartbeating member, consumer protocol against classic, same settings."""
    settings = ("--consumer-heartbeat-interval-ms", "1000", "--consumer-min-heartbeat-interval-ms", "1000",
                "--topic", "load:10")  # every group subscribes to it: each member owns one partition
    per_member: dict[str, list[float]] = {"classic": [], "consumer": []}
    for run in range(runs):
        for protocol in ("classic", "consumer"):
            with coordinator(*settings) as broker:
                cpu, beats, errors = heartbeat_cpu(broker, 100, 10, measure_s, protocol)
            per_member[protocol].append(cpu / 1000)
            print(f"run {run + 1} {protocol:8s}: 1000 members / 100 groups: {cpu * 100:.1f}% of a core, "
                  f"{beats / measure_s:.0f} heartbeats/s, {cpu / 1000 * 1e6:.1f} us CPU per member per s"
                  + (f", errors {errors}" if errors else ""), flush=True)
    classic, consumer = (statistics.median(per_member[p]) for p in ("classic", "consumer"))
    print(f"median CPU per member: classic {classic * 1e6:.1f} us/s, consumer {consumer * 1e6:.1f} us/s; "
          f"ratio consumer/classic {consumer / classic:.2f}x", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-tansu", action="store_true")
    parser.add_argument("--measure-s", type=float, default=20.0)
    parser.add_argument("--protocols-only", action="store_true",
                        help="only the consumer protocol against the classic one (item 3)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    if args.protocols_only:
        protocols(args.measure_s, args.runs)
        return 0
    # delay 0: every late joiner costs a rebalance; 300 ms: Kafka's initial delayed join gathers
    # members that start together into one generation (Kafka's default is 3000 ms)
    brokers: list[tuple[str, Callable[[], ContextManager[BrokerProcess]]]] = [
        ("groupclient", lambda: coordinator("--initial-rebalance-delay-ms", "0")),
        ("groupclient-300", lambda: coordinator("--initial-rebalance-delay-ms", "300")),
    ]
    if not args.skip_tansu and tansu_binary() is not None:
        brokers.append(("tansu", tansu))
    results: dict[str, dict[str, float]] = {}
    for label, start in brokers:
        with start() as broker:
            broker.name = label
            figures: dict[str, float] = {}
            for n in (3, 20):
                samples = [join_latency(broker, n, run) for run in range(args.runs)]
                figures[f"join{n}"] = statistics.median(samples)
                print(f"{broker.name:15s} join latency, {n:2d} kafka-python consumers: "
                      f"median {figures[f'join{n}']:.3f} s  (runs: {', '.join(f'{s:.3f}' for s in samples)})",
                      flush=True)
            cpu, beats, errors = heartbeat_cpu(broker, 100, 10, args.measure_s)
            figures["cpu"] = cpu
            print(f"{broker.name:15s} 1000 members / 100 groups heartbeating: {cpu * 100:.1f}% of a core, "
                  f"{beats / args.measure_s:.0f} heartbeats/s, "
                  f"{cpu / max(beats / args.measure_s, 1) * 1e6:.0f} us CPU per heartbeat"
                  + (f", errors {errors}" if errors else ""), flush=True)
            results[broker.name] = figures
    protocols(args.measure_s, args.runs)
    if "tansu" in results:
        theirs = results["tansu"]
        for label in ("groupclient", "groupclient-300"):
            ours = results[label]
            for n in (3, 20):
                print(f"ratio join{n} {label}/tansu: {ours[f'join{n}'] / theirs[f'join{n}']:.2f}x")
            print(f"ratio heartbeat CPU {label}/tansu: {ours['cpu'] / max(theirs['cpu'], 1e-9):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
