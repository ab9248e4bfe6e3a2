"""Shared by the peer scripts: JSON-line reporting and a stop flag set by SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from typing import Any

stop = threading.Event()


def report(event: str, **fields: Any) -> None:
    """One JSON line.  ``t`` is CLOCK_MONOTONIC in seconds (time.monotonic(); the Java peer's
    System.nanoTime() reads the same clock), so events of different peers can be ordered."""
    fields.setdefault("t", time.monotonic())
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


def install_stop_handlers() -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())


def peer_arguments(default_client_id: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--strategy", default="range")
    parser.add_argument("--instance-id", default=None)
    parser.add_argument("--client-id", default=default_client_id)
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--protocol", default="classic", choices=["classic", "consumer"])
    return parser.parse_args()
