"""The coordinator's KIP-848 assignors (``uniform``, ``range``) at Kafka's benchmark sizes.

Run it (under a minute here, with ``--java`` too)::

    nice -n 5 python benchmarks/server_assignors.py [--java]

Each size is assigned from scratch ("full") and again after one member joined ("incremental":
every other member holds its previous target), homogeneous subscriptions over 10 topics; the
best of ``--repeats`` runs is reported.  Kafka's own JMH benchmark (ServerSideAssignorBenchmark)
reports about 21 ms for the uniform assignor at 10,000 members x 100,000 partitions in Java; the
target (issue 24) is within 10x of Java, measured as a ratio against Kafka's assignors in the same
run on the same machine (``--java``; results in docs/assignors.md).

``--java`` also times Apache Kafka's own ``UniformAssignor`` and ``RangeAssignor`` (the broker's
kafka-group-coordinator jar, fetched by tests/kafka/broker.py) on the same shapes in the same run:
benchmarks/ServerAssignorBench.java, compiled into a temporary directory, run once per size after
the Python cases (never at the same time).  Java warms up (JIT) for at least ``--java-warmup`` runs
and ``--java-warmup-s`` seconds per case, then reports the best of ``--repeats`` timed runs, like the
Python side; a ``Python/Java`` row gives the ratios, and the notes under the table give both
medians and say whether both produced the same assignment.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from statistics import median
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from groupclient.coordinator.consumer_group.assignors import (  # noqa: E402
    SERVER_ASSIGNORS as ASSIGNORS, Assignment, MemberSpec,
)

Assign = Callable[[Sequence[MemberSpec], Mapping[uuid.UUID, int]], dict[str, Assignment]]
JAVA_SOURCE = Path(__file__).with_name("ServerAssignorBench.java")
TOPICS = 10
KINDS = ("full", "incremental")


def timed(assign: Assign, members: list[MemberSpec], partitions: dict[uuid.UUID, int],
          repeats: int) -> tuple[list[float], dict[str, Assignment]]:
    """The ``repeats`` runs' times in ms, fastest first, and the last run's assignment."""
    times: list[float] = []
    result: dict[str, Assignment] = {}
    for _ in range(repeats):
        started = time.perf_counter()
        result = assign(members, partitions)
        times.append((time.perf_counter() - started) * 1000)
    return sorted(times), result


def _ms(value: float) -> str:
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def _signed(value: int) -> int:
    return value - 2**64 if value >= 2**63 else value


def digest(assignment: Mapping[str, Assignment]) -> str:
    """The same fingerprint as ServerAssignorBench.digest: SHA-256 of "member\\tmsb:lsb\\tp,p,p\\n"
    lines, members by id, topics in Kafka's Uuid order, partitions ascending, empty topics left out."""
    sha = hashlib.sha256()
    for member in sorted(assignment):
        topics = assignment[member]
        for topic in sorted(topics, key=lambda t: (_signed(t.int >> 64), _signed(t.int & (2**64 - 1)))):
            if topics[topic]:
                parts = ",".join(map(str, sorted(topics[topic])))
                sha.update(f"{member}\t{_signed(topic.int >> 64)}:{_signed(topic.int & (2**64 - 1))}\t{parts}\n"
                           .encode())
    return sha.hexdigest()[:16]


@dataclass
class JavaCase:
    best_ms: float
    median_ms: float
    warmup_runs: int
    digest: str


@dataclass
class JavaRun:
    cases: dict[tuple[str, str], JavaCase]
    notes: list[str]


