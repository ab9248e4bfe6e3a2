"""Seeded random fault schedules for a simulated share group (KIP-932), and their runner.

A schedule's members are ``ShareConsumer`` applications, each drawing its acknowledgement mode,
its commits and how long it works on a batch; its group draws its delivery limit.  The faults are
those of the group schedules (crashes and clean leaves with a comeback, an application that stops
polling past the record lock, a member frozen past its session, cut connections, a node stopped
for a while) and error, dropped or late answers to the share APIs.  After the last fault the group
must drain: every record Acknowledged or Archived.  The share invariants
(:mod:`.share_invariants`) are checked after every step throughout.
"""

from __future__ import annotations

import argparse
import functools
import random
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..coordinator.faults import FaultKind, FaultRule
from ..error_codes import ErrorCode
from ..protocol.apis import ApiKey
from .schedules import Step, seed_failures, seed_failures_in_parallel
from .share_members import ShareBehaviour
from .simulation import GroupSimulation

SHARE_APIS = (ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_FETCH, ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE,
              ApiKey.FIND_COORDINATOR, ApiKey.METADATA)
# answers a broker may really give to those APIs, plus one newer than this client knows
SHARE_ERRORS = (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.REQUEST_TIMED_OUT,
                ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
# the members' acknowledgement modes, drawn (explicit twice as often)
MODES: tuple[Literal["implicit", "explicit"], ...] = ("explicit", "explicit", "implicit")
LOCK_MS = 15_000  # share.record.lock.duration.ms: Kafka's lowest, so that a pause outlasts it
GROUP_CONFIGS = {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": str(LOCK_MS),
                 "share.heartbeat.interval.ms": "5000", "share.session.timeout.ms": "45000"}


@dataclass
class ShareSchedule:
    seed: int
    members: int
    nodes: int
    delivery_limit: int
    behaviours: dict[str, ShareBehaviour] = field(default_factory=dict)
    acquire_modes: dict[str, str] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)

    def __str__(self) -> str:
        head = (f"share seed {self.seed}: {self.members} members, {self.nodes} nodes, "
                f"delivery limit {self.delivery_limit}; " + ", ".join(
                    f"{n} {b.mode}/{self.acquire_modes[n]}/commit {b.commit}/{b.processing_ms}ms"
                    for n, b in sorted(self.behaviours.items())))
        return "\n  ".join([head, *map(str, self.steps)])


def random_share_schedule(seed: int, *, min_members: int = 2, max_members: int = 5, faults: int = 4,
                          span_ms: int = 40_000) -> ShareSchedule:
    """The share schedule of ``seed``: its members and their applications, nodes and steps."""
    rng = random.Random(f"share/{seed}")
    members = rng.randint(min_members, max_members)
    schedule = ShareSchedule(seed, members, rng.choice((1, 3)), rng.randint(2, 5))
    names = [f"s{i}" for i in range(members)]
    for name in names:
        schedule.behaviours[name] = ShareBehaviour(
            mode=rng.choice(MODES), commit=rng.choice(("none", "sync", "async")),
            processing_ms=rng.choice((0, 0, 10, 200)), poll_timeout_ms=rng.choice((200, 1000)),
            release_share=rng.choice((0.0, 0.2, 0.5)), reject_share=rng.choice((0.0, 0.05)))
        schedule.acquire_modes[name] = rng.choice(("batch_optimized", "record_limit"))
    steps = schedule.steps
    for i, name in enumerate(names):
        steps.append(Step(rng.randint(0, 3_000) if i else 0, "join", name))
    steps.append(Step(0, "produce", count=rng.randint(20, 200)))
    for _ in range(faults):
        at = rng.randint(2_000, span_ms)
        kind = rng.choice(("crash", "leave", "pause", "stall", "cut", "fault", "fault", "produce", "move"))
        name = rng.choice(names)
        if kind in ("crash", "leave"):
            steps.append(Step(at, kind, name))
            steps.append(Step(at + rng.randint(500, 20_000), "join", name))
        elif kind == "pause":  # past the record lock or not
            steps.append(Step(at, kind, name, ms=rng.choice((2_000, LOCK_MS + 5_000))))
        elif kind == "stall":  # past the session or not
            steps.append(Step(at, kind, name, ms=rng.choice((2_000, LOCK_MS + 5_000, 50_000))))
        elif kind == "cut":
            steps.append(Step(at, kind, name))
        elif kind == "produce":
            steps.append(Step(at, kind, count=rng.randint(10, 100)))
        elif kind == "move":
            steps.append(Step(at, kind, ms=rng.randint(1_000, 15_000)))
        else:
            rule = FaultRule(int(rng.choice(SHARE_APIS)),
                             rng.choice((FaultKind.ERROR, FaultKind.ERROR, FaultKind.DROP, FaultKind.DELAY)),
                             count=rng.randint(1, 3), error_code=rng.choice(SHARE_ERRORS),
                             delay_ms=rng.choice((500, 5_000, 15_000)))
            steps.append(Step(at, "fault", fault=rule))
    steps.sort(key=lambda s: s.at_ms)
    return schedule


