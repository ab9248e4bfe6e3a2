"""``groupclient assignors bench`` end to end: tiny groups, ours and kafka-python's assignors."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")


def bench(*args: str) -> dict[tuple[str, str], list[str]]:
    """Run the command; its table as (assignor, implementation) -> the other cells."""
    done = subprocess.run([sys.executable, "-m", "groupclient", "assignors", "bench", "--log-level", "WARNING",
                           *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("assignor "))
    assert set(lines[header + 1]) <= {"-", " "}
    rows = {}
    for line in lines[header + 2:]:
        if line.startswith("memory:"):
            break
        cells = re.split(r"\s{2,}", line.strip())
        rows[(cells[0], cells[1])] = cells[2:]
    assert "ru_maxrss" in done.stdout  # says how memory was measured
    return rows


def numbers(cells: list[str]) -> dict[str, float]:
    """assign s, peak MB, balance, churn s, churn peak MB, churn balance, kept %, moved."""
    assign, memory, balance, churn, churn_peak, churn_balance, kept, moved = cells[:8]
    start, peak = memory.split("/")
    values = dict(assign=float(assign), input=float(start), peak=float(peak), balance=float(balance),
                  churn=float(churn), churn_peak=float(churn_peak), churn_balance=float(churn_balance),
                  kept=float(kept), moved=float(moved))
    assert 0 <= values["assign"] < 10 and 0 <= values["churn"] < 10
    assert 10 < values["input"] <= values["peak"] < 2000 and values["churn_peak"] >= values["peak"]
    assert 0 <= values["kept"] <= 100 and 0 <= values["moved"] <= 100
    return values


@pytest.mark.parametrize("subscriptions", ["uniform", "random"])
def test_bench_table_has_every_assignor_twice_with_sane_numbers(subscriptions: str) -> None:
    rows = bench("--members", "10", "--partitions", "100", "--subscriptions", subscriptions, "--seed", "3")
    assert list(rows) == [(a, impl) for a in ASSIGNORS for impl in ("groupclient", "kafka-python")]
    for (assignor, implementation), cells in rows.items():
        if (implementation, assignor, subscriptions) == ("kafka-python", "roundrobin", "random") \
                and cells[-1].startswith("error:"):
            # kafka-python 3.0.12's round robin reuses its (instance id, member id) tuple as a member
            # id when it skips a member that does not subscribe to a topic: a KeyError
            assert "KeyError" in cells[-1]
            continue
        values = numbers(cells)
        if subscriptions == "uniform":
            assert values["balance"] == values["churn_balance"] == 0, (assignor, implementation)
            if "sticky" in assignor:
                assert values["kept"] == 100 and values["moved"] == 0, (assignor, implementation)
        if assignor == "sticky":
            ours = numbers(rows[("sticky", "groupclient")])
            assert ours["balance"] <= values["balance"] and ours["kept"] >= values["kept"]


def test_bench_runs_an_assignor_given_as_module_and_class() -> None:
    rows = bench("--members", "10", "--partitions", "100", "--no-kafka-python",
                 "--assignor", "groupclient.assignors.sticky:CooperativeStickyAssignor",
                 "--assignor", "kafka.coordinator.assignors.range:RangePartitionAssignor")
    assert list(rows) == [("groupclient.assignors.sticky:CooperativeStickyAssignor", "groupclient"),
                          ("kafka.coordinator.assignors.range:RangePartitionAssignor", "kafka-python")]
    cooperative = numbers(rows[("groupclient.assignors.sticky:CooperativeStickyAssignor", "groupclient")])
    assert cooperative["balance"] == 0 and cooperative["kept"] == 100
