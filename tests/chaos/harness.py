"""The chaos run: six GroupConsumer members in their own processes, a three-node embedded
cluster in this one, records produced all along, and a seeded schedule of faults.

Faults come in episodes, one after another: a fault (sometimes two at once), its healing,
then the wait until the group is whole again, which gives the convergence figure of that
episode.  The seed fixes the schedule (which faults, on whom, for how long, in which order);
the processes' own timing is the machine's, so a failing seed replays the same schedule.
What the members did is judged afterwards from their event logs (see checks.py).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from groupclient.coordinator import EmbeddedCluster
from groupclient.coordinator.faults import FaultKind, FaultRule
from groupclient.protocol.apis import ApiKey
from groupclient.error_codes import ErrorCode
from tests.integration.peers import wait_until

MEMBER_SCRIPT = Path(__file__).resolve().parent / "member.py"
# the members import groupclient from this tree, whatever an installed copy points at
MEMBER_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(MEMBER_SCRIPT.parents[2]), *filter(None, [os.environ.get("PYTHONPATH")])])}
TOPIC = "chaos"
GROUP = "chaos-group"

# errors a coordinator really answers these requests with, all of which a member must survive
_FAILURES = {
    ApiKey.JOIN_GROUP: [ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS],
    ApiKey.SYNC_GROUP: [ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                        ErrorCode.REBALANCE_IN_PROGRESS],
    ApiKey.HEARTBEAT: [ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                       ErrorCode.REBALANCE_IN_PROGRESS],
    ApiKey.OFFSET_COMMIT: [ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                           ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.REQUEST_TIMED_OUT],
}
_DROPPED = [ApiKey.FETCH, ApiKey.METADATA, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT,
            ApiKey.OFFSET_COMMIT]
_DELAYED = [ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.OFFSET_COMMIT]
# and, when the group has consumer-protocol members, their heartbeat (only then, so that a
# classic run's seed draws the schedule it always drew)
_CONSUMER_FAILURES = [ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                      ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]
PROTOCOLS = ("classic", "consumer", "mixed")
# how often each fault is drawn
FAULT_WEIGHTS = {"kill_member": 3, "pause_member": 2, "stall_member": 2, "restart_node": 2,
                 "drop_connection": 2, "delay_request": 2, "fail_request": 2}


def every_step(*steps: Callable[[], object]) -> None:
    """Runs each step, whichever raised before it; then raises the first error, if any."""
    first: BaseException | None = None
    for step in steps:
        try:
            step()
        except BaseException as exc:  # noqa: BLE001 - raised below, once the rest has run
            first = first or exc
    if first is not None:
        raise first


@dataclass(frozen=True)
class ChaosSettings:
    seed: int
    seconds: float
    members: int = 6
    nodes: int = 3
    partitions: int = 12
    session_ms: int = 3000
    max_poll_interval_ms: int = 6000
    strategy: str = "range"
    produce_every_s: float = 0.1  # a record to every partition this often
    # episodes go on past ``seconds`` until this many are done (for at most ``seconds`` more):
    # one broker's kill and restart can take a minute
    min_episodes: int = 2
    kinds: tuple[str, ...] = tuple(sorted(FAULT_WEIGHTS))  # the faults drawn from
    # what the members speak: classic, consumer (KIP-848) or mixed (both in one group; which
    # slot speaks which is drawn from the seed, on a stream of its own)
    protocols: str = "classic"
    topic: str = TOPIC
    group: str = GROUP

    def client_of(self, slot: int) -> str:
        """The client the member in ``slot`` runs (kafka_run.py mixes in kafka-python members)."""
        return "groupclient"

    def protocol_of(self, slot: int) -> str:
        """The group protocol of the member in ``slot`` (each of its incarnations).  A mixed group
        has at least two members of each kind (of four or more), so that one member frozen or
        killed never leaves it without a consumer-protocol member: a group that loses its last one
        turns classic again, and that conversion has a known defect
        (tests/sim/test_consumer_protocol_defects.py)."""
        if self.protocols != "mixed":
            return self.protocols
        rng = random.Random(f"{self.seed}/protocols")
        least = 2 if self.members >= 4 else 1
        consumer = rng.sample(range(self.members), rng.randint(least, self.members - least))
        return "consumer" if slot in consumer else "classic"

    @property
    def consumer_members(self) -> bool:
        """Whether any member speaks the consumer protocol."""
        return self.protocols != "classic"

    @property
    def convergence_bound_s(self) -> float:
        """The issue's bound: stable within session + rebalance timeout after a fault heals."""
        return (self.session_ms + self.max_poll_interval_ms) / 1000


