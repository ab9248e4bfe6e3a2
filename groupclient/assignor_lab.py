"""Assignor lab: time, memory, balance and stickiness of partition assignors on generated groups.

A group is N members and P partitions over T topics; members subscribe to all topics ("uniform")
or to a random non-empty subset ("random", seeded).  Each run is a fresh subprocess
(``python -m groupclient.assignor_lab``), so its peak memory is its own: a fresh assignment (one
timed ``assign()``), then churn: 10% of the members leave, as many join, and the survivors report
what they got as their client would (eager ``sticky``: user data from ``on_assignment`` /
``subscription_user_data``; cooperative: owned partitions and generation).  Cooperative assignors
hold back partitions that change owner, so further rounds run until every partition has an owner.

kafka-python's assignors get what its ConsumerCoordinator gives them: a cluster with
``topics()``/``partitions_for_topic()`` and JoinGroup members whose metadata is the decoded
subscription each member's own assignor instance built.  Their ``assign()`` calls are capped at
``timeout_s``; ours only by a 30-minute backstop.  An integration module: the library never imports it.
"""

from __future__ import annotations

import importlib
import json
import random
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from types import FrameType
from typing import Any, NamedTuple

from .structs import TopicPartition

from .assignors import (
    ClusterView, PartitionAssignor, RebalanceProtocol, common_protocol, resolve_assignors, validate_assignment,
)
from .protocol.consumer_protocol import Assignment, Subscription

Placement = dict[str, list[TopicPartition]]
Owned = Mapping[str, list[TopicPartition]]  # member -> what it owned before this round
GROUPCLIENT, KAFKA_PYTHON = "groupclient", "kafka-python"
KAFKA_PYTHON_ASSIGNORS = {
    "range": "kafka.coordinator.assignors.range:RangePartitionAssignor",
    "roundrobin": "kafka.coordinator.assignors.roundrobin:RoundRobinPartitionAssignor",
    "sticky": "kafka.coordinator.assignors.sticky.sticky_assignor:StickyPartitionAssignor",
    "cooperative-sticky": "kafka.coordinator.assignors.cooperative_sticky:CooperativeStickyAssignor",
}
DEFAULT_ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
CHURN = 0.10
OURS_BACKSTOP_S = 1800.0
MEMORY_NOTE = ("memory: ru_maxrss of a fresh subprocess per run, whole process (interpreter + generated "
               "group + assignor); 'in' is the high-water mark before the first assign(), 'peak' right after it "
               "(after the churn for 'churn peak'); '+': the peak so far when the run timed out")


