"""The broker's side of a client test played in memory: a connected stream whose bytes the test
reads and writes, the requests the client wrote to it, and the ApiVersions answer a client needs
before anything else.  Shared by the network unit tests and the client fuzz tests."""

from __future__ import annotations

import errno
import struct
from collections import deque
from typing import Any

from kafka.protocol.metadata.api_versions import ApiVersionsResponse

from groupclient.network.connection import CLIENT_MAX_VERSIONS

SIZE = struct.Struct(">i")
REQUEST_HEADER = struct.Struct(">hhi")  # api_key, api_version, correlation_id


class FakeStream:
    """A connected stream; the test plays the broker by reading ``sent`` and filling ``incoming``."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.address = address
        self.sent = bytearray()
        self.incoming: deque[bytes] = deque()  # one recv_into() reads at most one chunk
        self.eof = False
        self.closed = False

    def connect_error(self) -> int:
        return 0

    def handshake(self) -> int:  # no TLS
        return 0

    def send(self, data: bytes | bytearray | memoryview) -> int:
        if self.closed:
            raise OSError(errno.EBADF, "closed")
        self.sent += data
        return len(data)

    def recv_into(self, buffer: memoryview) -> int:
        if self.incoming:
            chunk = self.incoming.popleft()
            if len(chunk) > len(buffer):
                self.incoming.appendleft(chunk[len(buffer):])
                chunk = chunk[:len(buffer)]
            buffer[:len(chunk)] = chunk
            return len(chunk)
        if self.eof:
            return 0
        raise BlockingIOError()

    def close(self) -> None:
        self.closed = True

    def readable(self) -> bool:
        return bool(self.incoming) or self.eof


def take_requests(stream: FakeStream) -> list[tuple[int, int, int]]:
    """(api_key, version, correlation_id) of each whole request the client wrote; consumes them."""
    found = []
    while len(stream.sent) >= 4:
        size = SIZE.unpack_from(stream.sent, 0)[0]
        if len(stream.sent) < 4 + size:
            break
        found.append(REQUEST_HEADER.unpack_from(stream.sent, 4))
        del stream.sent[: 4 + size]
    return found


def api_versions_answer(version: int) -> Any:
    """Every API the client knows, up to the version it knows: it then asks at its own maximum."""
    keys = [ApiVersionsResponse.ApiVersion(api_key=int(k), min_version=0, max_version=v)
            for k, v in sorted(CLIENT_MAX_VERSIONS.items())]
    return ApiVersionsResponse(version=version, error_code=0, api_keys=keys, throttle_time_ms=0)
