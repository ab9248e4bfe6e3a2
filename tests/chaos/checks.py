"""The invariants of a chaos run, judged from the members' event logs afterwards.

Times are CLOCK_MONOTONIC seconds, the same clock in every process, so events of different
members can be ordered.  A member *owns* a partition from its ``assigned`` event to its
``revoked`` / ``lost`` event (or its death).  A member frozen past its timeout (SIGSTOP past
the session timeout, or a stall in its own code past max_poll_interval_ms) is not live from
the instant it froze: the group may move on without it then, and that is not double
ownership; what it must do is let go of those partitions when it runs again, before it
returns a single record of them.  A member cut off from its group coordinator longer than the
session (tests/chaos/kafka_run.py) is the classic zombie: it still runs and reaches the partition
leaders, and must stop returning records of its partitions within a session of the cut.  Every
member returns records only of partitions it owns; a groupclient member closed leaves no thread
and no socket behind.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from .harness import ChaosRun, Incarnation

LONGEST_POLL_S = 1.0  # member.py: a kafka-python member's poll (groupclient's: 200 ms)
SCHEDULING_SLACK_S = 1.5  # a process may wait this long for a core on the loaded machine


@dataclass
class Interval:
    member: str
    partition: int
    start: float
    end: float
    # what ended it: "revoked" or "lost" (the member's listener), "frozen", or "" (its death)
    how: str = ""


@dataclass
class Verdict:
    violations: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)

    def fail(self, what: str) -> None:
        if len(self.violations) < 50:
            self.violations.append(what)


def frozen_windows(member: Incarnation, run: ChaosRun) -> list[tuple[float, float]]:
    """When the member could not act, longer than the timeout that lets the group go on without it."""
    s = run.settings
    windows = [(a, b) for a, b in member.paused if b - a > s.session_ms / 1000]
    started: float | None = None
    for event in member.snapshot():
        if event["e"] == "stall":
            started = event["t"]
        elif event["e"] == "stalled" and started is not None:
            if event["t"] - started > s.max_poll_interval_ms / 1000:
                windows.append((started, event["t"]))
            started = None
    return sorted(windows)


def ownership(member: Incarnation, run: ChaosRun) -> list[Interval]:
    """Intervals of ownership, cut at the start of a frozen window."""
    end_of_life = member.killed_at or member.ended_at or float("inf")
    windows = frozen_windows(member, run)
    open_at: dict[int, float] = {}
    intervals: list[Interval] = []

    def close(p: int, t: float, how: str) -> None:
        start = open_at.pop(p)
        cut = min([t, *(a for a, b in windows if start <= a < t)])
        intervals.append(Interval(member.name, p, start, cut, how if cut == t else "frozen"))

    for event in member.snapshot():
        if event["e"] == "assigned":
            for p in event["p"]:
                open_at.setdefault(p, event["t"])
        elif event["e"] in ("revoked", "lost"):
            for p in event["p"]:
                if p in open_at:
                    close(p, event["t"], event["e"])
    for p in list(open_at):
        close(p, end_of_life, "")
    return intervals


def check_run(run: ChaosRun) -> Verdict:
    verdict = Verdict()
    members = run.incarnations()
    s = run.settings
    _no_two_owners(members, run, verdict)
    _frozen_members_let_go(members, run, verdict)
    processed = _every_record_processed(members, run, verdict)
    _commits(members, processed, verdict)
    _only_owned_partitions(members, verdict)
    _cut_off_members_let_go(members, run, verdict)
    _closed_cleanly(members, verdict)
    for member in members:
        for event in member.snapshot():
            if event["e"] == "error":
                verdict.fail(f"{member.name} failed: {event}")
        code = member.proc.returncode
        if member.killed_at is None and code not in (0, None):
            verdict.fail(f"{member.name} exited with {code} (see {member.stderr_path})")
    slow = [e for e in run.episodes if (e.convergence_s or 0) > s.convergence_bound_s]
    for episode in slow:
        verdict.fail(f"converged {episode.convergence_s:.2f} s after {episode.detail} healed "
                     f"(bound {s.convergence_bound_s:.0f} s)")
    convergence = [e.convergence_s for e in run.episodes if e.convergence_s is not None]
    verdict.figures.update({
        "seed": s.seed, "seconds": s.seconds, "strategy": s.strategy, "protocols": s.protocols,
        "members": dict(Counter(f"{s.client_of(i)}/{s.protocol_of(i)}" for i in range(s.members))),
        "episodes": len(run.episodes),
        "faults": run.faults_by_kind(), "rebalances": run.generations[1] - run.generations[0],
        "max_convergence_s": round(max(convergence, default=0.0), 2),
        "mean_convergence_s": round(sum(convergence) / len(convergence), 2) if convergence else 0.0,
        "member_processes": len(members), "overlaps": sum("owned by" in v for v in verdict.violations),
        "violations": len(verdict.violations),
    })
    return verdict


def _no_two_owners(members: list[Incarnation], run: ChaosRun, verdict: Verdict) -> None:
    """No partition is owned by two members at once, by their listeners' account, with one
    exception, counted as ``quiet_overlaps``: a member whose own lease ended (no heartbeat answered
    within the session) lets its partitions go at that instant, which is the instant the
    coordinator may expire it and give them to another, and its listener hears of the loss
    (``lost``) at its next poll, after the commit or poll under way returns.  So the other may be
    given a partition the first still holds by its listener's account, for as long as that call
    takes: not double ownership as long as the first returns none of its records meanwhile.  How
    late the listener may hear is checked where the lease's end is known (_cut_off_members_let_go,
    _frozen_members_let_go)."""
    quiet = 0
    # as long as the call under way may take: a bounded commit and the longest poll (the Kafka run
    # bounds its members' commits), and the scheduling slack of a loaded 2-core machine; where
    # commits are not bounded (the embedded run) no overlap is excused
    commit_ms = getattr(run.settings, "commit_timeout_ms", None)
    quiet_bound_s = commit_ms / 1000 + LONGEST_POLL_S + SCHEDULING_SLACK_S if commit_ms else 0.0
    returned: dict[tuple[str, int], list[float]] = defaultdict(list)  # when each poll handed records out
    by_partition: dict[int, list[Interval]] = defaultdict(list)
    for member in members:
        for event in member.snapshot():
            if event["e"] == "poll":
                for r in event["r"]:
                    returned[(member.name, r[0])].append(event["t"])
        for interval in ownership(member, run):
            by_partition[interval.partition].append(interval)
    for p, intervals in sorted(by_partition.items()):
        intervals.sort(key=lambda i: i.start)
        latest: Interval | None = None
        for interval in intervals:
            if latest is not None and interval.start < latest.end and interval.member != latest.member:
                a, b = interval.start, min(latest.end, interval.end)
                busy = [m for m in (latest.member, interval.member) if any(a <= t <= b for t in returned[(m, p)])]
                if latest.how == "lost" and latest.member not in busy and b - a <= quiet_bound_s:
                    quiet += 1
                else:
                    verdict.fail(f"partition {p} owned by {latest.member} ({latest.start:.3f}..{latest.end:.3f}, "
                                 f"{latest.how or 'died'}) and {interval.member} "
                                 f"({interval.start:.3f}..{interval.end:.3f}) at once; "
                                 f"records returned meanwhile by {' and '.join(busy) or 'neither'}")
            if latest is None or interval.end > latest.end:
                latest = interval
    verdict.figures["quiet_overlaps"] = quiet


def _frozen_members_let_go(members: list[Incarnation], run: ChaosRun, verdict: Verdict) -> None:
    """After a frozen window, no poll begun later returns records of what it owned before
    the window until it is assigned them again, and it reports them lost first."""
    for member in members:
        events = member.snapshot()
        for frozen_at, resumed_at in frozen_windows(member, run):
            owned: set[int] = set()
            for event in events:
                if event["t"] >= frozen_at:
                    break
                if event["e"] == "assigned":
                    owned |= set(event["p"])
                elif event["e"] in ("revoked", "lost"):
                    owned -= set(event["p"])
            held, reported = set(owned), False
            for event in events:
                if event["t"] < resumed_at:
                    continue
                if event["e"] == "lost" and set(event["p"]) & owned:
                    reported = True
                elif event["e"] == "assigned":
                    held -= set(event["p"])
                elif event["e"] == "poll" and event["t0"] >= resumed_at and not reported:
                    stale = {r[0] for r in event["r"]} & held
                    if stale:
                        verdict.fail(f"{member.name} resumed at {resumed_at:.3f} and returned records of "
                                     f"partitions {sorted(stale)} it had owned before freezing at {frozen_at:.3f}")
                        held -= stale  # one report per freeze
            if owned and not reported and (member.killed_at is None or member.killed_at > resumed_at + 5):
                verdict.fail(f"{member.name} never reported partitions {sorted(owned)} lost after "
                             f"freezing {frozen_at:.3f}..{resumed_at:.3f}")


def _every_record_processed(members: list[Incarnation], run: ChaosRun, verdict: Verdict) -> Counter[tuple[int, int]]:
    processed: Counter[tuple[int, int]] = Counter()
    for member in members:
        for event in member.snapshot():
            if event["e"] != "poll":
                continue
            for p, first, last, n in event["r"]:
                if n != last - first + 1:
                    verdict.fail(f"{member.name} got a batch of partition {p} with gaps: {first}..{last} in {n}")
                processed.update((p, o) for o in range(first, last + 1))
    end = run.cluster_end_offsets
    missing = [(p, o) for p, e in end.items() for o in range(e) if (p, o) not in processed]
    if missing:
        verdict.fail(f"{len(missing)} records never processed, e.g. {missing[:10]}")
    verdict.figures["records_produced"] = sum(end.values())
    verdict.figures["records_processed"] = sum(processed.values())
    verdict.figures["duplicates"] = sum(n - 1 for n in processed.values())
    verdict.figures["lost"] = len(missing)
    return processed


def _commits(members: list[Incarnation], processed: Counter[tuple[int, int]], verdict: Verdict) -> None:
    """Acknowledged commits never go backwards, and each new owner starts at the last one:
    a record is processed again only past the committed offset (the uncommitted window)."""
    # a commit takes effect somewhere between its send (t0) and its acknowledgement (t): one
    # surely came before another only if it was acknowledged before the other was sent
    acked: dict[int, list[tuple[float, float, int, str]]] = defaultdict(list)  # t, t0, offset, member
    starts: list[tuple[str, int, float, int]] = []  # member, partition, assigned at, first offset polled
    for member in members:
        assigned_at: dict[int, float] = {}
        for event in member.snapshot():
            if event["e"] == "commit" and event["ok"]:
                for p, offset in event["o"].items():
                    acked[int(p)].append((event["t"], event["t0"], offset, member.name))
            elif event["e"] == "assigned":
                for p in event["p"]:
                    assigned_at[p] = event["t"]
            elif event["e"] == "poll":
                for p, first, _, _ in event["r"]:
                    if p in assigned_at:
                        starts.append((member.name, p, assigned_at.pop(p), first))
    for p, commits in acked.items():
        commits.sort()
        highest: tuple[float, float, int, str] | None = None  # of those acknowledged so far
        done = 0
        for later in sorted(commits, key=lambda c: c[1]):
            while done < len(commits) and commits[done][0] < later[1]:
                if highest is None or commits[done][2] > highest[2]:
                    highest = commits[done]
                done += 1
            if highest is not None and later[2] < highest[2]:
                verdict.fail(f"partition {p}: commit went back from {highest[2]} ({highest[3]}, acknowledged at "
                             f"{highest[0]:.3f}) to {later[2]} ({later[3]}, sent at {later[1]:.3f})")
    verdict.figures["commits"] = sum(len(c) for c in acked.values())
    for name, p, at, first in starts:
        before = [o for t, _, o, _ in acked.get(p, []) if t < at]
        if before and first < max(before):
            verdict.fail(f"{name} started partition {p} at {first}, behind the commit of {max(before)} "
                         f"acknowledged before it was assigned (at {at:.3f})")


def _owned_before(events: list[dict[str, Any]], t: float) -> set[int]:
    """What the member's own log says it owned at ``t``."""
    owned: set[int] = set()
    for event in events:
        if event["t"] >= t:
            break
        if event["e"] == "assigned":
            owned |= set(event["p"])
        elif event["e"] in ("revoked", "lost"):
            owned -= set(event["p"])
    return owned