def default_topics(partitions: int) -> int:
    """partitions / 2000 topics, at least 5 (so that random subscriptions differ), at most P."""
    return max(1, min(partitions, max(5, partitions // 2000)))


@dataclass(frozen=True)
class GroupSpec:
    members: int
    partitions: int
    topics: int
    subscriptions: str = "uniform"  # or "random"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.subscriptions not in ("uniform", "random") or not 1 <= self.topics <= self.partitions \
                or self.members < 1:
            raise ValueError(f"bad group: {self}; subscriptions are uniform or random, 1 <= topics <= partitions")


@dataclass
class Group:
    counts: dict[str, int]  # topic -> partitions
    topics_of: dict[str, list[str]]  # member id -> subscribed topics


def _subscribe(rng: random.Random, names: Sequence[str], kind: str) -> list[str]:
    while kind == "random":
        if chosen := [t for t in names if rng.random() < 0.5]:
            return chosen
    return list(names)


def _member_id(rng: random.Random) -> str:
    return f"consumer-{rng.getrandbits(64):016x}"  # random, like Kafka's client-id-UUID member ids


def make_group(spec: GroupSpec) -> Group:
    rng = random.Random(spec.seed)
    names = [f"topic-{i:04d}" for i in range(spec.topics)]
    per_topic, extra = divmod(spec.partitions, spec.topics)
    counts = {t: per_topic + (1 if i < extra else 0) for i, t in enumerate(names)}
    return Group(counts, {_member_id(rng): _subscribe(rng, names, spec.subscriptions) for _ in range(spec.members)})


def churned(group: Group, spec: GroupSpec) -> tuple[Group, list[str]]:
    """The group after 10% of its members left and as many new ones joined; and the survivors."""
    rng = random.Random(spec.seed + 1)
    members = sorted(group.topics_of)
    leaving = set(rng.sample(members, max(1, round(len(members) * CHURN)) if len(members) > 1 else 0))
    survivors = [m for m in members if m not in leaving]
    topics_of = {m: group.topics_of[m] for m in survivors}
    names = sorted(group.counts)
    for _ in leaving:
        topics_of[_member_id(rng)] = _subscribe(rng, names, spec.subscriptions)
    return Group(group.counts, topics_of), survivors


class _Label(PartitionAssignor):  # names a kafka-python assignor in validate_assignment's messages
    def __init__(self, name: str) -> None:
        self.name = name

    def assign(self, cluster: ClusterView, subscriptions: Mapping[str, Subscription]) -> dict[str, Assignment]:
        raise NotImplementedError


class _CapExceeded(BaseException):
    """An assign() call ran past its cap (BaseException: assignors may catch Exception)."""


def load_object(spec: str) -> Any:  # "package.module:Attribute"
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


def implementation_of(assignor: str) -> str:
    """Whose assignor a name or ``module:Class`` is: ours, or kafka-python style (assign/metadata)."""
    if ":" not in assignor:
        return GROUPCLIENT
    obj = load_object(assignor)
    if (isinstance(obj, type) and issubclass(obj, PartitionAssignor)) or isinstance(obj, PartitionAssignor):
        return GROUPCLIENT
    if hasattr(obj, "assign") and hasattr(obj, "metadata"):
        return KAFKA_PYTHON
    raise ValueError(f"{assignor} is neither a groupclient PartitionAssignor nor a kafka-python assignor")


class _Impl:
    """``round`` builds every member's subscription as its client would and times the leader's
    ``assign()`` call alone."""

    cooperative = False
    cap_s = OURS_BACKSTOP_S

    def round(self, counts: dict[str, int], topics_of: Mapping[str, list[str]], owned: Owned,
              generation: int) -> tuple[float, Placement]:
        raise NotImplementedError

    def _timed(self, call: Callable[[], Any]) -> tuple[float, Any]:
        def expire(_signum: int, _frame: FrameType | None) -> None:
            raise _CapExceeded()

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, self.cap_s)
        try:
            started = time.perf_counter()
            out = call()
            return time.perf_counter() - started, out
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


class _Ours(_Impl):
    def __init__(self, assignor: str) -> None:
        if ":" in assignor:
            obj = load_object(assignor)
            made = obj if isinstance(obj, type) else type(obj)  # a class, or an instance's class
            self.factory: Callable[[], PartitionAssignor] = lambda: made()
        else:
            self.factory = lambda: resolve_assignors([assignor])[0]
        self.leader = self.factory()
        self.protocol = common_protocol([self.leader])
        self.cooperative = self.protocol is RebalanceProtocol.COOPERATIVE

    def round(self, counts: dict[str, int], topics_of: Mapping[str, list[str]], owned: Owned,
              generation: int) -> tuple[float, Placement]:
        subscriptions = {}
        for member, topics in topics_of.items():
            member_assignor, member_generation = self.factory(), -1
            if member in owned:
                member_assignor.on_assignment(Assignment(owned[member]), generation)
                member_generation = generation
            # as ConsumerGroupHooks.protocols(): under EAGER the member gave everything up first
            subscriptions[member] = Subscription(
                sorted(topics), member_assignor.subscription_user_data(set(topics)),
                list(owned.get(member, ())) if self.cooperative else [], member_generation)
        cluster = ClusterView(counts)
        seconds, out = self._timed(lambda: self.leader.assign(cluster, subscriptions))
        validate_assignment(self.leader, cluster, subscriptions, out, self.protocol)
        return seconds, {m: list(out[m].partitions) if m in out else [] for m in subscriptions}


class _KafkaCluster(NamedTuple):
    """What kafka-python's assignors use of its ClusterMetadata (a fresh set per call, as there)."""

    counts: dict[str, int]

    def topics(self, exclude_internal_topics: bool = True) -> set[str]:
        return set(self.counts)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return None if topic not in self.counts else set(range(self.counts[topic]))


class _JoinedMember(NamedTuple):  # JoinGroupResponseMember with decoded metadata
    member_id: str
    group_instance_id: str | None
    metadata: Any


class _KafkaPython(_Impl):
    def __init__(self, assignor: str, cap_s: float) -> None:
        from kafka.coordinator.assignors.abstract import RebalanceProtocol as KafkaProtocol

        self.cls = load_object(KAFKA_PYTHON_ASSIGNORS.get(assignor, assignor))
        self.leader = self.cls()
        self.cooperative = KafkaProtocol.COOPERATIVE in self.leader.supported_protocols()
        self.protocol = RebalanceProtocol.COOPERATIVE if self.cooperative else RebalanceProtocol.EAGER
        self.cap_s = cap_s

    def round(self, counts: dict[str, int], topics_of: Mapping[str, list[str]], owned: Owned,
              generation: int) -> tuple[float, Placement]:
        from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

        members = []
        for member, topics in topics_of.items():
            member_assignor = self.cls()
            if member in owned:
                by_topic: dict[str, list[int]] = {}
                for tp in owned[member]:
                    by_topic.setdefault(tp.topic, []).append(tp.partition)
                member_assignor.on_assignment(ConsumerProtocolAssignment(0, sorted(by_topic.items()), b""), generation)
            wire = member_assignor.metadata(set(topics)).encode()  # what JoinGroup carries
            members.append(_JoinedMember(member, None, ConsumerProtocolSubscription.decode(wire)))
        cluster = _KafkaCluster(counts)
        seconds, out = self._timed(lambda: self.leader.assign(cluster, members))
        placement: Placement = {m: list(out[m].partitions()) if m in out else [] for m in topics_of}
        subscriptions = {m.member_id: Subscription(list(m.metadata.topics),
                                                   owned_partitions=list(owned.get(m.member_id, ()))) for m in members}
        validate_assignment(_Label(self.leader.name), ClusterView(counts), subscriptions,
                            {m: Assignment(p) for m, p in placement.items()}, self.protocol)
        return seconds, placement


def rebalance(impl: _Impl, group: Group, owned: Owned, generation: int) -> tuple[float, Placement, int]:
    """Rounds until every subscribed partition has an owner: seconds in assign(), result, rounds."""
    subscribed = {t for topics in group.topics_of.values() for t in topics}
    total = sum(group.counts[t] for t in subscribed)
    seconds, placement, rounds = 0.0, dict(owned), 0
    while rounds < 4:
        took, placement = impl.round(group.counts, group.topics_of, placement, generation + rounds)
        seconds, rounds = seconds + took, rounds + 1
        if not impl.cooperative or sum(len(p) for p in placement.values()) >= total:
            break
    return seconds, placement, rounds


def spread(placement: Placement) -> int:
    """Balance: the most partitions any member has minus the fewest."""
    sizes = [len(p) for p in placement.values()]
    return max(sizes) - min(sizes) if sizes else 0


def stickiness(before: Placement, after: Placement, survivors: Sequence[str]) -> tuple[float | None, int]:
    """Fraction of the survivors' previous partitions they kept; partitions passed between survivors."""
    owner = {tp: m for m, parts in after.items() for tp in parts}
    kept = moved = total = 0
    alive = set(survivors)
    for member in survivors:
        for tp in before.get(member, ()):
            total += 1
            now = owner.get(tp)
            kept += now == member
            moved += now is not None and now != member and now in alive
    return (kept / total if total else None), moved


def _emit(**values: Any) -> None:
    print(json.dumps(values), flush=True)


def _maxrss_mb() -> float:  # ru_maxrss is in KiB on Linux, bytes on macOS
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)


def measure(spec: GroupSpec, assignor: str, implementation: str, cap_s: float) -> None:
    """The body of one run; prints one JSON line per finished phase."""
    group = make_group(spec)
    impl: _Impl = _Ours(assignor) if implementation == GROUPCLIENT else _KafkaPython(assignor, cap_s)
    before = _maxrss_mb()
    try:
        seconds, fresh, _ = rebalance(impl, group, {}, -1)
    except _CapExceeded:
        return _emit(status="timeout", input_mb=before, peak_mb=_maxrss_mb())  # the peak so far
    _emit(assign_s=seconds, balance=spread(fresh), input_mb=before, peak_mb=_maxrss_mb())
    after, survivors = churned(group, spec)
    try:
        seconds, final, rounds = rebalance(impl, after, {m: fresh[m] for m in survivors}, 1)
    except _CapExceeded:
        return _emit(status="timeout", churn_peak_mb=_maxrss_mb())
    kept, moved = stickiness(fresh, final, survivors)
    _emit(churn_s=seconds, churn_rounds=rounds, churn_balance=spread(final), kept=kept, moved=moved,
          churn_peak_mb=_maxrss_mb(), status="ok")


@dataclass
class RunResult:
    assignor: str
    implementation: str
    status: str = "ok"  # ok, timeout, skipped: ..., error: ...
    assign_s: float | None = None
    input_mb: float | None = None
    peak_mb: float | None = None
    balance: int | None = None
    churn_s: float | None = None
    churn_rounds: int | None = None
    churn_peak_mb: float | None = None
    churn_balance: int | None = None
    kept: float | None = None  # fraction of the survivors' partitions they kept
    moved: int | None = None  # partitions moved from one survivor to another

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def run_one(spec: GroupSpec, assignor: str, implementation: str, timeout_s: float = 120.0) -> RunResult:
    """One run in a fresh subprocess; kafka-python's assign() calls are capped at ``timeout_s``."""
    result = RunResult(assignor, implementation)
    cap = timeout_s if implementation == KAFKA_PYTHON else OURS_BACKSTOP_S
    argv = [sys.executable, "-m", "groupclient.assignor_lab",
            json.dumps({"spec": asdict(spec), "assignor": assignor, "implementation": implementation, "cap_s": cap})]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=3 * cap + 600)
        out, err, code = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        err, code = "", None
        result.status = "timeout"
    for line in out.splitlines():
        if line.startswith("{"):
            for key, value in json.loads(line).items():
                setattr(result, key, value)
    if code not in (0, None):
        lines = err.strip().splitlines()
        result.status = f"error: {lines[-1] if lines else f'exit {code}'}"
    return result


