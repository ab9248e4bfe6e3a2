"""argparse ``type=`` validators: a bad value makes argparse print the usage and
``error: argument --x: ...`` and exit 2, instead of a traceback later."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable

from .network.client import parse_bootstrap


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {value!r}") from None


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An integer that is ``minimum`` or more."""
    def parse(value: str) -> int:
        number = _int(value)
        if number < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {number}")
        return number
    parse.__name__ = f"integer >= {minimum}"
    return parse


positive_int = int_at_least(1)
non_negative_int = int_at_least(0)


def port(value: str) -> int:
    number = _int(value)
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0..65535, got {number}")
    return number


def positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if not number > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be more than 0, got {value}")
    return number


def topic(spec: str) -> tuple[str, int]:
    """``NAME`` or ``NAME:PARTITIONS`` (1 partition by default)."""
    name, _, partitions = spec.partition(":")
    try:
        count = int(partitions or "1")
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME or NAME:PARTITIONS, got {spec!r}") from None
    if not name:
        raise argparse.ArgumentTypeError(f"expected NAME or NAME:PARTITIONS, got {spec!r}: the name is empty")
    if count < 1:
        raise argparse.ArgumentTypeError(f"expected NAME or NAME:PARTITIONS with at least 1 partition, got {spec!r}")
    return name, count


def log_level(value: str) -> str:
    level = value.upper()
    if not isinstance(logging.getLevelName(level), int):
        raise argparse.ArgumentTypeError(f"expected DEBUG, INFO, WARNING, ERROR or CRITICAL, got {value!r}")
    return level


def bootstrap_servers(value: str) -> str:
    """``HOST:PORT[,HOST:PORT...]``, checked here, passed on as given."""
    try:
        servers = parse_bootstrap(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    for host, number in servers:
        if not 0 < number <= 65535:
            raise argparse.ArgumentTypeError(f"bad port {number} for {host}: a port is 1..65535")
    return value


def add_logging_options(parser: argparse.ArgumentParser, quiet: bool) -> None:
    """``--log-level LEVEL`` and ``-v/--verbose`` (INFO).  A tool is quiet by default (WARNING:
    only its own output and what went wrong); a server (``quiet=False``) logs at INFO."""
    default = "WARNING" if quiet else "INFO"
    parser.add_argument("--log-level", type=log_level, default=default, metavar="LEVEL",
                        help=f"logging level of the log on stderr (default {default})")
    if quiet:
        parser.add_argument("-v", "--verbose", dest="log_level", action="store_const", const="INFO",
                            help="log at INFO on stderr (the same as --log-level INFO)")
