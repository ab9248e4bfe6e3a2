"""Decompressing a v2 record batch's records section: gzip, snappy, lz4, zstd.

The codec packages (``lz4``, ``zstandard``, ``python-snappy``, and ``isal`` for gzip) are
groupclient dependencies, so compressed topics work after a plain install; gzip falls back to the
standard library's zlib where isal has no wheel.  A batch decompresses once, into one ``bytes``,
which the record decoder then slices (records.py).
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable
from typing import Any

from ..errors import UnsupportedCodecError

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
NAMES = {GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}


def _load_gzip() -> Callable[[bytes, int], bytes]:
    try:
        from isal import isal_zlib  # ISA-L's inflate: the same output, ~3x zlib's speed
    except ImportError:
        return zlib.decompress
    decompress: Callable[[bytes, int], bytes] = isal_zlib.decompress
    return decompress


_inflate = _load_gzip()


def _gzip(data: bytes) -> bytes:
    # 16 + MAX_WBITS: a gzip member, as Kafka's producers write (faster than gzip.GzipFile)
    return _inflate(data, 16 + zlib.MAX_WBITS)


# The most output a byte of input can give: lz4's matches extend by 255 bytes a byte; snappy's
# largest copy is 64 bytes for 3.  A frame that declares more cannot be what it says, and the
# decompressors would allocate what it declares first (a damaged header asked for gigabytes).
LZ4_MOST_PER_BYTE, SNAPPY_MOST_PER_BYTE = 256, 22
_LZ4_MAGIC = b"\x04\x22\x4d\x18"


def lz4_declared_size(data: bytes) -> int:
    """The content size an lz4 frame's header declares, or -1 when it declares none."""
    if len(data) >= 14 and data[:4] == _LZ4_MAGIC and data[4] & 0x08:
        return int.from_bytes(data[6:14], "little")
    return -1


def _load_lz4() -> Callable[[bytes], bytes] | None:
    try:
        import lz4.frame
    except ImportError:
        return None
    frame_decompress: Callable[[bytes], bytes] = lz4.frame.decompress

    def decompress(data: bytes) -> bytes:
        declared = lz4_declared_size(data)
        if declared > LZ4_MOST_PER_BYTE * len(data):
            raise ValueError(f"an lz4 frame of {len(data)} bytes declares {declared} bytes of content")
        return frame_decompress(data)
    return decompress


def _load_zstd() -> Callable[[bytes], bytes] | None:
    try:
        import zstandard
    except ImportError:
        return None
    decompressor = zstandard.ZstdDecompressor()

    def decompress(data: bytes) -> bytes:
        # Kafka's producers write frames without the content size, and may write several
        with decompressor.stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
            out: bytes = reader.read()
        return out
    return decompress


def _load_snappy() -> Callable[[bytes], bytes] | None:
    from kafka import codec

    if not codec.has_snappy():
        return None
    import snappy

    # Kafka's Java producer writes xerial-framed snappy; kafka-python's decoder reads both forms
    # (each raw block through snappy.decompress, checked here first)
    raw_decompress: Callable[[bytes], bytes] = snappy.decompress
    decode: Callable[[Any], bytes] = codec.snappy_decode

    def checked(block: bytes) -> bytes:
        declared = _snappy_declared_size(block)
        if declared > SNAPPY_MOST_PER_BYTE * len(block) + 32:
            raise ValueError(f"a snappy block of {len(block)} bytes declares {declared} bytes of content")
        return raw_decompress(block)

    def decompress(data: bytes) -> bytes:
        if codec._detect_xerial_stream(data):
            return decode_xerial(data, checked)
        return checked(data)
    return decompress


def decode_xerial(data: bytes, raw: Callable[[bytes], bytes]) -> bytes:
    """xerial's framing (kafka.codec.snappy_decode's): a 16-byte header, then blocks of a 4-byte
    big-endian length and a raw snappy block."""
    out, cursor, end = [], 16, len(data)
    while cursor < end:
        if cursor + 4 > end or (size := int.from_bytes(data[cursor:cursor + 4], "big", signed=True)) < 0:
            raise ValueError(f"a xerial snappy block length at byte {cursor} is cut short or negative")
        cursor += 4
        out.append(raw(data[cursor:cursor + size]))
        cursor += size
    return b"".join(out)


def _snappy_declared_size(block: bytes) -> int:
    """The uncompressed length a raw snappy block begins with (a varint), or -1 if unreadable."""
    value, shift = 0, 0
    for byte in block[:5]:
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value
        shift += 7
    return -1


_DECOMPRESS: dict[int, Callable[[bytes], bytes] | None] = {GZIP: _gzip}
_LOADERS = {SNAPPY: _load_snappy, LZ4: _load_lz4, ZSTD: _load_zstd}


def decompress(codec: int, data: bytes) -> bytes:
    fn = _DECOMPRESS.get(codec)
    if fn is None and codec not in _DECOMPRESS:
        loader = _LOADERS.get(codec)
        fn = _DECOMPRESS[codec] = loader() if loader is not None else None
    if fn is None:
        name = NAMES.get(codec, f"codec {codec}")
        raise UnsupportedCodecError(
            f"a record batch is compressed with {name}, and its package is not installed "
            f"(pip install lz4 zstandard python-snappy; they are groupclient dependencies)")
    return fn(data)


def available() -> dict[str, bool]:
    """Which codecs this installation can read (docs, benchmarks)."""
    result = {}
    for codec, name in NAMES.items():
        try:
            decompress(codec, b"")
            result[name] = True
        except UnsupportedCodecError:
            result[name] = False
        except Exception:
            result[name] = True  # loaded; an empty input is just not a valid frame
    return result
