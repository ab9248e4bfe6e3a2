"""``groupclient groups list|describe|watch``: consumer groups on any Kafka-protocol broker.

Exit codes: 0 done; 1 the group is not there, or a broker answered with an error; 2 bad
arguments, or no broker answered within ``--timeout-ms``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from typing import Any

from ..cli_args import add_logging_options, bootstrap_servers, positive_float, positive_int
from ..errors import GroupClientError
from .client import AdminConnection, AdminError, GroupNotFoundError
from .groups import GroupAdmin
from .model import GroupDescription
from .render import GroupWatch, render_description, render_kafka, render_list, render_time_lag

PROG = "groupclient groups"


def add_parser(commands: Any) -> None:
    """Add ``groups`` and its subcommands to the top-level subparsers."""
    conn = argparse.ArgumentParser(add_help=False)
    conn.add_argument("--bootstrap-servers", type=bootstrap_servers, default="localhost:9092",
                      metavar="HOST:PORT[,...]", help="brokers to start from (default localhost:9092)")
    conn.add_argument("--timeout-ms", type=positive_int, default=10000, metavar="MS",
                      help="give up (exit 2) when no answer came within this time (default 10000)")
    add_logging_options(conn, quiet=True)
    groups = commands.add_parser(
        "groups", help="list, describe and watch consumer groups on any Kafka-protocol broker",
        description="Consumer groups on any Kafka-protocol broker (Apache Kafka, groupclient coordinator...). "
                    "Exit codes: 0 done, 1 group not found or a broker error, 2 bad arguments or unreachable.")
    sub = groups.add_subparsers(dest="groups_command", required=True, metavar="{list,describe,watch}")
    listing = sub.add_parser("list", parents=[conn], help="the groups of every broker, with their state",
                             description="ListGroups on every broker in the cluster's metadata, merged.")
    listing.add_argument("--json", action="store_true", help="print a JSON array instead of a table")
    describe = sub.add_parser(
        "describe", parents=[conn], help="a group's state, members, assignments, committed offsets and lag",
        description="FindCoordinator, DescribeGroups (ConsumerGroupDescribe for a consumer-protocol group: "
                    "its epochs and each member's current and target assignment) and OffsetFetch for the group, "
                    "and ListOffsets (latest) for its partitions: lag = log end offset - committed offset.")
    describe.add_argument("group", help="the group id")
    describe.add_argument("--format", choices=["table", "json", "kafka"], default="table",
                          help="tables (default), a JSON object, or kafka-consumer-groups.sh --describe's columns "
                               "(GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID)")
    describe.add_argument("--json", dest="format", action="store_const", const="json",
                          help="the same as --format json")
    _add_lag_seconds(describe, " (not with --format kafka, whose columns are kafka-consumer-groups.sh's)")
    describe.set_defaults(usage_error=describe.error)  # for --lag-seconds with --format kafka
    watch = sub.add_parser(
        "watch", parents=[conn], help="print a line whenever the group's state, members or assignments change",
        description="Describe the group every --interval-ms and print what changed (rebalances, members "
                    "joining and leaving, new assignments; a consumer-protocol group's epochs and members "
                    "reconciling) until Ctrl-C, --count or --duration-s.")
    watch.add_argument("group", help="the group id")
    watch.add_argument("--interval-ms", type=positive_int, default=1000, metavar="MS",
                       help="time between two looks at the group (default 1000)")
    watch.add_argument("--count", type=positive_int, default=None, metavar="N",
                       help="stop after N changes (the first look is not a change; default: no limit)")
    watch.add_argument("--duration-s", type=positive_float, default=None, metavar="S",
                       help="stop after S seconds (default: until Ctrl-C)")
    _add_lag_seconds(watch, " at each look, and prints a line at each look")


def _add_lag_seconds(command: argparse.ArgumentParser, where: str) -> None:
    command.add_argument("--lag-seconds", action="store_true",
                         help="also each partition's lag in time, and the group's largest: now - the timestamp of "
                              "the last record the group consumed (0 when it consumed everything); costs a Fetch "
                              f"per broker{where}")


def run(args: argparse.Namespace) -> int:
    command = args.groups_command
    if command == "describe" and args.lag_seconds and args.format == "kafka":
        args.usage_error("argument --lag-seconds: not allowed with --format kafka")  # exits 2
    try:
        with AdminConnection(args.bootstrap_servers, args.timeout_ms) as conn:
            admin = GroupAdmin(conn)
            if command == "list":
                return _list(admin, args.json)
            if command == "describe":
                return _describe(admin, args.group, args.format, args.lag_seconds)
            return _watch(admin, args.group, args.interval_ms, args.count, args.duration_s, args.lag_seconds)
    except AdminError as exc:
        print(f"{PROG} {command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except GroupClientError as exc:  # not expected here: still one line, not a traceback
        print(f"{PROG} {command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0 if command == "watch" else 130


def _list(admin: GroupAdmin, as_json: bool) -> int:
    groups, errors = admin.list_groups(admin.conn.timer())
    print(json.dumps([g.to_json() for g in groups], indent=2) if as_json else render_list(groups))
    for error in errors:
        print(f"{PROG} list: {error}", file=sys.stderr)
    return 1 if errors else 0


def _describe(admin: GroupAdmin, group_id: str, output: str, lag_seconds: bool = False) -> int:
    description = admin.describe_group(group_id, admin.conn.timer(), time_lag=lag_seconds)
    if output == "json":
        print(json.dumps(description.to_json(), indent=2))
    elif output == "kafka":
        print(render_kafka(description))
    else:
        print(render_description(description))
    return 0


def _stamp() -> str:
    return datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3]


def _watch(admin: GroupAdmin, group_id: str, interval_ms: int, count: int | None,
           duration_s: float | None, lag_seconds: bool = False) -> int:
    conn = admin.conn
    clock = conn.clock
    deadline = None if duration_s is None else clock.monotonic_ms() + int(duration_s * 1000)
    watch = GroupWatch(group_id)
    changes = 0
    last_error: str | None = None
    while True:
        remaining = None if deadline is None else max(deadline - clock.monotonic_ms(), 1)
        timer = conn.timer(conn.timeout_ms if remaining is None else min(conn.timeout_ms, remaining))
        description: GroupDescription | None = None
        error: str | None = None
        try:
            description = admin.describe_group(group_id, timer, offsets=False, time_lag=lag_seconds)
        except GroupNotFoundError:
            pass  # shown as "not found", and watched until it appears
        except AdminError as exc:
            if deadline is not None and clock.monotonic_ms() >= deadline:
                return 0  # cut short by --duration-s, not an error
            if not watch.seen:
                raise  # nothing seen yet: unreachable, or refused
            error = str(exc)
        if error is not None:
            if error != last_error:  # a lasting error is printed once
                print(f"{_stamp()} {group_id}: error: {error}", flush=True)
        else:
            first = not watch.seen
            lines = watch.update(description)
            for line in lines:
                print(f"{_stamp()} {group_id}: {line}", flush=True)
            if lines and not first:
                changes += 1
            if lag_seconds and description is not None:  # each look, not a change
                print(f"{_stamp()} {group_id}: {render_time_lag(description)}", flush=True)
        last_error = error
        now = clock.monotonic_ms()
        if count is not None and changes >= count:
            return 0
        if deadline is not None and now >= deadline:
            return 0
        conn.pause(interval_ms if deadline is None else min(interval_ms, deadline - now))
