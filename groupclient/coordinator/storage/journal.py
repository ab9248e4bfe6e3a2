"""An append-only file of checksummed entries.

Each entry is ``length:u32 | crc32:u32 | payload``.  Loading stops at the first entry that is
short or fails its checksum (a torn tail from a crash) and truncates the file there, so the
next append continues from the last good entry.

:meth:`Journal.rewrite` replaces the whole file atomically (a new file, then ``os.replace``):
a crash leaves either the old journal or the new one, never a mix; a half-written new file
left by a crash is removed on the next open.
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

log = logging.getLogger("groupclient.coordinator.storage")

_HEADER = struct.Struct(">II")
MAX_ENTRY_BYTES = 256 * 1024 * 1024


class Journal:
    def __init__(self, path: Path, fsync: bool = False) -> None:
        self.path = path
        self._fsync = fsync
        path.parent.mkdir(parents=True, exist_ok=True)
        self._rewrite_path = path.with_name(path.name + ".compacting")
        if self._rewrite_path.exists():
            log.warning("%s: removing an unfinished rewrite left by a crash", self._rewrite_path)
            self._rewrite_path.unlink()
        self._entries, good_length = self._scan(path)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        if os.fstat(self._fd).st_size != good_length:
            log.warning("%s: ignoring a torn or corrupt tail after byte %d", path, good_length)
            os.ftruncate(self._fd, good_length)
        self.size_bytes = good_length

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
        os.write(self._fd, entry)
        self.size_bytes += len(entry)
        if self._fsync:
            os.fsync(self._fd)

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
        os.close(self._fd)
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
        self.size_bytes = size

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _frame(payload: bytes) -> bytes:
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def _fsync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
