"""Kafka records as Arrow tables: the one row layout every part of groupclient.spark produces.

Columns: topic, partition, offset, timestamp, key, value, headers — the same names and types as
Spark's own Kafka source, less its timestampType column.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..consumer.columns import RecordColumns

ARROW_SCHEMA = pa.schema([
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    # "element" is the list item's name in the Arrow schema Spark derives from its own types
    pa.field("headers", pa.list_(pa.field("element", pa.struct([pa.field("key", pa.string()),
                                                                 pa.field("value", pa.binary())])))),
])

# the same schema in Spark's DDL, for DataFrames and the data source
SPARK_DDL = ("topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP, key BINARY, value BINARY, "
             "headers ARRAY<STRUCT<key: STRING, value: BINARY>>")

# the columns that name a record: a duplicate is a second row with the same three
RECORD_ID = ["topic", "partition", "offset"]


_HEADERS_TYPE = ARROW_SCHEMA.field("headers").type
_NO_HEADER = pa.array([], _HEADERS_TYPE.value_type)
_MICROS = pa.timestamp("us", tz="UTC")
_BINARY_LIMIT = 1 << 31  # a binary column's offsets are 32-bit
_INDEX_BYTES_PER_VALUE = 256  # above this average length, keys and values are copied value by value


def records_to_table(records: Sequence[Any]) -> pa.Table:
    """kafka-python ConsumerRecords (as GroupConsumer returns them) as one Arrow table."""
    return pa.Table.from_batches([records_to_batch(records)], schema=ARROW_SCHEMA)


def records_to_batch(records: Sequence[Any]) -> pa.RecordBatch:
    """ConsumerRecords as one Arrow batch, column by column.

    ``zip(*records)`` turns the records (tuples) into one tuple per field in C, and each column is
    built from its tuple in C as well: no Python step per record (twice as fast as a comprehension
    per column).  Only headers, when a record has any, are built record by record."""
    count = len(records)
    if count == 0:
        return pa.RecordBatch.from_pylist([], schema=ARROW_SCHEMA)
    # ConsumerRecord's fields: topic, partition, leader_epoch, offset, timestamp, timestamp_type,
    # key, value, headers, ...
    topic, partition, _, offset, timestamp, _, key, value, headers = list(zip(*records))[:9]
    millis = pa.array(timestamp, pa.int64())
    if pc.min(millis).as_py() < 0:  # -1: the record has no timestamp
        millis = pc.if_else(pc.less(millis, 0), pa.scalar(None, pa.int64()), millis)
    if any(headers):
        header_column = pa.array([[{"key": k, "value": v} for k, v in h] for h in headers], _HEADERS_TYPE)
    else:
        header_column = pa.ListArray.from_arrays(pa.repeat(pa.scalar(0, pa.int32()), count + 1), _NO_HEADER,
                                                 type=_HEADERS_TYPE)
    return pa.RecordBatch.from_arrays([
        _column(topic, pa.string()),
        _column(partition, pa.int32()),
        pa.array(offset, pa.int64()),
        pc.multiply(millis, 1000).cast(_MICROS),
        pa.array(key, pa.binary()),
        pa.array(value, pa.binary()),
        header_column,
    ], schema=ARROW_SCHEMA)


def _column(values: tuple[Any, ...], kind: pa.DataType) -> pa.Array:
    """A column whose values are mostly one (a topic, a partition): repeated in C when they are all
    the same (building a string column value by value is half the cost of a batch)."""
    first = values[0]
    if values.count(first) == len(values):
        return pa.repeat(pa.scalar(first, kind), len(values))
    return pa.array(values, kind)


def columns_to_batch(parts: Sequence[RecordColumns]) -> pa.RecordBatch:
    """Records decoded as columns (consumer/columns.py) as one Arrow batch, with no Python step
    per record: offsets and timestamps are the decoded arrays as they are, and the keys and values
    are gathered out of the fetched bytes by index arithmetic (numpy), a part at a time."""
    parts = [part for part in parts if len(part)]
    if not parts:
        return pa.RecordBatch.from_pylist([], schema=ARROW_SCHEMA)
    for name, lengths in (("keys", [part.key_length for part in parts]), ("values", [part.value_length for part in parts])):
        total = sum(int(np.frombuffer(column, np.int64).clip(0).sum()) for column in lengths)
        if total >= _BINARY_LIMIT:
            raise ValueError(f"{total} bytes of {name} for one Arrow batch, more than a binary column holds "
                             f"(2 GiB): lower max_poll_records (or consume's batch_records)")
    sizes = [len(part) for part in parts]
    count = sum(sizes)
    millis = pa.array(np.concatenate([np.frombuffer(part.timestamps, np.int64) for part in parts]))
    if pc.min(millis).as_py() < 0:  # -1: the record has no timestamp
        millis = pc.if_else(pc.less(millis, 0), pa.scalar(None, pa.int64()), millis)
    if any(part.headers is not None for part in parts):
        rows = [h for part in parts for h in (part.headers if part.headers is not None else [[]] * len(part))]
        header_column = pa.array([[{"key": k, "value": v} for k, v in h] for h in rows], _HEADERS_TYPE)
    else:
        header_column = pa.ListArray.from_arrays(pa.repeat(pa.scalar(0, pa.int32()), count + 1), _NO_HEADER,
                                                 type=_HEADERS_TYPE)
    return pa.RecordBatch.from_arrays([
        _repeated([part.topic for part in parts], sizes, pa.string()),
        _repeated([part.partition for part in parts], sizes, pa.int32()),
        pa.array(np.concatenate([np.frombuffer(part.offsets, np.int64) for part in parts])),
        pc.multiply(millis, 1000).cast(_MICROS),
        _concat([_gather(part.buffer, part.key_at, part.key_length) for part in parts]),
        _concat([_gather(part.buffer, part.value_at, part.value_length) for part in parts]),
        header_column,
    ], schema=ARROW_SCHEMA)


def _repeated(values: list[Any], sizes: list[int], kind: pa.DataType) -> pa.Array:
    if all(v == values[0] for v in values):
        return pa.repeat(pa.scalar(values[0], kind), sum(sizes))
    return pa.concat_arrays([pa.repeat(pa.scalar(v, kind), n) for v, n in zip(values, sizes)])


def _concat(arrays: list[pa.Array]) -> pa.Array:
    return arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)


def _gather(buffer: bytes, at: Any, length: Any) -> pa.Array:
    """A binary column of the byte ranges ``buffer[at[i]:at[i] + length[i]]`` (length -1: null),
    copied out in one numpy take."""
    starts = np.frombuffer(at, np.int64)
    lengths = np.frombuffer(length, np.int64)
    present = lengths >= 0
    sizes = np.where(present, lengths, 0)
    offsets = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    total = int(offsets[-1])
    if total >= _BINARY_LIMIT:
        raise ValueError(f"{total} bytes of keys or values in one Arrow batch: more than a binary column holds")
    data: Any
    if total > _INDEX_BYTES_PER_VALUE * len(sizes):
        # long values: a slice per value costs less than the index's eight bytes per byte
        view = memoryview(buffer)
        data = b"".join([view[start:start + size] for start, size in zip(starts.tolist(), sizes.tolist())])
    else:
        # the index in ``buffer`` of every byte to copy: each range's start, counted on from its
        # place in the output
        index = np.repeat(starts - offsets[:-1], sizes) + np.arange(total, dtype=np.int64)
        data = np.frombuffer(buffer, np.uint8)[index] if total else np.zeros(0, np.uint8)
    nulls = int(len(sizes) - np.count_nonzero(present))
    validity = pa.array(present).buffers()[1] if nulls else None
    return pa.Array.from_buffers(pa.binary(), len(sizes), [validity, pa.py_buffer(offsets.astype(np.int32)),
                                                            pa.py_buffer(data)], null_count=nulls)
