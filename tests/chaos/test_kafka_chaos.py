"""The chaos run on a three-node Apache Kafka 4.4 cluster (tests/chaos/kafka_run.py) as a test:
2 minutes in CI (CHAOS_SECONDS for longer; CHAOS_SEED replays a schedule: the faults, their
victims and their order, the members' clients and protocols, the assignor).  The long run is
``flock /tmp/groupclient-kafka-cluster.lock python -m tests.chaos --kafka --seconds 3600``.

And the checks that only this run calls for (a coordinator cut-off, what close() leaves behind),
on hand-written event logs as tests/chaos/test_checks.py does."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, cast

import pytest

from .checks import check_run
from .harness import ChaosRun, ChaosSettings, seed_from_env
from .kafka_run import KafkaChaosRun, KafkaChaosSettings, kafka_settings
from .test_checks import FakeMember, FakeRun, ev


@pytest.mark.integration
@pytest.mark.kafka
def test_a_mixed_group_on_apache_kafka_under_a_seeded_fault_schedule_keeps_every_invariant(
        kafka_cluster: Any, tmp_path: Path) -> None:
    seed = seed_from_env()
    settings = kafka_settings(seed, float(os.environ.get("CHAOS_SECONDS", "120")))
    members = {f"m{i}": f"{settings.client_of(i)}/{settings.protocol_of(i)}" for i in range(settings.members)}
    print(f"chaos seed {seed} on Apache Kafka, {settings.strategy}, members {members} "
          f"(CHAOS_SEED={seed} replays this schedule); member logs in {tmp_path}")
    run = KafkaChaosRun(settings, tmp_path, kafka_cluster)
    started = time.monotonic()
    try:
        run.run()
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nmember logs in {tmp_path}") from None
    verdict = check_run(run)
    episodes = [{"faults": e.detail, "convergence_s": e.convergence_s and round(e.convergence_s, 2)}
                for e in run.episodes]
    print(json.dumps({**verdict.figures, **run.figures(), "wall_s": round(time.monotonic() - started, 1),
                      "episode_log": episodes}, indent=1))
    assert not verdict.violations, (f"seed {settings.seed}: " + "\n".join(verdict.violations)
                                    + f"\nmember logs in {tmp_path}")
    assert verdict.figures["episodes"] >= settings.min_episodes


# -- the checks of this run, on hand-written logs ----------------------------------------------------
def kafka_run(members: list[FakeMember], settings: ChaosSettings | None = None) -> FakeRun:
    """Two partitions, nothing produced, a 6 s session (the embedded run's settings unless given)."""
    return FakeRun(members, {0: 0, 1: 0},
                   settings=settings or ChaosSettings(seed=0, seconds=1, partitions=2, session_ms=6000))


def poll(t: float, partition: int, offset: int = 0) -> dict[str, Any]:
    return ev("poll", t, t0=t - 0.1, r=[[partition, offset, offset, 1]])


def violations(*members: FakeMember) -> list[str]:
    return check_run(cast(ChaosRun, kafka_run(list(members)))).violations


def test_a_member_cut_off_from_its_coordinator_must_let_go_within_a_session() -> None:
    owned = [ev("assigned", 1.0, p=[0, 1]), poll(2.0, 0)]
    zombie = FakeMember("m0.0", [*owned, poll(17.5, 1)], cut_off=[(10.0, 19.0)])
    found = violations(zombie)
    assert any("polled at 17.400, past its session (16.000), still holding partitions [0, 1] by its listener's "
               "account and returned records of [1]" in v for v in found), found
    assert any("never let go of partitions [0, 1]" in v for v in found), found
    # told only later: its first poll past the session returned nothing, but it should have told
    late = FakeMember("m0.0", [*owned, ev("poll", 16.6, t0=16.4, r=[]), ev("lost", 17.0, p=[0, 1])],
                      cut_off=[(10.0, 19.0)])
    assert any("(none of their records); told at 17.000" in v for v in violations(late)), violations(late)
    # before the session has passed it may still return records; then it lets them go
    fenced = FakeMember("m0.0", [*owned, poll(15.5, 1), ev("lost", 16.2, p=[0, 1])], cut_off=[(10.0, 19.0)])
    assert violations(fenced) == []
    # assigned a partition again after letting it go, it returns records of it
    back = FakeMember("m0.0", [*owned, ev("lost", 16.2, p=[0, 1]), ev("assigned", 20.0, p=[1]), poll(21.0, 1)],
                      cut_off=[(10.0, 19.0)])
    assert violations(back) == []
    # a cut-off shorter than the session asks nothing of it
    assert violations(FakeMember("m0.0", [*owned, poll(15.0, 1)], cut_off=[(10.0, 14.0)])) == []


def test_a_poll_returns_records_only_of_partitions_the_member_owns() -> None:
    stray = FakeMember("m0.0", [ev("assigned", 1.0, p=[0]), poll(2.0, 0), ev("lost", 3.0, p=[0]), poll(4.0, 0)])
    found = violations(stray)
    assert any("returned records of partitions [0] it did not own" in v for v in found), found


def test_a_groupclient_member_closed_leaves_no_thread_and_no_socket() -> None:
    def closed(**left: Any) -> list[dict[str, Any]]:
        return [ev("closing", 5.0), ev("closed", 5.5, **{"threads": [], "sockets": [], **left})]

    assert violations(FakeMember("m0.0", closed(), terminated=True)) == []
    found = violations(FakeMember("m0.0", closed(threads=["heartbeat"], sockets=["7:socket:[1234]"]),
                                  terminated=True))
    assert any("threads ['heartbeat'], sockets ['7:socket:[1234]']" in v for v in found), found
    assert any("never reported close() done" in v for v in violations(FakeMember("m0.0", [], terminated=True)))
    # kafka-python's leftovers are kafka-python's
    assert violations(FakeMember("m0.0", closed(threads=["kafka-io"]), client="kafka-python", terminated=True)) == []


def test_a_loss_heard_at_the_next_poll_may_overlap_the_next_owner_if_no_record_is_returned_meanwhile() -> None:
    old = [ev("assigned", 1.0, p=[0]), poll(4.5, 0)]
    new = FakeMember("m1.0", [ev("assigned", 5.0, p=[0]), poll(5.1, 0)])
    quiet = [FakeMember("m0.0", [*old, ev("lost", 5.3, p=[0])]), new]
    kafka = KafkaChaosSettings(seed=0, seconds=1, partitions=2, session_ms=6000)  # commits bounded at 1 s
    verdict = check_run(cast(ChaosRun, kafka_run(quiet, kafka)))
    assert verdict.violations == [] and verdict.figures["quiet_overlaps"] == 1
    # not longer than a bounded commit, the longest poll and a scheduling slack (3.5 s), and not
    # where commits are unbounded (embedded)
    late = [FakeMember("m0.0", [*old, ev("lost", 8.6, p=[0])]), new]
    assert check_run(cast(ChaosRun, kafka_run(late, kafka))).violations
    assert check_run(cast(ChaosRun, kafka_run(quiet))).violations
    # not if it returned records meanwhile, nor if it was a revocation (which comes before the next owner's turn)
    loud = violations(FakeMember("m0.0", [*old, poll(5.2, 0), ev("lost", 5.3, p=[0])]), new)
    assert any("records returned meanwhile by m0.0 and m1.0" in v for v in loud), loud
    revoked = violations(FakeMember("m0.0", [*old, ev("revoked", 5.3, p=[0])]), new)
    assert any("5.300, revoked) and m1.0" in v for v in revoked), revoked
