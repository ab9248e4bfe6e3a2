"""An append-only file of checksummed entries.

Each entry is ``length:u32 | crc32:u32 | payload``.  Loading stops at the first entry that is
short or fails its checksum (a torn tail from a crash) and truncates the file there, so the
next append continues from the last good entry.

:meth:`Journal.rewrite` replaces the whole file atomically (a new file, then ``os.replace``):
a crash leaves either the old journal or the new one, never a mix; a half-written new file
left by a crash is removed on the next open.

A journal holds no file descriptor until it is appended to, and an :class:`OpenFiles` budget
shared by many journals (one per topic partition) closes the least recently used one's when
another needs a descriptor: the number of partitions never decides how many descriptors the
server holds, so it can always accept connections.
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from pathlib import Path

log = logging.getLogger("groupclient.coordinator.storage")

_HEADER = struct.Struct(">II")
MAX_ENTRY_BYTES = 256 * 1024 * 1024


class OpenFiles:
    """At most ``limit`` journals hold a file descriptor at once; opening one more closes the
    least recently used.  Single-threaded, like the coordinator's event loop that owns it."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("the open-file budget must be at least 1")
        self.limit = limit
        self._open: OrderedDict[Journal, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._open)

    def used(self, journal: Journal) -> None:
        self._open[journal] = None
        self._open.move_to_end(journal)
        while len(self._open) > self.limit:
            oldest, _ = self._open.popitem(last=False)
            oldest.release_fd()

    def forget(self, journal: Journal) -> None:
        self._open.pop(journal, None)


class Journal:
    def __init__(self, path: Path, fsync: bool = False, open_files: OpenFiles | None = None) -> None:
        self.path = path
        self._fsync = fsync
        self._open_files = open_files
        self._fd = -1  # opened by the first append (see OpenFiles)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._rewrite_path = path.with_name(path.name + ".compacting")
        if self._rewrite_path.exists():
            log.warning("%s: removing an unfinished rewrite left by a crash", self._rewrite_path)
            self._rewrite_path.unlink()
        self._entries, good_length = self._scan(path)
        if path.exists() and path.stat().st_size != good_length:
            log.warning("%s: ignoring a torn or corrupt tail after byte %d", path, good_length)
            os.truncate(path, good_length)
        self.size_bytes = good_length

    def _descriptor(self) -> int:
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        if self._open_files is not None:
            self._open_files.used(self)  # may close another journal's descriptor, never this one's
        return self._fd

    def release_fd(self) -> None:
        """Close the descriptor until the next append needs it (an append is one write, so
        nothing is lost; the file stays as it is)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    @staticmethod
    def _scan(path: Path) -> tuple[list[bytes], int]:
        if not path.exists():
            return [], 0
        data = path.read_bytes()
        entries: list[bytes] = []
        pos = 0
        while pos + _HEADER.size <= len(data):
            length, crc = _HEADER.unpack_from(data, pos)
            end = pos + _HEADER.size + length
            if length > MAX_ENTRY_BYTES or end > len(data):
                break
            payload = data[pos + _HEADER.size : end]
            if zlib.crc32(payload) != crc:
                break
            entries.append(payload)
            pos = end
        return entries, pos

    def replay(self) -> Iterator[bytes]:
        """Entries found on open, oldest first (read once, then released)."""
        entries, self._entries = self._entries, []
        yield from entries

    def append(self, payload: bytes) -> None:
        entry = _frame(payload)
        fd = self._descriptor()
        written = os.write(fd, entry)
        if written != len(entry):  # a full disk: cut the partial entry off, so the file stays whole
            os.ftruncate(fd, self.size_bytes)
            raise OSError(f"{self.path}: wrote {written} of {len(entry)} bytes")
        self.size_bytes += len(entry)
        if self._fsync:
            os.fsync(fd)

    def rewrite(self, payloads: Iterable[bytes]) -> None:
        """Replace the journal's entries with ``payloads``, atomically."""
        size = 0
        try:
            with open(self._rewrite_path, "wb") as f:
                for payload in payloads:
                    size += f.write(_frame(payload))
                f.flush()
                if self._fsync:
                    os.fsync(f.fileno())
            os.replace(self._rewrite_path, self.path)
        except BaseException:
            self._rewrite_path.unlink(missing_ok=True)
            raise
        if self._fsync:
            _fsync_directory(self.path.parent)  # make the rename itself durable
        self.release_fd()  # the next append opens the new file
        self.size_bytes = size

    def close(self) -> None:
        self.release_fd()
        if self._open_files is not None:
            self._open_files.forget(self)


def _frame(payload: bytes) -> bytes:
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def _fsync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
