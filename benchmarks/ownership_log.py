"""Who owns which partition when: a shared, thread-safe log of rebalance-listener events, and
what rebalance_downtime.py computes from it (unowned partition-seconds, double ownership, the
results table, the timeline picture).

An event is ``(t, member, kind, partitions)`` with ``t`` from ``time.monotonic()`` (CLOCK_MONOTONIC,
the same clock in every process of the machine, so subprocess members log their own times).
``kind`` is ``assigned`` (ownership starts), ``revoked`` or ``lost`` (it ends) or ``closed``
(whatever the member still held ends: a safety net, both clients revoke on close).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

STARTS, ENDS = {"assigned"}, {"revoked", "lost", "closed"}


@dataclass(frozen=True)
class Event:
    t: float
    member: str
    kind: str
    partitions: tuple[int, ...]
    generation: int = -1


@dataclass(frozen=True)
class Interval:
    partition: int
    member: str
    start: float
    end: float


@dataclass(frozen=True)
class Overlap:
    partition: int
    members: tuple[str, ...]
    start: float
    end: float


class OwnershipLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[Event] = []

    def record(self, member: str, kind: str, partitions: Iterable[int], generation: int = -1,
               t: float | None = None) -> None:
        event = Event(time.monotonic() if t is None else t, member, kind, tuple(sorted(partitions)), generation)
        with self._lock:
            self._events.append(event)

    def events(self) -> list[Event]:
        with self._lock:
            return sorted(self._events, key=lambda e: e.t)

    def last_change(self) -> float:
        """When ownership last changed (events without partitions change nothing)."""
        with self._lock:
            return max((e.t for e in self._events if e.partitions), default=0.0)

    def owners(self) -> dict[int, set[str]]:
        """Partition -> members that own it now (more than one is a double ownership)."""
        held: dict[str, set[int]] = {}
        for e in self.events():
            _apply(held, e)
        result: dict[int, set[str]] = {}
        for member, parts in held.items():
            for p in parts:
                result.setdefault(p, set()).add(member)
        return result


def _apply(held: dict[str, set[int]], e: Event) -> None:
    parts = held.setdefault(e.member, set())
    if e.kind in STARTS:
        parts.update(e.partitions)
    elif e.kind == "closed":
        parts.clear()
    elif e.kind in ENDS:
        parts.difference_update(e.partitions)


def intervals(events: list[Event], until: float) -> list[Interval]:
    """Ownership intervals per (partition, member); those still open end at ``until``."""
    opened: dict[tuple[int, str], float] = {}
    result: list[Interval] = []
    for e in sorted(events, key=lambda e: e.t):
        if e.kind in STARTS:
            for p in e.partitions:
                opened.setdefault((p, e.member), e.t)
        elif e.kind in ENDS:
            keys = [k for k in opened if k[1] == e.member and (e.kind == "closed" or k[0] in e.partitions)]
            for key in keys:
                result.append(Interval(key[0], key[1], opened.pop(key), e.t))
    result += [Interval(p, m, start, until) for (p, m), start in opened.items()]
    return result


def unowned_seconds(events: list[Event], partitions: int, start: float, end: float) -> float:
    """Sum over partitions of the time in [start, end] during which no member owned it."""
    spans = intervals(events, end)
    total = 0.0
    for p in range(partitions):
        covered = sorted((max(i.start, start), min(i.end, end)) for i in spans if i.partition == p)
        owned, cursor = 0.0, start
        for a, b in covered:
            if b <= cursor:
                continue
            owned += b - max(a, cursor)
            cursor = b
        total += (end - start) - owned
    return total


def overlaps(events: list[Event], until: float, min_s: float = 0.0) -> list[Overlap]:
    """Every stretch of time during which two or more members owned the same partition."""
    found: list[Overlap] = []
    spans = intervals(events, until)
    for p in {i.partition for i in spans}:
        points: list[tuple[float, int, str]] = []
        for i in spans:
            if i.partition == p and i.end > i.start:
                points += [(i.start, 1, i.member), (i.end, -1, i.member)]
        owners: set[str] = set()
        since = 0.0
        for t, step, member in sorted(points, key=lambda x: (x[0], x[1])):  # ends before starts at a tie
            if len(owners) > 1 and t - since > min_s:
                found.append(Overlap(p, tuple(sorted(owners)), since, t))
            if step > 0:
                owners.add(member)
            else:
                owners.discard(member)
            since = t
    return sorted(found, key=lambda o: o.start)


def to_json(events: list[Event], origin: float) -> list[list[Any]]:
    return [[round(e.t - origin, 4), e.member, e.kind, list(e.partitions), e.generation] for e in events]


def from_json(rows: list[list[Any]]) -> list[Event]:
    return [Event(float(r[0]), str(r[1]), str(r[2]), tuple(r[3]), int(r[4])) for r in rows]


# -- results -----------------------------------------------------------------------------------
@dataclass
class Run:
    """One scenario x configuration; times in seconds, relative to the start of the measurement."""
    scenario: str
    config: str
    unowned: float = 0.0  # partition-seconds without an owner
    rebalances: int = 0  # coordinator generation at the end minus at the start
    total_s: float = 0.0  # until the last ownership change
    overlaps: list[dict[str, Any]] = field(default_factory=list)
    records: int = 0
    timed_out: bool = False
    max_restart_gap_s: float = 0.0  # rolling restart: from close() called to the replacement started
    stopped_s: float = 0.0  # when the members were told to stop, after the quiet period
    member_generations: list[int] = field(default_factory=list)  # generations members were assigned in
    generation_times: list[float] = field(default_factory=list)  # generation changes seen by DescribeGroups
    errors: list[str] = field(default_factory=list)
    events: list[list[Any]] = field(default_factory=list)


def record_outcome(run: Run, events: list[Event], t0: float, records: int, errors: list[str]) -> Run:
    """Fill in what every run reports once its members stopped: the overlaps (times since ``t0``),
    the records consumed, the errors and the event log."""
    run.overlaps = [asdict(o) | {"start": round(o.start - t0, 3), "end": round(o.end - t0, 3)}
                    for o in overlaps(events, time.monotonic())]
    run.records = records
    run.errors = errors
    run.events = to_json(events, t0)
    return run


def verdict(run: Run, baseline: Run | None, cooperative: str, session_ms: int) -> tuple[str, str]:
    ratio = run.unowned / baseline.unowned if baseline and baseline.unowned > 0 else float("nan")
    target = "-"
    if run.config == cooperative:
        target = f"{'PASS' if ratio <= 0.2 else 'FAIL'} (<=0.2x eager)"
    elif run.scenario.startswith("rolling") and "static" in run.config:
        no_rebalance = run.rebalances == 0 and run.max_restart_gap_s * 1000 < session_ms
        target = f"{'PASS' if no_rebalance else 'FAIL'} (no rebalance)"
    return f"{ratio:.2f}x", target


def table(runs: list[Run], baseline: str, cooperative: str, session_ms: int) -> str:
    head = (f"{'scenario':18s} {'configuration':19s} {'unowned p*s':>11s} {'rebal.':>6s} {'total s':>7s} "
            f"{'vs eager':>8s} {'overlap':>7s} {'records':>8s}  target")
    lines = [head, "-" * len(head)]
    for run in runs:
        base = next((r for r in runs if r.scenario == run.scenario and r.config == baseline), None)
        ratio, target = verdict(run, base, cooperative, session_ms)
        note = " (not settled)" if run.timed_out else ""
        lines.append(f"{run.scenario:18s} {run.config:19s} {run.unowned:11.2f} {run.rebalances:6d} {run.total_s:7.2f} "
                     f"{ratio:>8s} {len(run.overlaps):7d} {run.records:8d}  {target}{note}")
    double = sum(len(r.overlaps) for r in runs)
    lines.append(f"exclusivity (no partition owned by two members at once, all runs): "
                 f"{'PASS' if double == 0 else f'FAIL ({double} overlaps)'}")
    return "\n".join(lines)


def plot_timelines(panels: list[tuple[str, list[Event], float, float, float, list[float]]], partitions: int,
                   path: str) -> None:
    """One panel per (title, events, start, end, shown_until, generation-change times): rows are
    partitions, bars coloured by owning member, white gaps unowned; the unowned figure is over
    [start, end]; times are shown relative to start, from 1 s before it to ``shown_until``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 0.35 * partitions + 2.2), sharey=True,
                             squeeze=False)
    cmap = plt.get_cmap("tab10")
    right = max(until - start for _, _, start, _, until, _ in panels)
    for ax, (title, events, start, end, until, generations) in zip(axes[0], panels):
        members = sorted({e.member for e in events if e.kind in STARTS})
        colour = {m: cmap(i % 10) for i, m in enumerate(members)}
        lo = start - 1.0
        for i in intervals(events, until):
            a, b = max(i.start, lo), min(i.end, until)
            if b > a:
                ax.broken_barh([(a - start, b - a)], (i.partition - 0.4, 0.8), color=colour[i.member])
        for g in generations:
            ax.axvline(g - start, color="grey", lw=0.6, ls=":")
        ax.axvline(0, color="black", lw=1)
        unowned = unowned_seconds(events, partitions, start, end)
        ax.axvline(end - start, color="black", lw=1, ls="--")
        ax.set_title(f"{title}\nunowned {unowned:.2f} partition-s, {len(generations)} rebalances, "
                     f"settled after {end - start:.2f} s")
        ax.set_xlim(-1.0, right)
        ax.set_xlabel("s since the first new member started (dotted: new generation; dashed: settled)")
        handles = [Patch(color=colour[m]) for m in members]
        ax.legend(handles, members, fontsize=6, loc="upper left", ncol=3, framealpha=0.8)
    axes[0][0].set_ylabel("partition")
    axes[0][0].set_yticks(range(partitions))
    axes[0][0].set_ylim(-0.6, partitions + 1.4)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
