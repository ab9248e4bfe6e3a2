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


def _load_lz4() -> Callable[[bytes], bytes] | None:
    try:
        import lz4.frame
    except ImportError:
        return None
    decompress: Callable[[bytes], bytes] = lz4.frame.decompress
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
    # Kafka's Java producer writes xerial-framed snappy; kafka-python's decoder reads both forms
    decode: Callable[[Any], bytes] = codec.snappy_decode
    return decode


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
