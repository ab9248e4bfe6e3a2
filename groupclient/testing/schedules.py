"""Seeded random fault schedules for a simulated group, and the runner that replays them.

A schedule is data: a list of :class:`Step` (when, what, to whom), drawn from a seed by
:func:`random_schedule`.  :func:`run_schedule` applies the steps at their times, lets the group
settle after the last fault and checks that it converged; the invariants are checked after
every step throughout.  A failure names the seed, and ``str(schedule)`` is the replay.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import logging
import random
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any

from ..coordinator.consumer_group.assignors import SERVER_ASSIGNORS
from ..coordinator.faults import FaultKind, FaultRule
from ..protocol.apis import ApiKey
from ..error_codes import ErrorCode
from .simulation import GroupSimulation

GROUP_APIS = (ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT,
              ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.LEAVE_GROUP, ApiKey.METADATA, ApiKey.FETCH)
# answers a broker may really give to those APIs, plus one newer than this client knows
ERROR_CODES = (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
               ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION,
               ErrorCode.REQUEST_TIMED_OUT, ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.NOT_LEADER_OR_FOLLOWER,
               ErrorCode.UNSTABLE_OFFSET_COMMIT)


@dataclass(frozen=True)
class Step:
    at_ms: int  # from the start of the schedule
    action: str  # join, crash, leave, pause, stall, cut, fault, move, produce
    member: str = ""
    ms: int = 0
    fault: FaultRule | None = None
    count: int = 0

    def __str__(self) -> str:
        parts = [f"t+{self.at_ms}", self.action]
        if self.member:
            parts.append(self.member)
        if self.ms:
            parts.append(f"{self.ms}ms")
        if self.fault is not None:
            f = self.fault
            parts.append(f"{ApiKey(f.api_key).name} {f.kind.value}"
                         + (f" {f.error_code.name}" if f.kind is FaultKind.ERROR else "")
                         + (f" {f.delay_ms}ms" if f.kind is FaultKind.DELAY else ""))
        if self.count:
            parts.append(str(self.count))
        return " ".join(parts)


@dataclass
class Schedule:
    seed: int
    members: int
    nodes: int
    static: bool = False  # members have a group_instance_id (KIP-345)
    steps: list[Step] = field(default_factory=list)
    # range | sticky | cooperative-sticky, or "upgrade": half the members on [cooperative-sticky,
    # range] (eager) and half on [cooperative-sticky] (cooperative), as in a rolling upgrade
    # (the classic members' assignors)
    assignor: str = "range"
    # the members speaking KIP-848's consumer protocol (group_protocol="consumer"); the others
    # speak the classic protocol.  Drawn from a stream of its own (see random_schedule)
    consumer_members: frozenset[str] = frozenset()
    remote_assignor: str | None = None  # the consumer-protocol members' group_remote_assignor

    def strategy_for(self, member: str) -> list[str]:
        if self.assignor != "upgrade":
            return [self.assignor]
        return ["cooperative-sticky"] if int(member[1:]) % 2 else ["cooperative-sticky", "range"]

    def settings_for(self, member: str) -> dict[str, Any]:
        """The GroupConsumer settings the schedule gives ``member`` (its protocol, its assignor,
        its instance id)."""
        settings: dict[str, Any] = {}
        if member in self.consumer_members:
            settings["group_protocol"] = "consumer"
            if self.remote_assignor is not None:
                settings["group_remote_assignor"] = self.remote_assignor
        else:
            settings["partition_assignment_strategy"] = self.strategy_for(member)
        if self.static:
            settings["group_instance_id"] = f"instance-{member}"
        return settings

    @property
    def protocols(self) -> str:
        """classic, consumer or mixed: what the members speak."""
        if not self.consumer_members:
            return "classic"
        return "consumer" if len(self.consumer_members) == self.members else "mixed"

    def __str__(self) -> str:
        head = (f"seed {self.seed}: {self.members} {'static' if self.static else 'dynamic'} members, "
                f"{self.nodes} nodes, {self.assignor}")
        if self.consumer_members:
            which = "all" if self.protocols == "consumer" else "mixed"
            head += (f"; consumer protocol ({which}): {', '.join(sorted(self.consumer_members))}, "
                     f"group_remote_assignor {self.remote_assignor or 'the broker default'}")
        return "\n  ".join([head, *map(str, self.steps)])


ASSIGNORS = ("range", "sticky", "cooperative-sticky", "cooperative-sticky", "upgrade")
# what a schedule's members speak, drawn per seed: classic only (as every schedule was before the
# draw), the consumer protocol only, or both in one group
PROTOCOLS = ("classic", "classic", "consumer", "mixed")
REMOTE_ASSIGNORS = (None, *SERVER_ASSIGNORS)
# a fault drawn on a classic member's group API is moved to ConsumerGroupHeartbeat, with an answer
# a broker may really give to it (or one newer than this client knows), when consumer-protocol
# members are there: always when they are all there, half of the time in a mixed group
CLASSIC_GROUP_APIS = (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT)
CONSUMER_HEARTBEAT_ERRORS = (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                             ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.UNKNOWN_MEMBER_ID,
                             ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.REQUEST_TIMED_OUT,
                             ErrorCode.UNKNOWN_SERVER_ERROR)


def random_schedule(seed: int, *, min_members: int = 3, max_members: int = 6, faults: int = 4,
                    span_ms: int = 30_000, protocols: str = "drawn") -> Schedule:
    """The schedule of ``seed``: its members, nodes and steps; then, from a stream of its own
    (``"{seed}/protocols"``), which members speak the consumer protocol.  ``protocols`` is
    "drawn", or "classic", "consumer" or "mixed" to choose."""
    rng = random.Random(seed)
    members = rng.randint(min_members, max_members)
    nodes = rng.choice((1, 3))
    schedule = Schedule(seed, members, nodes)
    steps = schedule.steps
    names = [f"m{i}" for i in range(members)]
    for i, name in enumerate(names):
        steps.append(Step(rng.randint(0, 3_000) if i else 0, "join", name))
    steps.append(Step(0, "produce", count=rng.randint(20, 200)))
    for _ in range(faults):
        at = rng.randint(2_000, span_ms)
        kind = rng.choice(("crash", "leave", "pause", "stall", "cut", "fault", "fault", "produce", "move"))
        name = rng.choice(names)
        if kind == "crash" or kind == "leave":
            steps.append(Step(at, kind, name))
            steps.append(Step(at + rng.randint(500, 20_000), "join", name))  # it comes back
        elif kind == "pause":
            steps.append(Step(at, kind, name, ms=rng.choice((2_000, 12_000, 25_000, 35_000))))
        elif kind == "stall":
            steps.append(Step(at, kind, name, ms=rng.choice((2_000, 8_000, 15_000))))
        elif kind == "cut":
            steps.append(Step(at, kind, name))
        elif kind == "produce":
            steps.append(Step(at, kind, count=rng.randint(10, 100)))
        elif kind == "move":
            steps.append(Step(at, kind, ms=rng.randint(1_000, 15_000)))
        else:
            api = rng.choice(GROUP_APIS)
            how = rng.choice((FaultKind.ERROR, FaultKind.ERROR, FaultKind.DROP, FaultKind.DELAY))
            rule = FaultRule(int(api), how, count=rng.randint(1, 3), error_code=rng.choice(ERROR_CODES),
                             delay_ms=rng.choice((500, 5_000, 15_000)))
            steps.append(Step(at, "fault", fault=rule))
    steps.sort(key=lambda s: s.at_ms)
    schedule.static = rng.random() < 0.25  # drawn last, so that seeds keep the steps they had
    schedule.assignor = rng.choice(ASSIGNORS)
    draw_protocols(schedule, names, protocols)
    return schedule


def draw_protocols(schedule: Schedule, names: list[str], protocols: str = "drawn") -> None:
    """Which members speak the consumer protocol, from the stream ``"{seed}/protocols"``: not the
    schedule's, so that each seed keeps the steps, members and assignors it always had (and a seed
    drawn "classic" plays exactly as before the draw existed).  With consumer-protocol members,
    faults on the classic group APIs move to ConsumerGroupHeartbeat (CLASSIC_GROUP_APIS)."""
    rng = random.Random(f"{schedule.seed}/protocols")
    drawn = rng.choice(PROTOCOLS)
    mode = drawn if protocols == "drawn" else protocols
    if mode not in ("classic", "consumer", "mixed"):
        raise ValueError(f"protocols must be 'drawn', 'classic', 'consumer' or 'mixed', not {protocols!r}")
    split = [rng.random() < 0.5 for _ in names]
    if len(set(split)) < 2:  # a mixed group has both
        flip = rng.randrange(len(names))
        split[flip] = not split[flip]
    remote = rng.choice(REMOTE_ASSIGNORS)
    if mode == "consumer":
        schedule.consumer_members = frozenset(names)
    elif mode == "mixed":
        schedule.consumer_members = frozenset(n for n, consumer in zip(names, split) if consumer)
    schedule.remote_assignor = remote if schedule.consumer_members else None
    moved = 1.0 if mode == "consumer" else 0.5 if mode == "mixed" else 0.0
    for i, step in enumerate(schedule.steps):
        if step.fault is None or step.fault.api_key not in CLASSIC_GROUP_APIS:
            continue
        move, code = rng.random() < moved, rng.choice(CONSUMER_HEARTBEAT_ERRORS)
        if move:
            fault = dataclasses.replace(step.fault, api_key=int(ApiKey.CONSUMER_GROUP_HEARTBEAT), error_code=code)
            schedule.steps[i] = dataclasses.replace(step, fault=fault)


def apply_step(sim: GroupSimulation, schedule: Schedule, step: Step, nodes_down: dict[int, int]) -> None:
    name = step.member
    member = sim.members.get(name)
    if step.action == "join":
        if member is None or not member.alive:
            sim.add_member(name, **schedule.settings_for(name))
    elif step.action in ("crash", "leave", "pause", "stall", "cut"):
        if member is None or not member.alive:
            return
        if step.action == "crash":
            sim.crash(name)
        elif step.action == "leave":
            sim.leave(name)
        elif step.action == "pause":
            sim.pause(name, step.ms)
        elif step.action == "stall":
            sim.stall(name, step.ms)
        else:
            sim.cut(name)
    elif step.action == "fault":
        assert step.fault is not None
        sim.inject_fault(FaultRule(step.fault.api_key, step.fault.kind, step.fault.count,
                                   step.fault.error_code, step.fault.delay_ms))
    elif step.action == "produce":
        for topic in sim.core.topics.topics:
            sim.produce(topic, step.count)
    elif step.action == "move":
        node = sim.core.coordinator_node_for(sim.group_id)
        if node is not None and len(sim.core.live_nodes()) > 1:
            sim.stop_node(node.node_id)
            nodes_down[node.node_id] = sim.now + step.ms


def run_schedule(schedule: Schedule, *, settle_ms: int = 120_000, **sim_settings: Any) -> GroupSimulation:
    """Run ``schedule``; raises InvariantViolation at the first broken invariant, AssertionError if
    the group has not converged ``settle_ms`` after the last step.  The caller closes the result."""
    sim_settings.setdefault("topics", {"t": 6})
    sim = GroupSimulation(schedule.seed, nodes=schedule.nodes, offsets_topic_partitions=3, **sim_settings)
    sim.note(f"schedule {schedule}")
    start = sim.now
    nodes_down: dict[int, int] = {}
    try:
        for step in schedule.steps:
            target = start + step.at_ms
            while True:
                due = [n for n, t in nodes_down.items() if t <= target]
                when = min([nodes_down[n] for n in due], default=target)
                sim.run_for(max(when - sim.now, 0))
                for node_id in [n for n, t in nodes_down.items() if t <= sim.now]:
                    del nodes_down[node_id]
                    sim.start_node(node_id)
                if sim.now >= target:
                    break
            apply_step(sim, schedule, step, nodes_down)
        for node_id in list(nodes_down):
            sim.run_for(max(nodes_down.pop(node_id) - sim.now, 0))
            sim.start_node(node_id)
        sim.core.faults.clear()
        if not sim.run_until(sim.converged, settle_ms):
            raise AssertionError(f"seed {schedule.seed}: no convergence {settle_ms} ms after the last fault\n"
                                 f"{schedule}\nthen:\n  {sim.describe()}")
    except BaseException:
        sim.close()
        raise
    return sim


def seed_failures(play: Callable[[int], None], seeds: Iterable[int]) -> list[tuple[int, str]]:
    """Play each seed with ``play``; (seed, what went wrong) for each that failed."""
    failures = []
    for seed in seeds:
        try:
            play(seed)
        except Exception as exc:
            detail = str(exc) if isinstance(exc, AssertionError) else traceback.format_exc()
            failures.append((seed, detail))
    return failures


def seed_failures_in_parallel(play: Callable[[int], None], seeds: list[int], workers: int) -> list[tuple[int, str]]:
    """:func:`seed_failures` split over ``workers`` fresh processes (the simulator is single-core);
    ``play`` must pickle (a module's function, or a partial of one)."""
    if workers <= 1:
        return seed_failures(play, seeds)
    chunks = [seeds[i::workers] for i in range(workers)]
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        results = pool.map(_play_chunk, [(play, chunk) for chunk in chunks])
        return sorted(f for part in results for f in part)


def _play_chunk(job: tuple[Callable[[int], None], list[int]]) -> list[tuple[int, str]]:
    logging.disable(logging.CRITICAL)  # a worker reports failures, not the member logs
    play, seeds = job
    return seed_failures(play, seeds)


def play_seed(seed: int, **schedule_settings: Any) -> None:
    """Run the random schedule of ``seed`` (raises what :func:`run_schedule` raises)."""
    run_schedule(random_schedule(seed, **schedule_settings)).close()


def check_seeds(seeds: Iterable[int], **schedule_settings: Any) -> list[tuple[int, str]]:
    """Run the random schedule of each seed; (seed, what went wrong) for each that failed."""
    return seed_failures(functools.partial(play_seed, **schedule_settings), seeds)


def check_seeds_in_parallel(seeds: list[int], workers: int = 2, **schedule_settings: Any) -> list[tuple[int, str]]:
    """:func:`check_seeds` split over ``workers`` fresh processes."""
    return seed_failures_in_parallel(functools.partial(play_seed, **schedule_settings), seeds, workers)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m groupclient.testing.schedules",
                                     description="Run seeded random fault schedules against a simulated group.")
    parser.add_argument("--first", type=int, default=0, help="first seed")
    parser.add_argument("--count", type=int, default=1000, help="how many seeds")
    parser.add_argument("--workers", type=int, default=2, help="processes to spread the seeds over")
    parser.add_argument("--faults", type=int, default=4, help="faults per schedule")
    parser.add_argument("--span-ms", type=int, default=30_000, help="simulated time the faults are spread over")
    parser.add_argument("--protocols", choices=("drawn", "classic", "consumer", "mixed"), default="drawn",
                        help="the members' group protocols: drawn per seed (default), or these for every seed")
    args = parser.parse_args(argv)
    started = time.monotonic()
    seeds = list(range(args.first, args.first + args.count))
    failures = check_seeds_in_parallel(seeds, args.workers, faults=args.faults, span_ms=args.span_ms,
                                       protocols=args.protocols)
    for seed, detail in failures:
        print(f"--- seed {seed} failed:\n{detail}\n")
    print(f"{len(seeds) - len(failures)} passed, {len(failures)} failed "
          f"({time.monotonic() - started:.1f} s for {len(seeds)} schedules)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
