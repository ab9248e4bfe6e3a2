"""Single requests with extreme values against the coordinator process (with a data dir, under
a 1,024-descriptor limit): what it answers, how long it takes, and the server's memory (RSS) and
open descriptors while it handles each, sampled from /proc every 10 ms.

Usage: python benchmarks/extreme_requests.py
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from brokers import coordinator  # noqa: E402
from kafka import KafkaProducer  # noqa: E402
from kafka.protocol.admin.topics import CreateTopicsRequest  # noqa: E402
from kafka.protocol.metadata.metadata import MetadataRequest  # noqa: E402

from groupclient.error_codes import ErrorCode  # noqa: E402
from tests.integration.wire import WireClient  # noqa: E402

MIB = 1024 * 1024


class Sampler:
    """Peak RSS and descriptors of one process while a case runs."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def rss(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def during(self, work: Callable[[], str]) -> dict[str, Any]:
        before_rss, before_fds = self.rss(), self.fds()
        peak = [before_rss, before_fds]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.01):
                peak[0], peak[1] = max(peak[0], self.rss()), max(peak[1], self.fds())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        started = time.monotonic()
        answer = work()
        elapsed = time.monotonic() - started
        done.set()
        sampler.join()
        return {"answer": answer, "seconds": elapsed, "rss_before_mib": before_rss / MIB,
                "rss_peak_mib": peak[0] / MIB, "fds_before": before_fds, "fds_peak": peak[1]}


def create(address: str, name: str, partitions: int) -> str:
    wire = WireClient(address, timeout_s=60)
    try:
        resp = wire.request(CreateTopicsRequest(version=7, timeout_ms=30_000, validate_only=False, topics=[
            CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=-1,
                                               assignments=[], configs=[])]))
        topic = resp.topics[0]
        return f"{ErrorCode(topic.error_code).name}" + (f" \"{topic.error_message}\"" if topic.error_message else "")
    finally:
        wire.close()


def auto_create(address: str, count: int) -> str:
    wire = WireClient(address, timeout_s=60)
    try:
        resp = wire.request(MetadataRequest(version=12, topics=[MetadataRequest.MetadataRequestTopic(name=f"auto-{i}")
                                                                for i in range(count)],
                                            allow_auto_topic_creation=True, include_topic_authorized_operations=False))
        codes: dict[str, int] = {}
        for t in resp.topics:
            codes[ErrorCode(t.error_code).name] = codes.get(ErrorCode(t.error_code).name, 0) + 1
        return ", ".join(f"{n} x{c}" for n, c in sorted(codes.items()))
    finally:
        wire.close()


def produce_everywhere(address: str, topic: str, partitions: int) -> str:
    producer = KafkaProducer(bootstrap_servers=address, acks="all", linger_ms=5)
    try:
        futures = [producer.send(topic, b"v", partition=p) for p in range(partitions)]
        producer.flush(120)
        return f"{sum(1 for f in futures if f.succeeded())} of {partitions} acknowledged"
    finally:
        producer.close()


def huge_frames(address: str, connections: int, size: int) -> str:
    """``connections`` clients each send a whole frame of ``size`` bytes of garbage at once."""
    clients = [WireClient(address, timeout_s=120) for _ in range(connections)]
    body = b"\xff" * size  # API key -1: read whole, then refused
    errors: list[str] = []

    def send(client: WireClient) -> None:
        try:
            client.send_raw(size.to_bytes(4, "big") + body)
            client.is_closed_by_server()
        except OSError as exc:
            errors.append(type(exc).__name__)

    threads = [threading.Thread(target=send, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    for c in clients:
        c.close()
    return f"each connection read whole, then closed ({len(errors)} send errors)"


def declared_frames(address: str, connections: int) -> str:
    """Frames declared at the limit whose bodies never come (a slowloris with big promises)."""
    clients = [WireClient(address, timeout_s=30) for _ in range(connections)]
    try:
        for client in clients:
            client.send_raw((100 * MIB - 1).to_bytes(4, "big") + b"\xff" * MIB)
        time.sleep(2)  # a figure, not a test: let the server take in what it will
        return f"held unread; meanwhile a new connection's CreateTopics: {still_serves(address)}"
    finally:
        for client in clients:
            client.close()


def still_serves(address: str) -> str:
    return create(address, f"after-{time.monotonic_ns()}", 1)


def main() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))  # inherited by the server
    rows: list[tuple[str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as data_dir:
        measure(data_dir, rows)
    print("| request | answer | s | RSS before → peak (MiB) | fds before → peak |")
    print("|---|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {r['answer']} | {r['seconds']:.2f} | {r['rss_before_mib']:.0f} → {r['rss_peak_mib']:.0f} "
              f"| {r['fds_before']} → {r['fds_peak']} |")
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return 0


def measure(data_dir: str, rows: list[tuple[str, dict[str, Any]]]) -> None:
    with coordinator("--data-dir", data_dir) as broker:
        sampler, address = Sampler(broker.pid), broker.bootstrap
        cases: list[tuple[str, Callable[[], str]]] = [
            ("CreateTopics, 2^31-1 partitions", lambda: create(address, "huge", 2**31 - 1)),
            ("CreateTopics, 1,500 partitions", lambda: create(address, "wide", 1500)),
            ("a record to each of the 1,500 partitions (acks=all)", lambda: produce_everywhere(address, "wide", 1500)),
            ("Metadata auto-creating 1,100 topics", lambda: auto_create(address, 1100)),
            ("Metadata auto-creating 11,000 topics", lambda: auto_create(address, 11_000)),
            ("8 connections, a 100 MiB frame each at once", lambda: huge_frames(address, 8, 100 * MIB - 1)),
            ("50 connections declaring a 100 MiB frame, 1 MiB of it sent", lambda: declared_frames(address, 50)),
            ("then a new connection's CreateTopics", lambda: still_serves(address)),
        ]
        for name, work in cases:
            rows.append((name, sampler.during(work)))
            print(f"done: {name}", file=sys.stderr)
    with coordinator("--data-dir", data_dir) as again:
        rows.append(("restart on the same data dir, then CreateTopics",
                     Sampler(again.pid).during(lambda: still_serves(again.bootstrap))))


if __name__ == "__main__":
    sys.exit(main())
