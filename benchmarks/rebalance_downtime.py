"""Rebalance downtime: partition-seconds during which no group member owns a partition.

Run it (about 1.5 minutes here; ``--quick`` restarts 2 members instead of 6 and waits less)::

    nice -n 5 python benchmarks/rebalance_downtime.py --out results.json --plot docs/rebalance_timeline.png

The embedded coordinator (``EmbeddedCluster``, 1 node, group_initial_rebalance_delay_ms=0) runs
in a child process together with a producer thread that appends steadily to every partition
(50 records/s/partition by default); the members consume and auto-commit (every 1 s).  Ownership
is what the rebalance listener says: from on_partitions_assigned to on_partitions_revoked / lost,
stamped with time.monotonic() into a shared log (groupclient members are threads of this process,
each its own GroupConsumer and poll loop; kafka-python 3.0.12 members are pre-started child
processes that log their own times).  Member settings: session_timeout_ms=6000,
heartbeat_interval_ms=500, max_poll_interval_ms=10000, metadata_max_age_ms=5000, poll(100 ms).

Scenarios: (a) scale-out 3 -> 6 members, measured from the first new member's start until the
group is Stable with 6 members each owning partitions, every partition owned by exactly one, and
nothing changed for a quiet period; (b) rolling restart of the 6 members (close one, start its
replacement at once, same group_instance_id for static members, wait stable, next one).
Rebalances = the coordinator's generation (DescribeGroups) at the end minus at the start.

``--kafka`` runs benchmarks/kafka_downtime.py instead: the consumer group protocol (KIP-848) against
the classic one on Apache Kafka 4.1 (its other options are passed on).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.ownership_log import (  # noqa: E402
    OwnershipLog, Run, from_json, plot_timelines, record_outcome, table, unowned_seconds,
)
from kafka.consumer.subscription_state import ConsumerRebalanceListener as KpListener  # noqa: E402

from groupclient import GroupConsumer  # noqa: E402

SETTINGS: dict[str, Any] = dict(
    session_timeout_ms=6000, heartbeat_interval_ms=500, max_poll_interval_ms=10000, metadata_max_age_ms=5000,
    auto_offset_reset="earliest", enable_auto_commit=True, auto_commit_interval_ms=1000)
DELAY_MS = 0  # group_initial_rebalance_delay_ms of the embedded coordinator


@dataclass(frozen=True)
class Config:
    name: str
    client: str  # "groupclient" or "kafka-python"
    strategy: str
    static: bool = False


CONFIGS = [
    Config("gc eager range", "groupclient", "range"),
    Config("gc eager sticky", "groupclient", "sticky"),
    Config("gc cooperative", "groupclient", "cooperative-sticky"),
    Config("gc static range", "groupclient", "range", static=True),
    Config("gc static coop", "groupclient", "cooperative-sticky", static=True),
    Config("kafka-python range", "kafka-python", "range"),
]
BASELINE, COOPERATIVE = "gc eager range", "gc cooperative"


# -- child processes ---------------------------------------------------------------------------
def coordinator_worker(delay_ms: int, rate: float) -> None:
    """Child: the embedded coordinator, a producer thread, and a line protocol on stdin/stdout."""
    from groupclient.coordinator import EmbeddedCluster
    logging.basicConfig(level=logging.ERROR)
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=delay_ms) as cluster:
        target: list[tuple[str, int]] = []
        stop = threading.Event()

        def produce() -> None:
            while not stop.wait(0.02):
                if target:
                    topic, partitions = target[-1]
                    count = max(1, round(rate * 0.02)) * partitions  # round-robin: equal per partition
                    cluster.produce(topic, [b"v" * 100] * count)

        threading.Thread(target=produce, daemon=True).start()
        print(json.dumps({"bootstrap": cluster.bootstrap_servers}), flush=True)
        for line in sys.stdin:
            cmd, *words = line.split()
            reply: Any = None
            if cmd == "topic":
                cluster.create_topic(words[0], int(words[1]))
                target.append((words[0], int(words[1])))
            elif cmd == "describe":
                d = cluster.describe_group(words[0])
                reply = d and {"state": d["state"], "generation": d["generation"], "members": len(d["members"])}
            elif cmd == "stop":
                break
            print(json.dumps(reply), flush=True)
        stop.set()


class Coordinator:
    def __init__(self, delay_ms: int, rate: float) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--coordinator-worker", "--delay-ms", str(delay_ms),
                                      "--rate", str(rate)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.bootstrap: str = json.loads(self.proc.stdout.readline())["bootstrap"]
        self._lock = threading.Lock()

    def ask(self, *words: str) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self._lock:
            self.proc.stdin.write(" ".join(words) + "\n")
            self.proc.stdin.flush()
            return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("stop\n")
        self.proc.stdin.close()
        self.proc.wait(30)


# -- members -----------------------------------------------------------------------------------
Emit = Callable[[str, list[int]], None]


class Listener(KpListener):  # type: ignore[misc]  # kafka-python's class; GroupConsumer takes it too
    def __init__(self, emit: Emit) -> None:
        self.emit = emit

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.emit("assigned", [tp.partition for tp in assigned])

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.emit("revoked", [tp.partition for tp in revoked])

    def on_partitions_lost(self, lost: Any) -> None:
        self.emit("lost", [tp.partition for tp in lost])


def consume(consumer: Any, spec: dict[str, Any], stop: threading.Event, emit: Emit) -> int:
    """Subscribe, poll until ``stop``, close; returns the records consumed.  With ``work_ms`` each
    non-empty batch takes uniform(0.5, 1.5) x work_ms to process, so members drift out of step."""
    consumer.subscribe([spec["topic"]], listener=Listener(emit))
    records, rng = 0, random.Random(spec["name"])
    try:
        while not stop.is_set():
            got = sum(len(b) for b in consumer.poll(timeout_ms=100).values())
            records += got
            if got and spec["work_ms"]:
                time.sleep(spec["work_ms"] * rng.uniform(0.5, 1.5) / 1000)
    finally:
        consumer.close()
        emit("closed", [])
    return records


def kp_worker() -> None:
    """Child: one kafka-python member.  Says ready once imported, reads its spec, then prints
    listener events with its own monotonic times until a second line arrives on stdin."""
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    assignors = {"range": RangePartitionAssignor, "sticky": StickyPartitionAssignor,
                 "cooperative-sticky": CooperativeStickyAssignor}
    logging.basicConfig(level=logging.ERROR)
    print(json.dumps({"ready": True}), flush=True)
    spec = json.loads(sys.stdin.readline())
    stop, lock = threading.Event(), threading.Lock()

    def stop_on_next_line() -> None:
        sys.stdin.readline()
        stop.set()

    threading.Thread(target=stop_on_next_line, daemon=True).start()
    consumer = KafkaConsumer(bootstrap_servers=spec["bootstrap"], group_id=spec["group"], client_id=spec["name"],
                             group_instance_id=spec["instance_id"],
                             partition_assignment_strategy=[assignors[spec["strategy"]]], **SETTINGS)

    def emit(kind: str, partitions: list[int]) -> None:
        generation = getattr(getattr(consumer._coordinator, "_generation", None), "generation_id", -1)
        with lock:
            print(json.dumps({"t": time.monotonic(), "kind": kind, "partitions": partitions,
                              "generation": generation if kind == "assigned" else -1}), flush=True)

    print(json.dumps({"records": consume(consumer, spec, stop, emit)}), flush=True)


class GcMember:
    """A groupclient member: a thread with its own GroupConsumer and poll loop."""

    def __init__(self, spec: dict[str, Any], log: OwnershipLog) -> None:
        self.name, self.spec, self.log = spec["name"], spec, log
        self.stopping = threading.Event()
        self.records, self.error = 0, ""
        self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        consumer = GroupConsumer(bootstrap_servers=self.spec["bootstrap"], group_id=self.spec["group"],
                                 client_id=self.name, group_instance_id=self.spec["instance_id"],
                                 partition_assignment_strategy=[self.spec["strategy"]], **SETTINGS)

        def emit(kind: str, partitions: list[int]) -> None:
            generation = consumer.group_metadata().generation_id if kind == "assigned" else -1
            self.log.record(self.name, kind, partitions, generation)

        try:
            self.records = consume(consumer, self.spec, self.stopping, emit)
        except Exception as exc:  # reported, not hidden
            self.error = repr(exc)

    def stop(self) -> None:
        self.stopping.set()

    def join(self, timeout_s: float = 30) -> None:
        self.thread.join(timeout_s)
        if self.thread.is_alive():
            self.error = "did not close in time"


class KpMember:
    """A kafka-python member in a child process started ahead (so interpreter start-up and imports
    are not counted); the constructor hands it its spec."""
    warm: list[subprocess.Popen[str]] = []

    @classmethod
    def prewarm(cls) -> None:
        cls.warm.append(subprocess.Popen([sys.executable, __file__, "--kp-worker"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True))

    def __init__(self, spec: dict[str, Any], log: OwnershipLog) -> None:
        if not self.warm:
            self.prewarm()
        self.proc = self.warm.pop(0)
        assert self.proc.stdout is not None and self.proc.stdin is not None
        assert json.loads(self.proc.stdout.readline()) == {"ready": True}
        self.name, self.log, self.records, self.error = spec["name"], log, 0, ""
        self.proc.stdin.write(json.dumps(spec) + "\n")
        self.proc.stdin.flush()
        self.prewarm()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            if "kind" in event:
                self.log.record(self.name, event["kind"], event["partitions"], event["generation"], t=event["t"])
            else:
                self.records = event["records"]

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("stop\n")
        self.proc.stdin.flush()

    def join(self, timeout_s: float = 30) -> None:
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.error = "did not close in time"
            self.proc.kill()
        self.reader.join(5)


Member = GcMember | KpMember


# -- one run -----------------------------------------------------------------------------------
class Group:
    def __init__(self, coord: Coordinator, cfg: Config, args: argparse.Namespace) -> None:
        self.coord, self.cfg, self.partitions, self.quiet_s = coord, cfg, args.partitions, args.quiet_s
        self.work_ms: int = args.work_ms
        tag = uuid.uuid4().hex[:6]
        self.group, self.topic = f"rd-{tag}", f"rd-{tag}"
        coord.ask("topic", self.topic, str(self.partitions))
        self.log = OwnershipLog()
        self.members: list[Member] = []
        self.errors: list[str] = []
        self.gen_changes: list[tuple[float, int]] = []
        self._done = threading.Event()
        self._latest: dict[str, Any] | None = None
        while cfg.client == "kafka-python" and len(KpMember.warm) < 3:
            KpMember.prewarm()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        """Samples DescribeGroups every 50 ms: state, member count, generation (and when it changed)."""
        while not self._done.wait(0.05):
            d = self.coord.ask("describe", self.group)
            if d and (not self.gen_changes or self.gen_changes[-1][1] != d["generation"]):
                self.gen_changes.append((time.monotonic(), d["generation"]))
            self._latest = d

    def generation(self) -> int:
        d = self.coord.ask("describe", self.group)
        return int(d["generation"]) if d else 0

    def start(self, i: int, incarnation: int = 0) -> Member:
        spec = {"bootstrap": self.coord.bootstrap, "group": self.group, "topic": self.topic,
                "name": f"m{i}" + "'" * incarnation, "strategy": self.cfg.strategy, "work_ms": self.work_ms,
                "instance_id": f"inst-{i}" if self.cfg.static else None}
        return (GcMember if self.cfg.client == "groupclient" else KpMember)(spec, self.log)

    def settled(self) -> bool:
        d, owners = self._latest, self.log.owners()
        names = {m.name for m in self.members}
        owning = {m for p in range(self.partitions) for m in owners.get(p, ())}
        now = time.monotonic()
        return bool(d and d["state"] == "Stable" and d["members"] == len(self.members)
                    and all(len(owners.get(p, ())) == 1 for p in range(self.partitions)) and owning == names
                    and now - self.log.last_change() >= self.quiet_s
                    and now - (self.gen_changes[-1][0] if self.gen_changes else 0) >= self.quiet_s)

    def wait_settled(self, timeout_s: float = 60) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.settled():
                return True
            time.sleep(0.05)
        self.errors.append(f"not settled after {timeout_s} s: {self._latest}, owners {self.log.owners()}, "
                           f"members {[m.name for m in self.members]}")
        return False

    def stop(self, members: list[Member]) -> None:
        for m in members:
            m.stop()
        for m in members:
            m.join()
            if m.error:
                self.errors.append(f"{m.name}: {m.error}")

    def finish(self, run: Run, t0: float, gen0: int, ok: bool) -> Run:
        end = self.log.last_change() if ok else time.monotonic()
        run.rebalances, run.total_s, run.timed_out = self.generation() - gen0, max(0.0, end - t0), not ok
        run.unowned = unowned_seconds(self.log.events(), self.partitions, t0, max(end, t0))
        run.generation_times = [round(t - t0, 3) for t, _ in self.gen_changes if t0 <= t <= end + self.quiet_s]
        run.member_generations = sorted({e.generation for e in self.log.events() if e.t >= t0 and e.kind == "assigned"})
        run.stopped_s = time.monotonic() - t0
        self.stop(self.members)
        self._done.set()
        return record_outcome(run, self.log.events(), t0, sum(m.records for m in self.members), self.errors)


def scale_out(coord: Coordinator, cfg: Config, args: argparse.Namespace) -> Run:
    g = Group(coord, cfg, args)
    g.members = [g.start(i) for i in range(3)]
    g.wait_settled()  # if not, the run goes on with the error noted (and its members are stopped)
    gen0, t0 = g.generation(), time.monotonic()
    g.members += [g.start(i) for i in range(3, 6)]
    return g.finish(Run("scale-out 3->6", cfg.name), t0, gen0, g.wait_settled())


def rolling_restart(coord: Coordinator, cfg: Config, args: argparse.Namespace) -> Run:
    g = Group(coord, cfg, args)
    g.members = [g.start(i) for i in range(6)]
    g.wait_settled()
    run = Run("rolling restart 6", cfg.name)
    gen0, t0, ok = g.generation(), time.monotonic(), True
    for i in range(args.restarts):
        closing = time.monotonic()
        g.stop([g.members[i]])
        g.members[i] = g.start(i, incarnation=1)
        run.max_restart_gap_s = max(run.max_restart_gap_s, time.monotonic() - closing)
        ok = g.wait_settled() and ok
    return g.finish(run, t0, gen0, ok)


# -- report ------------------------------------------------------------------------------------
def plot(runs: list[Run], args: argparse.Namespace) -> None:
    panels = []
    for name in (BASELINE, COOPERATIVE):
        run = next((r for r in runs if r.scenario.startswith("scale-out") and r.config == name), None)
        if run is not None:
            panels.append((f"scale-out 3->6, groupclient {name.removeprefix('gc ')}", from_json(run.events),
                           0.0, run.total_s, run.stopped_s, run.generation_times))
    if panels:
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        plot_timelines(panels, args.partitions, args.plot)
        print(f"timeline written to {args.plot}")


def main() -> int:
    if "--kafka" in sys.argv[1:]:
        # the consumer group protocol (KIP-848) needs Apache Kafka: benchmarks/kafka_downtime.py
        from benchmarks.kafka_downtime import main as on_kafka
        return on_kafka([a for a in sys.argv[1:] if a != "--kafka"])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="restart 2 members, shorter quiet period")
    parser.add_argument("--out", default=None, help="write every run (with its event log) as JSON")
    parser.add_argument("--plot", default=None, help="PNG timeline of scale-out, eager vs cooperative")
    parser.add_argument("--configs", default=None, help="comma-separated subset of configuration names")
    parser.add_argument("--scenarios", default="scale-out,rolling")
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--rate", type=float, default=50, help="records/s per partition")
    parser.add_argument("--work-ms", type=int, default=0, help="simulated processing per non-empty poll (default 0)")
    parser.add_argument("--coordinator-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kp-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--delay-ms", type=int, default=DELAY_MS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.coordinator_worker:
        coordinator_worker(args.delay_ms, args.rate)
        return 0
    if args.kp_worker:
        kp_worker()
        return 0
    logging.basicConfig(level=logging.ERROR)
    args.restarts, args.quiet_s = (2, 0.6) if args.quick else (6, 1.0)
    chosen = [c for c in CONFIGS if args.configs is None or c.name in args.configs.split(",")]
    print(f"coordinator: EmbeddedCluster, 1 node, group_initial_rebalance_delay_ms={args.delay_ms}; "
          f"{args.partitions} partitions, {args.rate:g} records/s/partition; members: "
          + ", ".join(f"{k}={v}" for k, v in SETTINGS.items())
          + f"; quiet period {args.quiet_s} s; processing {args.work_ms} ms per batch", flush=True)
    coord = Coordinator(args.delay_ms, args.rate)
    runs: list[Run] = []
    try:
        for scenario, fn in (("scale-out", scale_out), ("rolling", rolling_restart)):
            if scenario not in args.scenarios:
                continue
            for cfg in chosen:
                run = fn(coord, cfg, args)
                runs.append(run)
                print(f"  {run.scenario:18s} {run.config:19s} unowned {run.unowned:6.2f} p*s, {run.rebalances} "
                      f"rebalances, {run.total_s:.2f} s, generations seen by members {run.member_generations}"
                      + (f", restart gap max {run.max_restart_gap_s:.2f} s" if run.max_restart_gap_s else "")
                      + (f", errors {run.errors}" if run.errors else ""), flush=True)
    finally:
        for proc in KpMember.warm:
            proc.kill()
        coord.close()
    print()
    print(table(runs, BASELINE, COOPERATIVE, SETTINGS["session_timeout_ms"]))
    if args.out:
        Path(args.out).write_text(json.dumps([asdict(r) for r in runs], indent=1))
    if args.plot:
        plot(runs, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
