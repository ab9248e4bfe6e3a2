"""An append-only file of checksummed entries.

Each entry is ``length:u32 | crc32:u32 | payload``.  Loading stops at the first entry that is
short or fails its checksum (a torn tail from a crash) and truncates the file there, so the
next append continues from the last good entry.
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger("groupclient.coordinator.storage")

_HEADER = struct.Struct(">II")
MAX_ENTRY_BYTES = 256 * 1024 * 1024


class Journal:
    def __init__(self, path: Path, fsync: bool = False) -> None:
        self.path = path
        self._fsync = fsync
        path.parent.mkdir(parents=True, exist_ok=True)
        self._entries, good_length = self._scan(path)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        if os.fstat(self._fd).st_size != good_length:
            log.warning("%s: ignoring a torn or corrupt tail after byte %d", path, good_length)
            os.ftruncate(self._fd, good_length)

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
        os.write(self._fd, _HEADER.pack(len(payload), zlib.crc32(payload)) + payload)
        if self._fsync:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
