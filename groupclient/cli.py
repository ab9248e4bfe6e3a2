"""The ``groupclient`` command: ``coordinator`` runs the server, ``demo`` runs the main job,
``groups`` lists, describes and watches consumer groups on any Kafka-protocol broker (see
docs/cli.md), ``assignors bench`` compares partition assignors (see docs/assignors.md)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from .consumer import record_path
from .version import __version__
from .cli_args import add_logging_options, non_negative_int, port, positive_float, positive_int, topic


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    add_logging_options(common, quiet=True)
    server = argparse.ArgumentParser(add_help=False)
    add_logging_options(server, quiet=False)
    parser = argparse.ArgumentParser(prog="groupclient", description="Kafka's consumer groups (the classic "
                                     "and the consumer group protocol) in pure Python: a group consumer, an "
                                     "embedded coordinator, group tools.")
    parser.add_argument("--version", action="version", version=f"groupclient {__version__}, {record_path.describe()}",
                        help="print the version and which record path decodes (compiled or Python), and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     help="run `groupclient COMMAND --help` for its options")

    coord = commands.add_parser("coordinator", parents=[server], help="run the Kafka-wire group coordinator")
    coord.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    coord.add_argument("--port", type=port, default=9092,
                       help="port of node 0; node i listens on port+i (0 = ephemeral ports; default 9092)")
    coord.add_argument("--nodes", type=positive_int, default=1, help="number of nodes in this process (default 1)")
    coord.add_argument("--data-dir", type=Path, default=None,
                       help="keep topics, groups and offsets here across restarts (default: in memory only)")
    coord.add_argument("--initial-rebalance-delay-ms", type=non_negative_int, default=3000, metavar="MS",
                       help="group.initial.rebalance.delay.ms (default 3000)")
    coord.add_argument("--offsets-partitions", type=positive_int, default=50, metavar="N",
                       help="offsets.topic.num.partitions (default 50)")
    coord.add_argument("--topic", action="append", type=topic, default=[], metavar="NAME[:PARTITIONS]",
                       help="create this topic at start if missing (repeatable; 1 partition by default)")
    kip848 = coord.add_argument_group("the consumer group protocol (KIP-848), as Kafka's group.consumer.* settings")
    kip848.add_argument("--rebalance-protocols", default="classic,consumer", metavar="LIST",
                        help="group.coordinator.rebalance.protocols: classic, or classic,consumer (the default)")
    for name, default in (("heartbeat-interval-ms", 5000), ("min-heartbeat-interval-ms", 5000),
                          ("max-heartbeat-interval-ms", 15000), ("session-timeout-ms", 45000),
                          ("min-session-timeout-ms", 45000), ("max-session-timeout-ms", 60000)):
        kip848.add_argument(f"--consumer-{name}", type=positive_int, default=default, metavar="MS",
                            help=f"group.consumer.{name.replace('-', '.')} (default {default})")
    kip848.add_argument("--consumer-assignors", default=None, metavar="LIST",
                        help="group.consumer.assignors: the first is the default (default: all the coordinator has)")
    kip848.add_argument("--consumer-max-size", type=positive_int, default=2**31 - 1, metavar="N",
                        help="group.consumer.max.size (default 2147483647)")
    security = coord.add_argument_group("security (every listener)")
    security.add_argument("--security-protocol", choices=["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"],
                          default="PLAINTEXT", help="what clients must use (default PLAINTEXT)")
    security.add_argument("--ssl-certfile", default=None, metavar="PEM",
                          help="the server's certificate chain (and its key, unless --ssl-keyfile)")
    security.add_argument("--ssl-keyfile", default=None, metavar="PEM", help="the server's private key")
    security.add_argument("--ssl-cafile", default=None, metavar="PEM", help="CA certificates for client certificates")
    security.add_argument("--ssl-client-auth", choices=["none", "requested", "required"], default="none",
                          help="ssl.client.auth (default none)")
    security.add_argument("--sasl-mechanisms", default="PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", metavar="LIST",
                          help="enabled SASL mechanisms (default PLAIN,SCRAM-SHA-256,SCRAM-SHA-512)")
    security.add_argument("--sasl-users-file", type=Path, default=None, metavar="FILE",
                          help="SASL users, one NAME=PASSWORD a line (# comments); passwords are never taken "
                               "on the command line, and are kept only as salted SCRAM credentials")

    demo = commands.add_parser("demo", parents=[common], help="run a consumer group on an embedded coordinator")
    demo.add_argument("--members", type=positive_int, default=3, help="consumers in the group (default 3)")
    demo.add_argument("--partitions", type=positive_int, default=6, help="partitions of the topic (default 6)")
    demo.add_argument("--records", type=positive_int, default=600, help="records to produce and consume (default 600)")

    from .admin.cli_groups import add_parser as add_groups_parser

    add_groups_parser(commands)

    lab = commands.add_parser("assignors", help="partition assignor tools")
    bench = lab.add_subparsers(dest="assignors_command", required=True, metavar="bench").add_parser(
        "bench", parents=[common], help="time, memory, balance and stickiness of assignors on a generated group")
    bench.add_argument("--members", type=positive_int, required=True, help="members in the generated group")
    bench.add_argument("--partitions", type=positive_int, required=True, help="partitions in all, over all topics")
    bench.add_argument("--topics", type=positive_int, default=None, help="topics (default: partitions/2000, at least 5)")
    bench.add_argument("--subscriptions", choices=["uniform", "random"], default="uniform",
                       help="every member subscribes to every topic (uniform, the default) or to a random subset")
    bench.add_argument("--assignor", action="append", default=[], metavar="NAME|module:Class",
                       help="repeatable (default: range, roundrobin, sticky, cooperative-sticky)")
    bench.add_argument("--seed", type=int, default=0, help="seed of the generated subscriptions (default 0)")
    bench.add_argument("--no-kafka-python", dest="kafka_python", action="store_false",
                       help="skip kafka-python's assignors")
    bench.add_argument("--timeout-s", type=positive_float, default=120.0,
                       help="cap per kafka-python assign() call, in seconds (default 120)")
    spark = commands.add_parser("spark", help="PySpark integration (needs groupclient[spark])")
    pipeline = spark.add_subparsers(dest="spark_command", required=True, metavar="pipeline").add_parser(
        "pipeline", parents=[common], help="events -> embedded coordinator -> Spark group members -> Parquet, checked")
    pipeline.add_argument("--events", type=positive_int, default=100_000, help="events to produce (default 100000)")
    pipeline.add_argument("--output", default="pipeline-out",
                          help="directory for the Parquet output and staging (default pipeline-out)")
    pipeline.add_argument("--members", type=positive_int, default=2, help="executor tasks in the consumer group (default 2)")
    pipeline.add_argument("--partitions", type=positive_int, default=6, help="partitions of the events topic (default 6)")
    pipeline.add_argument("--master", default="local[2]", help="Spark master URL (default local[2])")
    return parser


def _names(text: str) -> tuple[str, ...]:
    """A comma-separated list, as Kafka's list settings are written."""
    return tuple(name.strip() for name in text.split(",") if name.strip())


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        code = _run(parser, args)
        sys.stdout.flush()  # here, not at exit: a closed pipe is then caught below
        return code
    except BrokenPipeError:
        # whoever reads the output went away (``| head``): nothing more to say, and no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command == "coordinator":
        from .coordinator.config import CoordinatorConfig
        from .coordinator.serve import run

        if args.port and args.port + args.nodes - 1 > 65535:
            parser.error(f"argument --port: ports {args.port}..{args.port + args.nodes - 1} go past 65535")
        from .coordinator.security import ListenerSecurity, read_users_file

        try:
            users = read_users_file(args.sasl_users_file) if args.sasl_users_file else {}
            listener = ListenerSecurity(args.security_protocol, ssl_certfile=args.ssl_certfile,
                                        ssl_keyfile=args.ssl_keyfile, ssl_cafile=args.ssl_cafile,
                                        ssl_client_auth=args.ssl_client_auth,
                                        sasl_mechanisms=tuple(m for m in args.sasl_mechanisms.split(",") if m),
                                        users=users)
        except (OSError, ValueError) as exc:
            parser.error(f"security: {exc}")
        try:
            config = CoordinatorConfig(
                group_initial_rebalance_delay_ms=args.initial_rebalance_delay_ms,
                offsets_topic_partitions=args.offsets_partitions, security=listener,
                group_coordinator_rebalance_protocols=_names(args.rebalance_protocols),
                group_consumer_heartbeat_interval_ms=args.consumer_heartbeat_interval_ms,
                group_consumer_min_heartbeat_interval_ms=args.consumer_min_heartbeat_interval_ms,
                group_consumer_max_heartbeat_interval_ms=args.consumer_max_heartbeat_interval_ms,
                group_consumer_session_timeout_ms=args.consumer_session_timeout_ms,
                group_consumer_min_session_timeout_ms=args.consumer_min_session_timeout_ms,
                group_consumer_max_session_timeout_ms=args.consumer_max_session_timeout_ms,
                group_consumer_assignors=CoordinatorConfig.group_consumer_assignors if args.consumer_assignors is None
                else _names(args.consumer_assignors),
                group_consumer_max_size=args.consumer_max_size)
        except ValueError as exc:
            parser.error(str(exc))
        ports = [0 if args.port == 0 else args.port + i for i in range(args.nodes)]
        return run(config, args.host, ports, args.data_dir, args.topic)
    if args.command == "groups":
        from .admin.cli_groups import run as run_groups

        return run_groups(args)
    if args.command == "assignors":
        from .assignor_lab import bench_command

        return bench_command(args.members, args.partitions, args.topics, args.subscriptions, args.assignor,
                             args.seed, args.kafka_python, args.timeout_s)
    if args.command == "spark":
        from .spark.pipeline import pipeline_command

        return pipeline_command(args.events, args.output, args.members, args.partitions, args.master)
    from .demo import run_demo

    return run_demo(args.members, args.partitions, args.records)

