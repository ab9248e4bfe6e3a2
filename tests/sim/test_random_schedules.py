"""Seeded random fault schedules: every invariant at every step, convergence after the last fault.

Each seed also draws what its members speak (``Schedule.protocols``): the classic protocol only,
KIP-848's consumer protocol only, or both in one group; see docs/testing.md."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from groupclient.testing.schedules import Schedule, check_seeds_in_parallel, random_schedule, run_schedule

IN_CI = bool(os.environ.get("CI"))
# seeds beyond the first 500 that once failed, each with what it caught:
# 872: an upgrade group (eager and cooperative members) where a cooperative member's lease ran out
#      while it rejoined; the leader held back the partitions it still claimed, and the member
#      never rejoined without them, so they stayed unowned (it draws classic members, as then)
REGRESSIONS = [872]
# seeds of the 500 that meet a defect outside the simulator, each shown on its own by a strict
# xfail test of test_consumer_protocol_defects.py: while it stands, these seeds may fail (and only
# these).  When a defect is fixed, its seeds come off this list.
def test_500_seeded_schedules_keep_every_invariant() -> None:
    """3-6 members, 1 or 3 nodes, 4 faults each (crashes and restarts, clean leaves, slow polls past
    the poll interval, frozen members past the session timeout, cut connections, error / drop /
    delay answers on every group API, coordinator moves), classic, consumer-protocol and mixed
    groups, spread over 2 processes."""
    failures = check_seeds_in_parallel(list(range(500)) + REGRESSIONS, workers=2)
    assert not failures, "\n\n".join(f"seed {seed}:\n{detail}" for seed, detail in failures[:3])


@settings(max_examples=25, deadline=None, derandomize=IN_CI, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1), members=st.integers(3, 6),
       faults=st.integers(1, 10), protocols=st.sampled_from(("classic", "consumer", "mixed")))
# a draw that once failed, each with what it caught: a classic member's target, not what it held,
# stored when a mixed group turned classic; a consumer-protocol member joining next was given a
# partition the classic member still consumed
@example(seed=3, members=3, faults=7, protocols="mixed")
def test_random_schedules_keep_every_invariant(seed: int, members: int, faults: int, protocols: str) -> None:
    schedule = random_schedule(seed, min_members=members, max_members=members, faults=faults, protocols=protocols)
    run_schedule(schedule).close()
