"""Partition assignors, ours against kafka-python's: time, memory, balance, stickiness after churn.

    nice -n 10 python benchmarks/assignors.py [--quick] [--out FILE.json] [--timeout-s 120] [--seed 0]

The matrix is members x partitions = 10x100, 100x10k, 1,000x100k, 2,000x200k, 2,000x1M, each with
uniform and random subscriptions, over partitions/2000 topics (at least 5; so 5, 5, 50, 100 and
500 topics).  Every run is one fresh subprocess (groupclient/assignor_lab.py): a fresh assignment,
then 10% of the members replaced and the survivors' partitions fed back as their client would.
kafka-python's assign() calls are capped at --timeout-s; once one of its assignors timed out at a
size (for one subscription kind), it is skipped at the larger sizes of that kind.  ``--quick`` runs
the first two sizes only (a few minutes: kafka-python's sticky assignors need 1-2 minutes per
call at 100x10k with random subscriptions); the full matrix takes about 20 minutes, mostly
kafka-python's sticky assignors running into their cap at 1,000x100k.

Targets, printed as PASS/FAIL at the end: 2,000x1M uniform in <= 30 s and <= 2 GB; 2,000x1M random
in <= 90 s; at 100x10k our sticky >= 50x faster than kafka-python's; balance and stickiness at least
as good as kafka-python's wherever both finished.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from groupclient.assignor_lab import (  # noqa: E402
    GROUPCLIENT, KAFKA_PYTHON, MEMORY_NOTE, GroupSpec, RunResult, default_topics, describe, format_table, run_one,
)

SIZES = [(10, 100), (100, 10_000), (1_000, 100_000), (2_000, 200_000), (2_000, 1_000_000)]
KINDS = ("uniform", "random")
ASSIGNORS = ("sticky", "cooperative-sticky", "range", "roundrobin")
STICKY = ("sticky", "cooperative-sticky")
BIG = (2_000, 1_000_000)
SPEEDUP_AT = (100, 10_000)
Key = tuple[int, int, str]  # members, partitions, subscription kind


def run_matrix(sizes: list[tuple[int, int]], timeout_s: float, seed: int) -> dict[Key, list[RunResult]]:
    results: dict[Key, list[RunResult]] = {}
    hopeless: dict[tuple[str, str], str] = {}  # (kafka-python assignor, kind) -> where it timed out
    for members, partitions in sizes:
        for kind in KINDS:
            spec = GroupSpec(members, partitions, default_topics(partitions), kind, seed)
            print(f"\n== {describe(spec)}", flush=True)
            rows = []
            for assignor in ASSIGNORS:
                rows.append(run_one(spec, assignor, GROUPCLIENT, timeout_s))
                where = hopeless.get((assignor, kind))
                if where is not None:
                    rows.append(RunResult(assignor, KAFKA_PYTHON, status=f"skipped: timed out at {where}"))
                    continue
                rows.append(run_one(spec, assignor, KAFKA_PYTHON, timeout_s))
                if rows[-1].status == "timeout":
                    hopeless[(assignor, kind)] = f"{members}x{partitions}"
            print(format_table(rows), flush=True)
            results[(members, partitions, kind)] = rows
    return results


def _find(rows: list[RunResult], assignor: str, implementation: str) -> RunResult:
    return next(r for r in rows if r.assignor == assignor and r.implementation == implementation)


def _ratio(theirs: float | None, ours: float | None, theirs_status: str, cap: float) -> tuple[float | None, str]:
    """kafka-python's time over ours; a timeout counts as the cap (so the ratio is a lower bound)."""
    if ours is None or ours <= 0:
        return None, "-"
    if theirs is None:
        return (cap / ours, f">{cap / ours:.0f}x") if theirs_status in ("timeout",) else (None, "-")
    return theirs / ours, f"{theirs / ours:.0f}x"


def ratios(results: dict[Key, list[RunResult]], cap: float) -> list[str]:
    lines = ["kafka-python / ours, sticky assignors (assign, churn):"]
    for (members, partitions, kind), rows in results.items():
        cells = []
        for assignor in STICKY:
            ours, theirs = _find(rows, assignor, GROUPCLIENT), _find(rows, assignor, KAFKA_PYTHON)
            fresh = _ratio(theirs.assign_s, ours.assign_s, theirs.status, cap)[1]
            churn = _ratio(theirs.churn_s, ours.churn_s, theirs.status, cap)[1]
            if theirs.status.startswith("skipped"):
                fresh = churn = "skipped"
            cells.append(f"{assignor} {fresh}, {churn}")
        lines.append(f"  {members}x{partitions} {kind:7}  " + ";  ".join(cells))
    return lines


