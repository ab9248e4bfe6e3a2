"""An inter-process lock on a file, for what the suite writes once and shares: the Kafka jars and the
compiled Java peers under ~/.cache/groupclient, the dependency floors' environment.  The suite runs
in several pytest-xdist workers (pyproject.toml's addopts), and a second worker must wait for the
first one's download or build, not read it half written."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: the suite runs on Linux and macOS (CI, the developers' machines)
    fcntl = None  # type: ignore[assignment]


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) while the block runs; the lock is
    the kernel's, so it goes with the process that held it, however it ended."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
