"""A chaos run as a test, a share group beside the group (share_side.py): 2 minutes in CI (CHAOS_SECONDS for longer; CHAOS_SEED replays a
schedule; CHAOS_PROTOCOLS=classic|consumer|mixed overrides the seed's group protocols).  The long
run is ``python -m tests.chaos --seconds 600``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .checks import check_run
from .harness import PROTOCOLS, ChaosRun, ChaosSettings, seed_from_env
from .share_side import ShareSide, check_share

pytestmark = pytest.mark.integration


def test_a_group_under_a_seeded_fault_schedule_keeps_every_invariant(tmp_path: Path) -> None:
    seed = seed_from_env()
    # the seed also picks the assignor and the group protocols, so runs over time cover eager and
    # cooperative classic groups, consumer-protocol (KIP-848) groups, and groups of both
    strategy = ("range", "roundrobin", "cooperative-sticky")[seed % 3]
    protocols = os.environ.get("CHAOS_PROTOCOLS") or PROTOCOLS[seed // 3 % 3]
    settings = ChaosSettings(seed=seed, seconds=float(os.environ.get("CHAOS_SECONDS", "120")), strategy=strategy,
                             protocols=protocols)
    print(f"chaos seed {seed}, {strategy}, {protocols} protocols (CHAOS_SEED={seed} replays this schedule)")
    run = ChaosRun(settings, tmp_path)
    share = ShareSide(run)  # and a share group beside it, on a topic of its own
    run.sides.append(share)
    try:
        run.run()
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nmember logs in {tmp_path}") from None
    verdict = check_run(run)
    share_violations, share_figures = check_share(share)
    print(json.dumps({**verdict.figures, **share_figures, "share_fault_list": share.faults}, indent=1))
    violations = [*verdict.violations, *share_violations]
    assert not violations, f"seed {settings.seed}: " + "\n".join(violations) + f"\nmember logs in {tmp_path}"
    assert verdict.figures["episodes"] >= 3
