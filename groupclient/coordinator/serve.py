"""Running the coordinator in the foreground until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path

from ..clock import SystemClock
from .config import CoordinatorConfig
from .core import ClusterCore

log = logging.getLogger("groupclient.coordinator")


async def serve(config: CoordinatorConfig, host: str, ports: list[int], data_dir: Path | None,
                topics: list[tuple[str, int]]) -> None:
    core = ClusterCore(config, SystemClock(), data_dir, [(host, p) for p in ports])
    stop = asyncio.Event()
    received: list[str] = []
    loop = asyncio.get_running_loop()

    def on_signal(sig: signal.Signals) -> None:
        received.append(sig.name)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    await core.start()
    try:
        for name, partitions in topics:
            if name not in core.topics.topics:
                core.topics.create(name, partitions)
        bootstrap = ",".join(f"{n.host}:{n.port}" for n in core.nodes.values())
        # one machine-readable line, so scripts and tests can find the ports
        print(f"bootstrap_servers={bootstrap}", flush=True)
        await stop.wait()
    finally:
        await core.stop(received[0] if received else "stopped")


def run(config: CoordinatorConfig, host: str, ports: list[int], data_dir: Path | None,
        topics: list[tuple[str, int]]) -> int:
    try:
        asyncio.run(serve(config, host, ports, data_dir, topics))
    except OSError as exc:
        print(f"groupclient coordinator: {exc}", file=sys.stderr)
        return 1
    return 0
