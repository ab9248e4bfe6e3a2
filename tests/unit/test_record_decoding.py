"""The consumer's record decoder gives exactly what kafka-python's kafka.record gives."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from groupclient.consumer.records import decode_records
from groupclient.errors import RequestFailedError, RetriableError
from tests.record_paths import both_record_paths, choose

# every test here runs on both record paths (the compiled one and the Python one)
pytestmark = pytest.mark.usefixtures("both_record_paths")
__all__ = ["both_record_paths"]


def batch(base: int, records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
          compression: int = 0) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=compression, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=2**20)
    for i, (key, value, headers) in enumerate(records):
        b.append(i, 1_700_000_000_000 + i * 7, key, value, headers)
    data = bytearray(b.build())
    data[0:8] = base.to_bytes(8, "big")  # the broker assigns the base offset; the CRC does not cover it
    return bytes(data)


def reference(data: bytes, fetch_offset: int) -> list[tuple[object, ...]]:
    records = MemoryRecords(data)
    out = []
    while (b := records.next_batch()) is not None:
        for r in b:
            if r.offset >= fetch_offset:
                headers = list(r.headers)
                out.append((r.offset, r.timestamp, r.timestamp_type, r.key, r.value, headers,
                            len(r.key) if r.key is not None else -1, len(r.value) if r.value is not None else -1))
    return out


def ours(data: bytes, fetch_offset: int) -> list[tuple[object, ...]]:
    return [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers, r.serialized_key_size,
             r.serialized_value_size)
            for r in decode_records(data, fetch_offset, "t", 3, None, None, True)]


RECORDS = [
    (b"k1", b"v1", []),
    (None, b"no key", [("h", b"x"), ("empty", None)]),
    (b"k3", None, []),
    (b"", b"", [("\u00e9t\u00e9", b"\x00\xff")]),
    (b"k" * 300, b"v" * 70000, []),  # multi-byte varints
]


@pytest.mark.parametrize("compression", [0, 1, 2, 3, 4])  # none, gzip, snappy, lz4, zstd
@pytest.mark.parametrize("fetch_offset", [0, 101, 104, 107, 200])
def test_same_records_as_kafka_record(compression: int, fetch_offset: int) -> None:
    data = batch(100, RECORDS, compression) + batch(105, RECORDS[:3], compression)
    assert ours(data, fetch_offset) == reference(data, fetch_offset)
    assert len(ours(data, 0)) == 8


def test_a_partial_batch_at_the_end_is_left_for_the_next_fetch() -> None:
    data = batch(0, RECORDS[:2]) + batch(2, RECORDS[:2])[:-5]
    assert [r[0] for r in ours(data, 0)] == [0, 1]


def test_crc_mismatch_is_reported() -> None:
    data = bytearray(batch(0, RECORDS[:1]))
    data[-1] ^= 0xFF
    # the error table's CORRUPT_MESSAGE on Fetch: raised to the caller, not retried
    with pytest.raises(RequestFailedError, match="CORRUPT_MESSAGE.*offset 0 of t-3 does not match its CRC") as raised:
        ours(bytes(data), 0)
    assert not isinstance(raised.value, RetriableError)


def test_deserializers_apply_to_keys_and_values_but_not_to_nulls() -> None:
    data = batch(0, [(b"1", b"2", []), (None, None, [])])
    records = list(decode_records(data, 0, "t", 0, lambda k, h: int(k), lambda v, h: v.decode() + "!", True))
    assert [(r.key, r.value) for r in records] == [(1, "2!"), (None, None)]


def recompressed(data: bytes, codec: int, compress: Any) -> bytes:
    """An uncompressed v2 batch with its records section compressed by ``compress`` (as another
    producer would write it), length and CRC fixed up."""
    from kafka.record.util import calc_crc32c

    header, records = bytearray(data[:61]), data[61:]
    body = compress(records)
    header[21:23] = ((int.from_bytes(header[21:23], "big") & ~0x07) | codec).to_bytes(2, "big")
    out = header + body
    out[8:12] = (len(out) - 12).to_bytes(4, "big")
    out[17:21] = calc_crc32c(bytes(out[21:])).to_bytes(4, "big")
    return bytes(out)


def test_frames_other_producers_write_decode_too() -> None:
    """zstd frames without a content size (Java's producer), several lz4 and gzip settings."""
    import gzip as gzip_module

    import lz4.frame
    import zstandard

    plain = batch(7, RECORDS)
    expected = ours(plain, 0)
    no_size = zstandard.ZstdCompressor(write_content_size=False)
    for codec, compress in [
        (4, lambda b: no_size.compress(b)),
        (4, lambda b: zstandard.ZstdCompressor(level=19).compress(b)),
        (3, lambda b: lz4.frame.compress(b, block_linked=False, content_checksum=True)),
        (3, lambda b: lz4.frame.compress(b, store_size=False)),
        (1, lambda b: gzip_module.compress(b, compresslevel=1)),
    ]:
        assert ours(recompressed(plain, codec, compress), 0) == expected


def test_control_batches_hold_no_records() -> None:
    from kafka.record.util import calc_crc32c

    marker = bytearray(batch(1, [(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00", [])]))
    marker[21:23] = (int.from_bytes(marker[21:23], "big") | 0x30).to_bytes(2, "big")  # transactional, control
    marker[17:21] = calc_crc32c(bytes(marker[21:])).to_bytes(4, "big")
    data = batch(0, RECORDS[:1]) + bytes(marker) + batch(2, RECORDS[:1])
    assert [r[0] for r in ours(data, 0)] == [0, 2]
    assert [r.offset for r in reference_records(data)] == [0, 2]  # kafka.record agrees


def reference_records(data: bytes) -> list[Any]:
    records = MemoryRecords(data)
    out = []
    while (b := records.next_batch()) is not None:
        if not b.is_control_batch:
            out.extend(b)
    return out


def test_a_codec_that_is_not_installed_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka.errors as kafka_errors

    from groupclient.consumer import codecs

    choose(monkeypatch, "python")  # the compiled path has its codecs built in
    monkeypatch.setitem(codecs._DECOMPRESS, codecs.LZ4, None)
    with pytest.raises(kafka_errors.UnsupportedCodecError, match="lz4"):
        ours(batch(0, RECORDS, 3), 0)


def test_gzip_decodes_the_same_without_isal(monkeypatch: pytest.MonkeyPatch) -> None:
    """isal's inflate where it is installed, the standard library's zlib where it is not."""
    import zlib

    from groupclient.consumer import codecs

    choose(monkeypatch, "python")  # the compiled path inflates with its own code
    data = batch(3, RECORDS, 1)
    with_isal = ours(data, 0)
    assert codecs._inflate is not zlib.decompress  # the dependency is installed here
    monkeypatch.setattr(codecs, "_inflate", zlib.decompress)
    assert ours(data, 0) == with_isal == reference(data, 0)


def legacy(magic: int, base: int, values: list[tuple[bytes | None, bytes | None]], compression: int = 0) -> bytes:
    """A message set of the old formats (v0, v1), as a broker before Kafka 4 serves it: offsets
    absolute; a compressed wrapper message carries its last inner record's offset."""
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=compression, batch_size=2**20)
    for i, (key, value) in enumerate(values):
        # inner offsets of a v1 wrapper are relative to it; v0's are absolute
        builder.append(i if compression and magic == 1 else base + i, timestamp=1_700_000_000_000 + i if magic else None,
                       key=key, value=value)
    data = bytearray(builder.build())
    if compression:  # the wrapper: the broker writes the last inner offset (inner ones stay relative)
        data[0:8] = (base + len(values) - 1).to_bytes(8, "big")
    return bytes(data)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("compression", [0, 1])
def test_the_old_message_formats_are_decoded_not_skipped(magic: int, compression: int) -> None:
    values = [(b"a", b"1"), (None, b"2"), (b"c", None)]
    data = legacy(magic, 10, values, compression)
    got = [(r[0], r[3], r[4]) for r in ours(data, 0)]
    assert got == [(10 + i, k, v) for i, (k, v) in enumerate(values)]
    assert [r[0] for r in ours(data, 11)] == ([11, 12] if not compression else [11, 12])
    from groupclient.consumer.records import next_offset

    assert next_offset(data, 0) == 13, "the next fetch starts after them"