def _only_owned_partitions(members: list[Incarnation], verdict: Verdict) -> None:
    """Each poll returns records only of partitions the member owns: assigned to it and not
    revoked or lost since.  Its listener runs inside poll(), before the records are returned, so
    the order of its events decides, not their times."""
    for member in members:
        owned: set[int] = set()
        for event in member.snapshot():
            if event["e"] == "assigned":
                owned |= set(event["p"])
            elif event["e"] in ("revoked", "lost"):
                owned -= set(event["p"])
            elif event["e"] == "poll" and (stray := {r[0] for r in event["r"]} - owned):
                client = getattr(member, "client", "groupclient")
                verdict.fail(f"{member.name} ({client}) returned records of partitions {sorted(stray)} "
                             f"it did not own (poll {event['t0']:.3f}..{event['t']:.3f})")
                break  # one report per member


def _cut_off_members_let_go(members: list[Incarnation], run: ChaosRun, verdict: Verdict) -> None:
    """A member cut off from its coordinator longer than the session: the last heartbeat it had
    answered was sent before the cut, so by a session after the cut its lease has ended (the
    coordinator may expire it from then on and give its partitions away).  By the first poll begun
    after that it has let go (lost, or revoked) of every partition it owned when cut off, unless
    assigned it again (and so returns none of their records); and it lets each of them go, unless
    it died first.  (member.py reports every poll, those that return nothing too.)"""
    session_s = run.settings.session_ms / 1000
    judged = 0
    for member in members:
        events = member.snapshot()
        end_of_life = member.killed_at or member.ended_at or float("inf")
        for cut, healed in getattr(member, "cut_off", ()):  # hand-written logs may have none
            if healed - cut <= session_s:
                continue
            judged += 1
            lease_end = cut + session_s
            owned = _owned_before(events, cut)
            held, let_go = set(owned), set()
            for event in events:
                if event["t"] < cut:
                    continue
                if event["e"] in ("assigned", "revoked", "lost"):
                    held -= set(event["p"])
                    if event["e"] != "assigned":
                        let_go |= set(event["p"]) & owned
                elif event["e"] == "poll" and event["t0"] >= lease_end and held:
                    stale = {r[0] for r in event["r"]} & held
                    told = [e["t"] for e in events if e["t"] >= event["t"] and e["e"] in ("lost", "revoked")
                            and set(e["p"]) & held]
                    verdict.fail(f"{member.name} ({member.client}, {member.protocol}), cut off from its coordinator at "
                                 f"{cut:.3f}, polled at {event['t0']:.3f}, past its session ({lease_end:.3f}), still "
                                 f"holding partitions {sorted(held)} by its listener's account"
                                 + (f" and returned records of {sorted(stale)}" if stale
                                    else " (none of their records)")
                                 + (f"; told at {told[0]:.3f}" if told else ""))
                    held = set()  # one report per cut
            if owned - let_go and end_of_life > lease_end + 5:
                verdict.fail(f"{member.name} ({member.client}, {member.protocol}) never let go of partitions "
                             f"{sorted(owned - let_go)} after being cut off from its coordinator "
                             f"{cut:.3f}..{healed:.3f}")
    verdict.figures["cut_offs_judged"] = judged


def _closed_cleanly(members: list[Incarnation], verdict: Verdict) -> None:
    """A groupclient member asked to close (SIGTERM) returns from close() and leaves no thread
    and no socket behind (member.py's ``closed`` event).  kafka-python members report the same
    and are not judged on it."""
    leaks = 0
    for member in members:
        if getattr(member, "client", "groupclient") != "groupclient" or not getattr(member, "terminated", False):
            continue
        events = member.snapshot()
        closed = [e for e in events if e["e"] == "closed"]
        if not closed:
            if not any(e["e"] == "error" for e in events):
                verdict.fail(f"{member.name} was asked to close and never reported close() done "
                             f"(see {member.stderr_path})")
            continue
        threads, sockets = closed[-1].get("threads", []), closed[-1].get("sockets", [])
        if threads or sockets:
            leaks += 1
            verdict.fail(f"{member.name} ({member.protocol}) left behind after close(): threads {threads}, "
                         f"sockets {sockets}")
    verdict.figures["close_leaks"] = leaks
