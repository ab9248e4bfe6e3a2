"""The long chaos run: ``python -m tests.chaos --seconds 600 [--seed N]`` prints its figures
as JSON and exits 1 if any invariant broke."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from .checks import check_run
from .harness import FAULT_WEIGHTS, PROTOCOLS, ChaosRun, ChaosSettings, seed_from_env


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos")
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--strategy", default="range")
    parser.add_argument("--protocols", choices=PROTOCOLS, default="classic",
                        help="the members' group protocols: classic, consumer (KIP-848) or mixed (both in one group)")
    parser.add_argument("--faults", default=",".join(sorted(FAULT_WEIGHTS)),
                        help="the kinds of fault drawn from (comma-separated)")
    parser.add_argument("--logs", type=Path, default=None, help="keep the members' logs here")
    args = parser.parse_args()
    kinds = tuple(sorted(set(args.faults.split(","))))
    if not set(kinds) <= set(FAULT_WEIGHTS):
        parser.error(f"unknown faults {sorted(set(kinds) - set(FAULT_WEIGHTS))}; known: {sorted(FAULT_WEIGHTS)}")
    seed = args.seed if args.seed is not None else seed_from_env()
    log_dir = args.logs or Path(tempfile.mkdtemp(prefix="chaos-"))
    print(f"chaos seed {seed}, member logs in {log_dir}", file=sys.stderr)
    run = ChaosRun(ChaosSettings(seed=seed, seconds=args.seconds, strategy=args.strategy, kinds=kinds,
                                 protocols=args.protocols), log_dir)
    run.run()
    verdict = check_run(run)
    print(json.dumps({**verdict.figures, "episode_log": [
        {"faults": e.detail, "convergence_s": e.convergence_s and round(e.convergence_s, 2)} for e in run.episodes]},
        indent=1))
    for violation in verdict.violations:
        print("VIOLATION:", violation, file=sys.stderr)
    return 1 if verdict.violations else 0


if __name__ == "__main__":
    sys.exit(main())
