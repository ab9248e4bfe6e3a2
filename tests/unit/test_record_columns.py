"""Records decoded as columns (groupclient.consumer.columns) are the records the record decoder
gives, from the same bytes; and their Arrow batch is the one built from the records."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupclient.consumer.columns import RecordColumns, decode_columns
from groupclient.consumer.records import decode_records
from groupclient.errors import RequestFailedError
from tests.record_paths import both_record_paths
from tests.unit.test_record_decoding import RECORDS, batch, legacy

# the columns are checked against the records of each record path
pytestmark = pytest.mark.usefixtures("both_record_paths")
__all__ = ["both_record_paths"]

HEADER = tuple[str, "bytes | None"]


def rows(columns: RecordColumns) -> list[tuple[object, ...]]:
    """(offset, timestamp, key, value, headers) of every record in ``columns``."""
    out = []
    for i in range(len(columns)):
        fields = []
        for at, length in ((columns.key_at, columns.key_length), (columns.value_at, columns.value_length)):
            fields.append(None if length[i] < 0 else columns.buffer[at[i]:at[i] + length[i]])
        headers = columns.headers[i] if columns.headers is not None else []
        out.append((columns.offsets[i], columns.timestamps[i], *fields, headers))
    return out


def expected(data: bytes, fetch_offset: int) -> list[tuple[object, ...]]:
    return [(r.offset, -1 if r.timestamp is None else r.timestamp, r.key, r.value, r.headers)
            for r in decode_records(data, fetch_offset, "t", 3, None, None, True)]


@pytest.mark.parametrize("compression", [0, 1, 2, 3, 4])  # none, gzip, snappy, lz4, zstd
@pytest.mark.parametrize("fetch_offset", [0, 101, 104, 107, 200])
def test_the_same_records_as_the_record_decoder(compression: int, fetch_offset: int) -> None:
    data = batch(100, RECORDS, compression) + batch(105, RECORDS[:3], 0) + batch(108, RECORDS[:2], compression)
    columns, error = decode_columns(data, fetch_offset, "t", 3, True)
    assert error is None
    assert rows(columns) == expected(data, fetch_offset)
    assert (columns.topic, columns.partition) == ("t", 3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.none() | st.binary(max_size=200), st.none() | st.binary(max_size=300),
                                   st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)),
                                            max_size=2)),
                         min_size=1, max_size=20), min_size=1, max_size=4),
       st.sampled_from([0, 3]), st.integers(0, 60))
def test_any_records_decode_the_same_either_way(batches: list[list[Any]], compression: int, fetch_offset: int) -> None:
    data, base = b"", 0
    for records in batches:
        data += batch(base, records, compression)
        base += len(records)
    columns, error = decode_columns(data, fetch_offset, "t", 3, True)
    assert error is None and rows(columns) == expected(data, fetch_offset)
    if len(columns):
        assert columns.last_offset == base - 1 and columns.part(0, 1).last_offset == columns.offsets[0]


def test_a_corrupt_batch_ends_the_columns_and_is_handed_back() -> None:
    good = batch(0, RECORDS[:2])
    bad = bytearray(batch(2, RECORDS[:1]))
    bad[-1] ^= 0xFF
    columns, error = decode_columns(good + bytes(bad), 0, "t", 3, True)
    assert [r[0] for r in rows(columns)] == [0, 1], "the records before it"
    assert isinstance(error, RequestFailedError) and "CORRUPT_MESSAGE" in str(error)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("compression", [0, 1])
def test_the_old_message_formats_become_columns_too(magic: int, compression: int) -> None:
    data = legacy(magic, 10, [(b"a", b"1"), (None, b"2"), (b"c", None)], compression)
    for fetch_offset in (0, 11):
        columns, error = decode_columns(data, fetch_offset, "t", 0, True)
        assert error is None and rows(columns) == expected(data, fetch_offset)
        assert len(columns) == 3 - fetch_offset % 10, "the records come out"


def test_a_malformed_record_ends_the_columns_at_the_batch_before_it() -> None:
    good = batch(0, RECORDS[:2])
    bad = bytearray(batch(2, RECORDS[:2]))
    bad[70:] = b"\xff" * (len(bad) - 70)  # the records section: varints that run off the end
    columns, error = decode_columns(good + bytes(bad), 0, "t", 3, False)
    assert [r[0] for r in rows(columns)] == [0, 1] and error is not None
    assert columns.last_epoch == columns.epochs[-1][1]


def test_columns_and_records_make_the_same_arrow_batch() -> None:
    pytest.importorskip("pyarrow")
    from groupclient.spark.arrow import columns_to_batch, records_to_batch

    data = batch(100, RECORDS, 3) + batch(105, RECORDS[:3], 0)
    records = list(decode_records(data, 101, "t", 3, None, None, True))
    columns, _ = decode_columns(data, 101, "t", 3, True)
    assert columns_to_batch([columns.part(0, 3), columns.part(3, len(columns))]).equals(records_to_batch(records))
    plain = batch(0, [(b"k", b"v", []), (None, b"w", [])])
    assert columns_to_batch([decode_columns(plain, 0, "t", 3, True)[0]]).equals(
        records_to_batch(list(decode_records(plain, 0, "t", 3, None, None, True))))
