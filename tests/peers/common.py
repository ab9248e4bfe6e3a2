"""Shared by the peer scripts: JSON-line reporting and a stop flag set by SIGTERM/SIGINT."""

from __future__ import annotations

import json
import signal
import sys
import threading
from typing import Any

stop = threading.Event()


def report(event: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


def install_stop_handlers() -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
