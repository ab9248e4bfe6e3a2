"""Kafka request framing: a 4-byte big-endian size, then header and body."""

from __future__ import annotations

import struct
from dataclasses import dataclass

_SIZE = struct.Struct(">i")
_FIXED_HEADER = struct.Struct(">hhi")  # api_key, api_version, correlation_id
SIZE_BYTES = _SIZE.size


class FrameError(Exception):
    """The peer sent something that is not a Kafka frame; the connection must close."""


def frame_size(prefix: bytes, max_bytes: int) -> int:
    size: int = _SIZE.unpack(prefix)[0]
    if size < _FIXED_HEADER.size:
        raise FrameError(f"frame size {size} is smaller than a request header")
    if size > max_bytes:
        raise FrameError(f"frame size {size} exceeds the limit of {max_bytes} bytes")
    return size


@dataclass(frozen=True)
class FixedHeader:
    api_key: int
    api_version: int
    correlation_id: int


def peek_header(payload: bytes) -> FixedHeader:
    """The fields every request header version starts with."""
    if len(payload) < _FIXED_HEADER.size:
        raise FrameError("truncated request header")
    return FixedHeader(*_FIXED_HEADER.unpack_from(payload, 0))


def frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload
