"""The long chaos run: ``python -m tests.chaos --seconds 600 [--seed N]`` on the embedded cluster,
``python -m tests.chaos --kafka --seconds 3600 [--seed N]`` on a three-node Apache Kafka cluster of
its own (tests/kafka/cluster.py; run it under ``flock /tmp/groupclient-kafka-cluster.lock`` where
others start Kafka clusters too).  It prints its figures as JSON and exits 1 if any invariant broke."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from .checks import check_run
from .harness import FAULT_WEIGHTS, PROTOCOLS, ChaosRun, ChaosSettings, seed_from_env
from .kafka_run import KAFKA_FAULT_WEIGHTS, KafkaChaosRun, kafka_settings


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos")
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--kafka", action="store_true",
                        help="on three Apache Kafka nodes (started here) with groupclient members of both "
                             "protocols and kafka-python members, rather than on the embedded cluster")
    parser.add_argument("--strategy", default=None,
                        help="the classic assignor (default: range; with --kafka, drawn from the seed)")
    parser.add_argument("--protocols", choices=PROTOCOLS, default="classic",
                        help="the members' group protocols: classic, consumer (KIP-848) or mixed (both in one "
                             "group); with --kafka the mix is drawn from the seed")
    parser.add_argument("--faults", default=None, help="the kinds of fault drawn from (comma-separated; default: all)")
    parser.add_argument("--logs", type=Path, default=None, help="keep the members' logs here")
    args = parser.parse_args()
    weights = KAFKA_FAULT_WEIGHTS if args.kafka else FAULT_WEIGHTS
    kinds = tuple(sorted(set(args.faults.split(",")))) if args.faults else tuple(sorted(weights))
    if not set(kinds) <= set(weights):
        parser.error(f"unknown faults {sorted(set(kinds) - set(weights))}; known: {sorted(weights)}")
    seed = args.seed if args.seed is not None else seed_from_env()
    log_dir = args.logs or Path(tempfile.mkdtemp(prefix="chaos-"))
    print(f"chaos seed {seed}, member logs in {log_dir}", file=sys.stderr)
    started = time.monotonic()
    if args.kafka:
        run: ChaosRun = _kafka_run(seed, args.seconds, args.strategy, kinds, log_dir)
    else:
        run = ChaosRun(ChaosSettings(seed=seed, seconds=args.seconds, strategy=args.strategy or "range",
                                     kinds=kinds, protocols=args.protocols), log_dir)
        run.run()
    verdict = check_run(run)
    extra = run.figures() if isinstance(run, KafkaChaosRun) else {}
    print(json.dumps({**verdict.figures, **extra, "wall_s": round(time.monotonic() - started, 1), "episode_log": [
        {"faults": e.detail, "convergence_s": e.convergence_s and round(e.convergence_s, 2)} for e in run.episodes]},
        indent=1))
    for violation in verdict.violations:
        print("VIOLATION:", violation, file=sys.stderr)
    return 1 if verdict.violations else 0


def _kafka_run(seed: int, seconds: float, strategy: str | None, kinds: tuple[str, ...], log_dir: Path) -> KafkaChaosRun:
    from tests.kafka.broker import missing_tools
    from tests.kafka.cluster import KafkaCluster

    if missing_tools():
        raise SystemExit(f"Apache Kafka needs {', '.join(missing_tools())} (Java 17 and Maven)")
    with KafkaCluster() as cluster:
        run = KafkaChaosRun(kafka_settings(seed, seconds, strategy, kinds), log_dir, cluster)
        try:
            run.run()
        finally:
            cluster.save_logs(log_dir)
    return run


if __name__ == "__main__":
    sys.exit(main())