def checks(results: dict[Key, list[RunResult]], cap: float) -> list[tuple[str, bool | None, str]]:
    """(target, passed or None when not measured, detail)."""
    out: list[tuple[str, bool | None, str]] = []
    for kind, limit in (("uniform", 30.0), ("random", 90.0)):
        rows = results.get((*BIG, kind))
        for assignor in STICKY:
            name = f"2000x1M {kind} {assignor}: assign and churn <= {limit:.0f} s" + (
                ", peak <= 2 GB" if kind == "uniform" else "")
            if rows is None:
                out.append((name, None, "not run (--quick)"))
                continue
            r = _find(rows, assignor, GROUPCLIENT)
            peak = max(r.peak_mb or 0.0, r.churn_peak_mb or 0.0)
            ok = (r.status == "ok" and r.assign_s is not None and r.churn_s is not None
                  and r.assign_s <= limit and r.churn_s <= limit and (kind == "random" or peak <= 2048))
            out.append((name, ok, f"assign {r.assign_s} s, churn {r.churn_s} s, peak {peak:.0f} MB, {r.status}"))
    for kind in KINDS:
        rows = results.get((*SPEEDUP_AT, kind))
        name = f"100x10k {kind}: our sticky >= 50x faster than kafka-python's (assign)"
        if rows is None:
            out.append((name, None, "not run"))
            continue
        ours, theirs = _find(rows, "sticky", GROUPCLIENT), _find(rows, "sticky", KAFKA_PYTHON)
        ratio, shown = _ratio(theirs.assign_s, ours.assign_s, theirs.status, cap)
        out.append((name, ratio is not None and ratio >= 50, f"{shown} (churn: "
                    f"{_ratio(theirs.churn_s, ours.churn_s, theirs.status, cap)[1]})"))
    for assignor in ASSIGNORS:
        worse, compared = [], 0
        for (members, partitions, kind), rows in results.items():
            ours, theirs = _find(rows, assignor, GROUPCLIENT), _find(rows, assignor, KAFKA_PYTHON)
            if theirs.status != "ok" or ours.status != "ok":
                continue
            compared += 1
            for what in ("balance", "churn_balance", "kept"):
                a, b = getattr(ours, what), getattr(theirs, what)
                if a is not None and b is not None and (a < b if what == "kept" else a > b):
                    worse.append(f"{members}x{partitions} {kind} {what}: ours {a:.4g} vs {b:.4g}")
        out.append((f"{assignor}: balance and stickiness at least kafka-python's", not worse if compared else None,
                    f"{compared} sizes compared" + ("; worse: " + "; ".join(worse) if worse else "")))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="only the first two sizes")
    parser.add_argument("--out", type=Path, default=None, help="save the results here as JSON")
    parser.add_argument("--timeout-s", type=float, default=120.0, help="cap per kafka-python assign() call")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sizes = SIZES[:2] if args.quick else SIZES
    print("topics per size: partitions/2000, at least 5; " + MEMORY_NOTE)
    print("time: one assign() call; churn: 10% of members replaced, all rounds (cooperative: until every "
          "partition has an owner); kept %: survivors' previous partitions still theirs; moved: partitions "
          "between survivors; balance: max - min partitions per member")
    results = run_matrix(sizes, args.timeout_s, args.seed)
    print()
    print("\n".join(ratios(results, args.timeout_s)))
    print()
    verdicts = checks(results, args.timeout_s)
    for name, passed, detail in verdicts:
        print(f"{'SKIP' if passed is None else 'PASS' if passed else 'FAIL'}  {name}  [{detail}]")
    if args.out is not None:
        payload: dict[str, Any] = {
            "timeout_s": args.timeout_s, "seed": args.seed, "memory": MEMORY_NOTE,
            "runs": [{"members": m, "partitions": p, "topics": default_topics(p), "subscriptions": k, **r.to_json()}
                     for (m, p, k), rows in results.items() for r in rows],
            "checks": [{"target": n, "passed": ok, "detail": d} for n, ok, d in verdicts],
        }
        args.out.write_text(json.dumps(payload, indent=2))
        print(f"saved {args.out}")
    return 1 if any(passed is False for _, passed, _ in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