def run_bench(spec: GroupSpec, assignors: Sequence[str] = DEFAULT_ASSIGNORS, kafka_python: bool = True,
              timeout_s: float = 120.0) -> list[RunResult]:
    """Each assignor, then kafka-python's counterpart (for the built-in names)."""
    results = []
    for assignor in assignors:
        results.append(run_one(spec, assignor, implementation_of(assignor), timeout_s))
        if kafka_python and assignor in KAFKA_PYTHON_ASSIGNORS:
            results.append(run_one(spec, assignor, KAFKA_PYTHON, timeout_s))
    return results


COLUMNS = ("assignor", "implementation", "assign s", "memory MB in/peak", "balance", "churn s", "churn peak MB",
           "churn balance", "kept %", "moved")


def table_rows(results: Sequence[RunResult]) -> list[list[str]]:
    """One row per run; a timed-out value reads "timeout", a timed-out peak is the peak so far + "+";
    a failed run's status is appended as an extra cell."""
    rows = []
    for r in results:
        def cell(value: Any, fmt: str = "{}") -> str:
            return ("timeout" if r.status == "timeout" else "-") if value is None else fmt.format(value)

        memory = "-" if r.peak_mb is None else f"{r.input_mb or 0:.0f}/{r.peak_mb:.0f}"
        memory += "+" if r.peak_mb is not None and r.assign_s is None else ""
        churn_peak = "-" if r.churn_peak_mb is None else f"{r.churn_peak_mb:.0f}"
        churn_peak += "+" if r.churn_peak_mb is not None and r.churn_s is None else ""
        rows.append([r.assignor, r.implementation, cell(r.assign_s, "{:.4f}"), memory, cell(r.balance),
                     cell(r.churn_s, "{:.4f}"), churn_peak, cell(r.churn_balance),
                     cell(None if r.kept is None else 100 * r.kept, "{:.1f}"), cell(r.moved)]
                    + ([r.status] if r.status not in ("ok", "timeout") else []))
    return rows


