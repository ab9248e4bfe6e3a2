"""The ``groupclient`` command: ``coordinator`` runs the server, ``demo`` runs the main job,
``assignors bench`` compares partition assignors (see docs/assignors.md)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path


def _topic(spec: str) -> tuple[str, int]:
    name, _, partitions = spec.partition(":")
    try:
        return name, int(partitions or "1")
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME or NAME:PARTITIONS, got {spec!r}") from None


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    parser = argparse.ArgumentParser(prog="groupclient")
    commands = parser.add_subparsers(dest="command", required=True)

    coord = commands.add_parser("coordinator", parents=[common], help="run the Kafka-wire group coordinator")
    coord.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    coord.add_argument("--port", type=int, default=9092,
                       help="port of node 0; node i listens on port+i (0 = ephemeral ports)")
    coord.add_argument("--nodes", type=int, default=1, help="number of nodes in this process")
    coord.add_argument("--data-dir", type=Path, default=None,
                       help="keep topics, groups and offsets here across restarts")
    coord.add_argument("--initial-rebalance-delay-ms", type=int, default=3000,
                       help="group.initial.rebalance.delay.ms (default 3000)")
    coord.add_argument("--offsets-partitions", type=int, default=50,
                       help="offsets.topic.num.partitions (default 50)")
    coord.add_argument("--topic", action="append", type=_topic, default=[], metavar="NAME[:PARTITIONS]",
                       help="create this topic at start if missing (repeatable)")

    demo = commands.add_parser("demo", parents=[common], help="run a consumer group on an embedded coordinator")
    demo.add_argument("--members", type=int, default=3)
    demo.add_argument("--partitions", type=int, default=6)
    demo.add_argument("--records", type=int, default=600)

    lab = commands.add_parser("assignors", help="partition assignor tools")
    bench = lab.add_subparsers(dest="assignors_command", required=True).add_parser(
        "bench", parents=[common], help="time, memory, balance and stickiness of assignors on a generated group")
    bench.add_argument("--members", type=int, required=True)
    bench.add_argument("--partitions", type=int, required=True)
    bench.add_argument("--topics", type=int, default=None, help="default: partitions/2000, at least 5")
    bench.add_argument("--subscriptions", choices=["uniform", "random"], default="uniform")
    bench.add_argument("--assignor", action="append", default=[], metavar="NAME|module:Class",
                       help="repeatable (default: range, roundrobin, sticky, cooperative-sticky)")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--no-kafka-python", dest="kafka_python", action="store_false",
                       help="skip kafka-python's assignors")
    bench.add_argument("--timeout-s", type=float, default=120.0, help="cap per kafka-python assign() call")
    spark = commands.add_parser("spark", help="PySpark integration (needs groupclient[spark])")
    pipeline = spark.add_subparsers(dest="spark_command", required=True).add_parser(
        "pipeline", parents=[common], help="events -> embedded coordinator -> Spark group members -> Parquet, checked")
    pipeline.add_argument("--events", type=int, default=100_000)
    pipeline.add_argument("--output", default="pipeline-out", help="directory for the Parquet output and staging")
    pipeline.add_argument("--members", type=int, default=2, help="executor tasks in the consumer group")
    pipeline.add_argument("--partitions", type=int, default=6)
    pipeline.add_argument("--master", default="local[2]")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "coordinator":
        from .coordinator.config import CoordinatorConfig
        from .coordinator.serve import run

        if args.nodes < 1:
            raise SystemExit("groupclient coordinator: --nodes must be at least 1")
        config = CoordinatorConfig(group_initial_rebalance_delay_ms=args.initial_rebalance_delay_ms,
                                   offsets_topic_partitions=args.offsets_partitions)
        ports = [0 if args.port == 0 else args.port + i for i in range(args.nodes)]
        return run(config, args.host, ports, args.data_dir, args.topic)
    if args.command == "assignors":
        from .assignor_lab import bench_command

        return bench_command(args.members, args.partitions, args.topics, args.subscriptions, args.assignor,
                             args.seed, args.kafka_python, args.timeout_s)
    if args.command == "spark":
        if args.events < 1 or args.members < 1 or args.partitions < 1:
            raise SystemExit("groupclient spark pipeline: --events, --members and --partitions must be positive")
        from .spark.pipeline import pipeline_command

        return pipeline_command(args.events, args.output, args.members, args.partitions, args.master)
    from .demo import run_demo

    return run_demo(args.members, args.partitions, args.records)
