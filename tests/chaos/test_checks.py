"""The chaos invariants on hand-written event logs: each one catches what it is there for, and a
clean log passes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from .checks import check_run
from .harness import ChaosRun, ChaosSettings, Episode


@dataclass
class FakeProc:
    returncode: int | None = 0


@dataclass
class FakeMember:
    """An incarnation as checks.py reads it (test_kafka_chaos.py's checks too)."""

    name: str
    events: list[dict[str, Any]]
    client: str = "groupclient"
    protocol: str = "consumer"
    cut_off: list[tuple[float, float]] = field(default_factory=list)
    terminated: bool = False
    paused: list[tuple[float, float]] = field(default_factory=list)
    killed_at: float | None = None
    ended_at: float | None = 100.0
    proc: FakeProc = field(default_factory=FakeProc)
    stderr_path: Path = Path("/dev/null")

    def snapshot(self) -> list[dict[str, Any]]:
        return self.events


@dataclass
class FakeRun:
    members: list[FakeMember]
    end: dict[int, int]
    settings: ChaosSettings = field(default_factory=lambda: ChaosSettings(seed=0, seconds=1, partitions=1))
    episodes: list[Episode] = field(default_factory=list)
    generations: tuple[int, int] = (1, 2)

    @property
    def cluster_end_offsets(self) -> dict[int, int]:
        return self.end

    def incarnations(self) -> list[FakeMember]:
        return self.members

    def faults_by_kind(self) -> dict[str, int]:
        return {}


def ev(e: str, t: float, **fields: Any) -> dict[str, Any]:
    return {"e": e, "t": t, **fields}


def violations(*members: FakeMember, end: dict[int, int] | None = None) -> list[str]:
    return check_run(cast(ChaosRun, FakeRun(list(members), end if end is not None else {0: 4}))).violations


def handover(second_assigned_at: float) -> list[FakeMember]:
    first = FakeMember("a", [ev("assigned", 1, p=[0]), ev("poll", 2, t0=1.5, r=[[0, 0, 1, 2]]),
                             ev("commit", 2.1, t0=2, o={"0": 2}, ok=True), ev("revoked", 5, p=[0])])
    second = FakeMember("b", [ev("assigned", second_assigned_at, p=[0]), ev("poll", 7, t0=6.5, r=[[0, 2, 3, 2]]),
                              ev("commit", 7.1, t0=7, o={"0": 4}, ok=True)])
    return [first, second]


def test_a_clean_handover_passes() -> None:
    assert violations(*handover(6)) == []


def test_two_owners_at_once_are_caught() -> None:
    found = violations(*handover(4))
    assert len(found) == 1 and "owned by a" in found[0] and "and b" in found[0]


def test_a_member_frozen_past_its_session_is_not_an_owner_but_must_let_go_when_it_resumes() -> None:
    def frozen(after_resume: list[dict[str, Any]]) -> FakeMember:
        return FakeMember("a", [ev("assigned", 1, p=[0]), ev("poll", 1.5, t0=1.2, r=[[0, 0, 1, 2]]),
                                ev("commit", 1.6, t0=1.55, o={"0": 2}, ok=True), *after_resume],
                          paused=[(2.0, 6.0)])  # 4 s > the 3 s session
    other = FakeMember("b", [ev("assigned", 4, p=[0]), ev("poll", 4.5, t0=4.2, r=[[0, 2, 3, 2]])])
    assert violations(frozen([ev("lost", 6.1, p=[0])]), other) == []
    found = violations(frozen([ev("poll", 6.3, t0=6.05, r=[[0, 2, 2, 1]]), ev("lost", 6.4, p=[0])]), other)
    assert len(found) == 1 and "returned records of partitions [0]" in found[0]
    found = violations(frozen([]), other)
    assert len(found) == 1 and "never reported partitions [0] lost" in found[0]


def test_unprocessed_records_gaps_and_going_backwards_are_caught() -> None:
    found = violations(*handover(6), end={0: 6})
    assert found == ["2 records never processed, e.g. [(0, 4), (0, 5)]"]
    first, second = handover(6)
    second.events[1] = ev("poll", 7, t0=6.5, r=[[0, 2, 3, 1]])
    assert any("with gaps" in v for v in violations(first, second))
    first, second = handover(6)
    second.events[2] = ev("commit", 7.1, t0=7, o={"0": 1}, ok=True)
    assert any("commit went back from 2" in v for v in violations(first, second))
    # a commit sent before the higher one was acknowledged (it was in flight across a pause) may
    # have taken effect first: not a step back
    first, second = handover(6)
    second.events[2] = ev("commit", 7.1, t0=2.0, o={"0": 1}, ok=True)
    assert not any("went back" in v for v in violations(first, second))
    first, second = handover(6)
    second.events[1] = ev("poll", 7, t0=6.5, r=[[0, 1, 3, 3]])  # re-reads offset 1, committed before
    assert any("started partition 0 at 1, behind the commit of 2" in v for v in violations(first, second))


def test_a_member_that_died_by_itself_is_caught() -> None:
    first, second = handover(6)
    second.proc = FakeProc(returncode=2)
    assert any("b exited with 2" in v for v in violations(first, second))