def format_table(results: Sequence[RunResult]) -> str:
    rows = table_rows(results)
    widths = [max(len(row[i]) for row in [list(COLUMNS)] + rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(COLUMNS, widths))),
             "  ".join("-" * w for w in widths)]
    for row in rows:
        cells = [c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells + row[len(COLUMNS):]).rstrip())
    return "\n".join(lines)


def describe(spec: GroupSpec) -> str:
    return (f"{spec.members} members x {spec.partitions} partitions over {spec.topics} topics, "
            f"{spec.subscriptions} subscriptions, seed {spec.seed}; churn: {CHURN:.0%} of members replaced")


def bench_command(members: int, partitions: int, topics: int | None, subscriptions: str, assignors: Sequence[str],
                  seed: int, kafka_python: bool, timeout_s: float) -> int:
    """``groupclient assignors bench``: print the table; exit 1 if one of our runs failed (a failing
    kafka-python assignor is a finding, shown in its row)."""
    spec = GroupSpec(members, partitions, topics or default_topics(partitions), subscriptions, seed)
    results = run_bench(spec, assignors or DEFAULT_ASSIGNORS, kafka_python, timeout_s)
    print(describe(spec))
    print(format_table(results))
    print(MEMORY_NOTE)
    print(f"time: one assign() call (churn: all rounds); kafka-python's calls capped at {timeout_s:g} s; "
          "kept %: survivors' previous partitions still theirs; moved: partitions between survivors")
    return 1 if any(r.status.startswith("error") and r.implementation == GROUPCLIENT for r in results) else 0


if __name__ == "__main__":  # one run, for run_one
    request = json.loads(sys.argv[1])
    measure(GroupSpec(**request["spec"]), request["assignor"], request["implementation"], request["cap_s"])