class JavaBench:
    """benchmarks/ServerAssignorBench.java, compiled against Kafka's jars into a temporary directory."""

    def __init__(self, heap: str) -> None:
        from tests.kafka.broker import KAFKA_VERSION, fetch, home  # the project's Kafka download

        self.version = KAFKA_VERSION
        self.libs = fetch()
        self.log4j = home() / "log4j2.xml"
        self.heap = heap
        self._classes = tempfile.TemporaryDirectory(prefix="server-assignor-bench-")
        subprocess.run(["javac", "-nowarn", "-cp", f"{self.libs}/*", "-d", self._classes.name, str(JAVA_SOURCE)],
                       check=True, capture_output=True, timeout=300)
        version = subprocess.run(["java", "-version"], capture_output=True, text=True, check=True)
        self.jvm = version.stderr.splitlines()[0] if version.stderr else "java"

    def run(self, members: int, partitions: int, warmup: int, warmup_s: float, repeats: int,
            timeout_s: float) -> JavaRun:
        command = ["java", f"-Xmx{self.heap}", f"-Dlog4j2.configurationFile={self.log4j}",
                   "-cp", f"{self.libs}/*:{self._classes.name}", "ServerAssignorBench",
                   str(members), str(partitions), str(TOPICS), str(warmup), str(warmup_s), str(repeats)]
        started = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
        if done.returncode != 0:
            raise RuntimeError(f"ServerAssignorBench exited {done.returncode}: {done.stderr.strip()[-2000:]}")
        run = JavaRun({}, [])
        for line in done.stdout.splitlines():
            case = re.fullmatch(r"case (\S+) (\S+) best_ms=(\S+) median_ms=(\S+) warmup_runs=(\d+) digest=(\S+)", line)
            if case:
                run.cases[(case[1], case[2])] = JavaCase(float(case[3]), float(case[4]), int(case[5]), case[6])
            elif line.startswith(("setup ", "inverted ")):
                run.notes.append(line)
        run.notes.append(f"java process: {time.monotonic() - started:.1f} s wall")
        return run

    def close(self) -> None:
        self._classes.cleanup()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per case (best reported), both sides")
    parser.add_argument("--sizes", default="10000x100000,2000x1000000", help="members x partitions, comma-separated")
    parser.add_argument("--java", action="store_true",
                        help="also time Kafka's own Java assignors on the same shapes and print Python/Java")
    parser.add_argument("--java-warmup", type=int, default=10,
                        help="at least this many untimed Java runs per case (JIT)")
    parser.add_argument("--java-warmup-s", type=float, default=3, help="and at least this long, per case")
    parser.add_argument("--java-heap", default="6g", help="the JVM's -Xmx")
    parser.add_argument("--java-timeout-s", type=float, default=600, help="per size")
    args = parser.parse_args()
    java = JavaBench(args.java_heap) if args.java else None
    load_before = os.getloadavg()[0]
    topics = [uuid.UUID(int=i + 1) for i in range(TOPICS)]
    notes: list[str] = []
    print("| assignor | members | partitions | full (ms) | incremental (ms) |\n| --- | --- | --- | --- | --- |")
    try:
        for size in args.sizes.split(","):
            count, total = (int(v) for v in size.split("x"))
            partitions = {t: total // len(topics) for t in topics}
            members = [MemberSpec(f"member-{i:07d}", frozenset(topics)) for i in range(count)]
            python: dict[tuple[str, str], tuple[list[float], str]] = {}
            for name, assign in ASSIGNORS.items():
                full, result = timed(assign, members, partitions, args.repeats)
                previous = assign(members, partitions)
                grown = [MemberSpec(m.member_id, m.topics, previous[m.member_id]) for m in members]
                grown.append(MemberSpec("member-new", frozenset(topics)))
                del previous
                incremental, grown_result = timed(assign, grown, partitions, args.repeats)
                print(f"| {name} | {count} | {total} | {full[0]:.0f} | {incremental[0]:.0f} |", flush=True)
                if java is not None:
                    python[(name, "full")] = (full, digest(result))
                    python[(name, "incremental")] = (incremental, digest(grown_result))
                del result, grown_result, grown
            if java is None:
                continue
            del members
            try:
                run = java.run(count, total, args.java_warmup, args.java_warmup_s, args.repeats, args.java_timeout_s)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                print(f"| {', '.join(ASSIGNORS)} (Java {java.version}) | {count} | {total} | failed | failed |",
                      flush=True)
                notes.append(f"{count} x {total}, Java: {exc}")
                continue
            for name in ASSIGNORS:
                cells = [run.cases.get((name, kind)) for kind in KINDS]
                print(f"| {name} (Java {java.version}) | {count} | {total} | "
                      + " | ".join("-" if c is None else _ms(c.best_ms) for c in cells) + " |")
                ratios = ["-" if c is None else f"{python[(name, kind)][0][0] / c.best_ms:.1f}x"
                          for kind, c in zip(KINDS, cells)]
                print(f"| {name} Python/Java | {count} | {total} | {ratios[0]} | {ratios[1]} |", flush=True)
                for kind, c in zip(KINDS, cells):
                    if c is not None:
                        times, fingerprint = python[(name, kind)]
                        same = "same assignment" if c.digest == fingerprint else "different assignments"
                        notes.append(f"{count} x {total}, {name} {kind}: median Python {median(times):.1f} ms, "
                                     f"Java {c.median_ms:.1f} ms ({c.warmup_runs} warm-up runs); {same} "
                                     f"(digests {fingerprint}, {c.digest})")
            notes.extend(f"{count} x {total}, Java {line}" for line in run.notes)
    finally:
        if java is not None:
            java.close()
    if java is not None:
        print(f"\nPython: best of {args.repeats}. Java ({java.jvm}, -Xmx{args.java_heap}, default GC): "
              f"warm-up of >= {args.java_warmup} runs and >= {args.java_warmup_s:g} s per case, then best of "
              f"{args.repeats}, System.gc() before each; incremental excludes building the inverted target "
              "assignment Kafka's coordinator keeps (the 'inverted' notes).")
        notes.append(f"1-minute load average {load_before:.2f} at the start, {os.getloadavg()[0]:.2f} at the end "
                     f"({os.cpu_count()} cores; well above 1: other work shared them, the figures are noisy)")
        for note in notes:
            print(f"- {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