class Incarnation:
    """One member process; a reader thread keeps its events."""

    script: ClassVar[Path] = MEMBER_SCRIPT  # what the process runs, and its name's prefix
    prefix: ClassVar[str] = "m"

    def __init__(self, slot: int, number: int, settings: ChaosSettings, bootstrap: str, log_dir: Path) -> None:
        self.name = f"{self.prefix}{slot}.{number}"
        self.slot = slot
        self.client = settings.client_of(slot)
        self.protocol = settings.protocol_of(slot)
        self.stderr_path = log_dir / f"{self.name}.stderr"
        cmd = [sys.executable, str(self.script), *self.arguments(settings, bootstrap)]
        self._stderr = open(self.stderr_path, "w")
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._stderr, text=True, env=MEMBER_ENV)
        self.events: list[dict[str, Any]] = []
        self.killed_at: float | None = None
        self.ended_at: float | None = None
        self.paused: list[tuple[float, float]] = []  # SIGSTOP .. SIGCONT
        self.cut_off: list[tuple[float, float]] = []  # cut off from its group coordinator (kafka_run.py)
        self.terminated = False  # sent SIGTERM: close() was asked of it
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name=f"read-{self.name}", daemon=True)
        self._reader.start()

    @property
    def client_id(self) -> str:
        return self.name

    def arguments(self, settings: ChaosSettings, bootstrap: str) -> list[str]:
        """member.py's command line."""
        return ["--bootstrap", bootstrap, "--group", settings.group, "--topic", settings.topic,
                "--strategy", settings.strategy, "--client-id", self.client_id,
                "--session-ms", str(settings.session_ms),
                "--max-poll-interval-ms", str(settings.max_poll_interval_ms),
                "--stall-ms", str(settings.max_poll_interval_ms + 1000), "--protocol", self.protocol]

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with open(self.stderr_path.with_suffix(".events"), "w") as kept:  # for a post-mortem
            self._read_lines(kept)
        with self._lock:
            self.ended_at = time.monotonic()

    def _read_lines(self, kept: Any) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            kept.write(line)
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                self.events.append(event)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events)

    def owned(self) -> set[int]:
        owned: set[int] = set()
        for event in self.snapshot():
            if event["e"] == "assigned":
                owned |= set(event["p"])
            elif event["e"] in ("revoked", "lost"):
                owned -= set(event["p"])
        return owned

    def running(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.running():
            self.killed_at = time.monotonic()
            self.proc.kill()
        self.proc.wait(10)

    def close(self, timeout_s: float = 35.0) -> None:
        """SIGTERM: the member closes its consumer (whose close() takes up to 30 s), then SIGKILL."""
        if self.running():
            self.terminated = True
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        self._reader.join(10)
        self._stderr.close()


@dataclass
class Episode:
    kinds: list[str]
    detail: list[str]
    started: float
    healed: float = 0.0
    converged: float | None = None

    @property
    def convergence_s(self) -> float | None:
        return None if self.converged is None else max(0.0, self.converged - self.healed)


@dataclass
class ChaosRun:
    """The run on the embedded cluster.  A run on another cluster (kafka_run.py) replaces the
    hooks below "the cluster" and ``_group``, ``_committed``, ``_produce``, and draws its own
    faults: the ``_<kind>`` methods, weighted by ``weights``."""

    # how often each fault kind is drawn; the faults that may come with a member's kill; the
    # clients whose own fencing is under test (a freeze, a stall, a cut-off goes to them only)
    weights: ClassVar[dict[str, int]] = FAULT_WEIGHTS
    combinable: ClassVar[tuple[str, ...]] = ("drop_connection", "delay_request", "fail_request")
    fencing_tested: ClassVar[tuple[str, ...]] = ("groupclient",)
    converge_interval_s: ClassVar[float] = 0.05  # how often convergence is looked for
    settings: ChaosSettings
    log_dir: Path
    rng: random.Random = field(init=False)
    cluster: EmbeddedCluster = field(init=False)
    slots: list[Incarnation] = field(default_factory=list)
    gone: list[Incarnation] = field(default_factory=list)  # earlier incarnations
    episodes: list[Episode] = field(default_factory=list)
    produced: int = 0
    cluster_end_offsets: dict[int, int] = field(default_factory=dict)
    generations: tuple[int, int] = (0, 0)
    # what else runs on the cluster beside the group (share_side.py): started once the cluster
    # is, finished once the group has committed everything, closed whatever happens
    sides: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.settings.seed)
        self._stop_producing = threading.Event()

    # -- the whole run -------------------------------------------------------------------
    def run(self) -> None:
        s = self.settings
        self.log_dir.mkdir(parents=True, exist_ok=True)
        producer = threading.Thread(target=self._produce, name="chaos-producer", daemon=True)
        try:
            self._start_cluster()
            self._create_topic()
            for side in self.sides:
                side.start()
            producer.start()
            self.slots = [self._incarnation(i, 0) for i in range(s.members)]
            if not self._wait_converged(60):
                raise AssertionError(f"seed {s.seed}: the group never formed: {self._state()}")
            self.generations = (self._generation(), 0)
            deadline = time.monotonic() + s.seconds
            while time.monotonic() < deadline or (len(self.episodes) < s.min_episodes
                                                  and time.monotonic() < deadline + s.seconds):
                self._episode()
                time.sleep(self.rng.uniform(0.2, 1.5))  # real time: the members run in real time
            self._finish(producer)
        finally:
            self._stop_producing.set()
            # every step, whichever fails: a run that failed mid-episode (or whose faults would
            # not clear) still closes its members, its producer and what it opened on the cluster
            every_step(self._clear_faults,
                       *[member.close for member in [*self.slots, *self.gone]],
                       *[side.close for side in self.sides],
                       lambda: producer.join(60) if producer.is_alive() else None,
                       self._stop_cluster)

    # -- the cluster: what a run on another cluster replaces -----------------------------
    def _start_cluster(self) -> None:
        s = self.settings
        heartbeat_ms = max(s.session_ms // 6, 100)  # as the classic members'
        self.cluster = EmbeddedCluster(nodes=s.nodes, group_initial_rebalance_delay_ms=0,
                                       group_min_session_timeout_ms=1000,
                                       # the consumer-protocol members' session is the broker's
                                       group_consumer_session_timeout_ms=s.session_ms,
                                       group_consumer_min_session_timeout_ms=s.session_ms,
                                       group_consumer_heartbeat_interval_ms=heartbeat_ms,
                                       group_consumer_min_heartbeat_interval_ms=heartbeat_ms)
        self.cluster.start()

    def _stop_cluster(self) -> None:
        if hasattr(self, "cluster"):  # started
            self.cluster.stop()

    def _bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    def _create_topic(self) -> None:
        self.cluster.create_topic(self.settings.topic, self.settings.partitions)

    def _clear_faults(self) -> None:
        if hasattr(self, "cluster"):
            self.cluster.clear_faults()

    def _end_offsets(self) -> dict[int, int]:
        return self.cluster.end_offsets(self.settings.topic)

    def _incarnation(self, slot: int, number: int) -> Incarnation:
        return Incarnation(slot, number, self.settings, self._bootstrap(), self.log_dir)

    def _finish(self, producer: threading.Thread) -> None:
        self._clear_faults()
        self._stop_producing.set()
        producer.join(10)
        self.generations = (self.generations[0], self._generation())
        end = self.cluster_end_offsets = self._end_offsets()
        if not wait_until(lambda: self._committed() == end, 90, interval_s=0.2):
            raise AssertionError(f"seed {self.settings.seed}: commits never reached the end offsets: "
                                 f"committed {self._committed()}, end {end}")
        for side in self.sides:
            side.finish()

    # -- episodes ------------------------------------------------------------------------
    def _episode(self) -> None:
        self._stop_on_member_error()
        kinds = [self._draw()]
        if kinds[0] in self.combinable and self.rng.random() < 0.5 \
                and "kill_member" in self.settings.kinds:
            kinds.append("kill_member")  # a rebalance, so that group requests are under way
        episode = Episode(kinds, [], time.monotonic())
        healers = [getattr(self, f"_{kind}")(episode) for kind in kinds]
        for heal in healers:
            heal()
        episode.healed = time.monotonic()
        self.episodes.append(episode)
        bound = self.settings.convergence_bound_s
        if self._wait_converged(bound + 30):
            episode.converged = self._converged_at
        else:
            raise AssertionError(f"seed {self.settings.seed}: no convergence within {bound + 30:.0f} s "
                                 f"after {episode}: {self._state()}")

    def _draw(self) -> str:
        kinds = list(self.settings.kinds)
        return self.rng.choices(kinds, weights=[self.weights[k] for k in kinds])[0]

    def _member(self, own_fencing: bool = False) -> Incarnation:
        """A member drawn from the seed (for a fault that tests its own fencing: of those tested)."""
        eligible = [m for m in self.slots if not own_fencing or m.client in self.fencing_tested]
        return eligible[self.rng.randrange(len(eligible))]

    def _kill_member(self, episode: Episode) -> Any:
        victim, wait = self._member(), self.rng.uniform(0.0, 1.0)
        episode.detail.append(f"SIGKILL {victim.name}, restart {wait:.2f} s later")
        victim.kill()

        def heal() -> None:
            time.sleep(wait)
            self.gone.append(victim)
            self.slots[victim.slot] = self._incarnation(victim.slot, len(self.gone))
        return heal

    def _pause_member(self, episode: Episode) -> Any:
        victim = self._member(own_fencing=True)
        hold = self.settings.session_ms / 1000 + self.rng.uniform(0.5, 2.0)
        episode.detail.append(f"SIGSTOP {victim.name} for {hold:.2f} s")
        stopped = time.monotonic()
        victim.proc.send_signal(signal.SIGSTOP)

        def heal() -> None:
            time.sleep(max(0.0, stopped + hold - time.monotonic()))
            # the time before the signal: the member may run, and report, before send_signal returns
            resumed = time.monotonic()
            victim.proc.send_signal(signal.SIGCONT)
            victim.paused.append((stopped, resumed))
        return heal

    def _stall_member(self, episode: Episode) -> Any:
        victim = self._member(own_fencing=True)
        episode.detail.append(f"{victim.name} stalls past max_poll_interval_ms")
        seen = len(victim.snapshot())
        victim.proc.send_signal(signal.SIGUSR1)

        def heal() -> None:
            stall_s = (self.settings.max_poll_interval_ms + 1000) / 1000
            if not wait_until(lambda: any(e["e"] == "stalled" for e in victim.snapshot()[seen:]), stall_s + 30):
                self._stop_on_member_error()
                raise AssertionError(f"seed {self.settings.seed}: {victim.name} never came back from its stall")
        return heal

    def _restart_node(self, episode: Episode) -> Any:
        node, down = self.rng.randrange(self.settings.nodes), self.rng.uniform(1.0, 4.0)
        episode.detail.append(f"node {node} down for {down:.2f} s")
        self.cluster.stop_node(node)

        def heal() -> None:
            time.sleep(down)
            self.cluster.start_node(node)
        return heal

    def _rule(self, episode: Episode, rule: FaultRule) -> Any:
        episode.detail.append(f"{rule.kind.value} {ApiKey(rule.api_key).name} x{rule.count}"
                              + (f" {rule.error_code.name}" if rule.kind is FaultKind.ERROR else "")
                              + (f" {rule.delay_ms} ms" if rule.kind is FaultKind.DELAY else ""))
        fired_before = len(self.cluster.faults_fired())
        self.cluster.inject_fault(rule)

        def heal() -> None:  # the rule has fired, or nothing asked for that request for 5 s
            wait_until(lambda: len(self.cluster.faults_fired()) >= fired_before + rule.count, 5)
            self.cluster.clear_faults()
        return heal

    def _apis(self, classic: list[ApiKey]) -> list[ApiKey]:
        return [*classic, ApiKey.CONSUMER_GROUP_HEARTBEAT] if self.settings.consumer_members else classic

    def _drop_connection(self, episode: Episode) -> Any:
        return self._rule(episode, FaultRule(int(self.rng.choice(self._apis(_DROPPED))), FaultKind.DROP,
                                             self.rng.randint(1, 3)))

    def _delay_request(self, episode: Episode) -> Any:
        return self._rule(episode, FaultRule(int(self.rng.choice(self._apis(_DELAYED))), FaultKind.DELAY,
                                             self.rng.randint(1, 3), delay_ms=self.rng.randint(200, 2500)))

    def _fail_request(self, episode: Episode) -> Any:
        failures = dict(_FAILURES)
        if self.settings.consumer_members:
            failures[ApiKey.CONSUMER_GROUP_HEARTBEAT] = _CONSUMER_FAILURES
        api = self.rng.choice(sorted(failures))
        return self._rule(episode, FaultRule(int(api), FaultKind.ERROR, self.rng.randint(1, 3),
                                             error_code=self.rng.choice(failures[api])))

    # -- observation ---------------------------------------------------------------------
    def _stop_on_member_error(self) -> None:
        """A member whose poll() or commit() raised has exited: stop the run there and say why
        (the group would only converge without it and hide the cause)."""
        for member in self.incarnations():
            for event in member.snapshot():
                if event["e"] == "error":
                    raise AssertionError(f"seed {self.settings.seed}: {member.name} failed with "
                                         f"{event['type']}: {event['message']} (traceback in {member.stderr_path})")

    _converged_at: float = 0.0

    def _wait_converged(self, timeout_s: float) -> bool:
        """Until the coordinator has a stable generation of exactly the running members, and
        their own logs say every partition has exactly one owner."""
        return wait_until(self._converged, timeout_s, interval_s=self.converge_interval_s)

    def _group(self) -> dict[str, Any] | None:
        """The coordinator's view of the group, classic or consumer-protocol: state, generation
        (a consumer group's epoch) and members."""
        group = self.cluster.describe_group(self.settings.group)
        if group is None and self.settings.consumer_members:
            group = self.cluster.describe_consumer_group(self.settings.group)
            if group is not None:
                group["generation"] = group["epoch"]
        return group

    def _converged(self) -> bool:
        now = time.monotonic()
        group = self._group()
        running = [m for m in self.slots if m.running()]
        if group is None or group["state"] != "Stable" or len(group["members"]) != len(running):
            return False
        owners = Counter(p for m in running for p in m.owned())
        if sorted(owners) != list(range(self.settings.partitions)) or set(owners.values()) != {1}:
            return False
        self._converged_at = now
        return True

    def _state(self) -> str:
        return json.dumps({"group": self._group(),
                           "members": {m.name: sorted(m.owned()) for m in self.slots if m.running()}}, default=str)

    def _generation(self) -> int:
        group = self._group()
        return int(group["generation"]) if group else 0

    def _committed(self) -> dict[int, int]:
        s = self.settings
        return {tp[1]: offset for tp, offset in self.cluster.committed_offsets(s.group).items() if tp[0] == s.topic}

    def _produce(self) -> None:
        seq = 0
        while not self._stop_producing.wait(self.settings.produce_every_s):
            for p in range(self.settings.partitions):
                self.cluster.produce(self.settings.topic, [f"{p}:{seq}".encode()], partition=p)
                self.produced += 1
            seq += 1

    def incarnations(self) -> list[Incarnation]:
        return [*self.gone, *self.slots]

    def faults_by_kind(self) -> dict[str, int]:
        return dict(Counter(kind for e in self.episodes for kind in e.kinds))


def seed_from_env() -> int:
    return int(os.environ.get("CHAOS_SEED") or random.SystemRandom().randrange(2**32))