def _apply(sim: GroupSimulation, schedule: ShareSchedule, step: Step, nodes_down: dict[int, int]) -> None:
    name = step.member
    member = sim.share_members.get(name)
    if step.action == "join":
        if member is None or not member.alive:
            template = schedule.behaviours[name]
            sim.add_share_member(name, behaviour=ShareBehaviour(**{**vars(template), "pause_until_ms": 0}),
                                 share_acquire_mode=schedule.acquire_modes[name])
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
        f = step.fault  # a copy: a rule counts down as it fires, and the schedule replays
        sim.inject_fault(FaultRule(f.api_key, f.kind, f.count, f.error_code, f.delay_ms))
    elif step.action == "produce":
        for topic in sim.core.topics.topics:
            sim.produce(topic, step.count)
    elif step.action == "move":  # the node leading most, down for a while
        live = sim.core.live_nodes()
        if len(live) > 1:
            node = live[sim.now % len(live)]
            sim.stop_node(node.node_id)
            nodes_down[node.node_id] = sim.now + step.ms


def run_share_schedule(schedule: ShareSchedule, *, drain_ms: int = 240_000, **sim_settings: Any) -> GroupSimulation:
    """Run ``schedule``; InvariantViolation at the first broken invariant, AssertionError if the
    share group has not finished every record ``drain_ms`` after the last step.  The caller
    closes the result."""
    sim_settings.setdefault("topics", {"t": 3})
    sim = GroupSimulation(schedule.seed, nodes=schedule.nodes, offsets_topic_partitions=3, **sim_settings)
    sim.core.group_store.group_configs[sim.share_group_id] = {
        **GROUP_CONFIGS, "share.delivery.count.limit": str(schedule.delivery_limit)}
    sim.note(f"schedule {schedule}")
    start = sim.now
    nodes_down: dict[int, int] = {}
    try:
        for step in schedule.steps:
            target = start + step.at_ms
            while sim.now < target:
                sim.run_for(min([target, *nodes_down.values()]) - sim.now)
                for node_id in [n for n, t in nodes_down.items() if t <= sim.now]:
                    del nodes_down[node_id]
                    sim.start_node(node_id)
            _apply(sim, schedule, step, nodes_down)
        for node_id in list(nodes_down):
            sim.run_for(max(nodes_down.pop(node_id) - sim.now, 0))
            sim.start_node(node_id)
        sim.core.faults.clear()
        for name in schedule.behaviours:  # every member back, working as drawn
            member = sim.share_members.get(name)
            if member is None or not member.alive:
                _apply(sim, schedule, Step(0, "join", name), nodes_down)
        if not sim.run_until(sim.share_drained, drain_ms):
            raise AssertionError(f"share seed {schedule.seed}: records not finished {drain_ms} ms after the last "
                                 f"fault\n{schedule}\nthen:\n  {sim.describe_share()}")
        sim.share_invariants.check_drained()
    except BaseException:
        sim.close()
        raise
    return sim


def play_share_seed(seed: int, **schedule_settings: Any) -> None:
    """Run the share schedule of ``seed`` (raises what :func:`run_share_schedule` raises)."""
    run_share_schedule(random_share_schedule(seed, **schedule_settings)).close()


def check_share_seeds(seeds: Iterable[int], **schedule_settings: Any) -> list[tuple[int, str]]:
    """Run the share schedule of each seed; (seed, what went wrong) for each that failed."""
    return seed_failures(functools.partial(play_share_seed, **schedule_settings), seeds)


def check_share_seeds_in_parallel(seeds: list[int], workers: int = 2,
                                  **schedule_settings: Any) -> list[tuple[int, str]]:
    """:func:`check_share_seeds` split over ``workers`` fresh processes."""
    return seed_failures_in_parallel(functools.partial(play_share_seed, **schedule_settings), seeds, workers)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m groupclient.testing.share_schedules",
                                     description="Run seeded random fault schedules against a simulated share group.")
    parser.add_argument("--first", type=int, default=0, help="first seed")
    parser.add_argument("--count", type=int, default=200, help="how many seeds")
    parser.add_argument("--workers", type=int, default=2, help="processes to spread the seeds over")
    parser.add_argument("--faults", type=int, default=4, help="faults per schedule")
    args = parser.parse_args(argv)
    started = time.monotonic()
    seeds = list(range(args.first, args.first + args.count))
    failures = check_share_seeds_in_parallel(seeds, args.workers, faults=args.faults)
    for seed, detail in failures:
        print(f"--- share seed {seed} failed:\n{detail}\n")
    print(f"{len(seeds) - len(failures)} passed, {len(failures)} failed "
          f"({time.monotonic() - started:.1f} s for {len(seeds)} schedules)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
