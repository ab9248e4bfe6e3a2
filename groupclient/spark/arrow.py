"""Kafka records as Arrow tables: the one row layout every part of groupclient.spark produces.

Columns: topic, partition, offset, timestamp, key, value, headers — the same names and types as
Spark's own Kafka source, less its timestampType column.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

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


def records_to_table(records: Sequence[Any]) -> pa.Table:
    """kafka-python ConsumerRecords (as GroupConsumer returns them) as one Arrow table."""
    return pa.Table.from_batches([records_to_batch(records)], schema=ARROW_SCHEMA)


def records_to_batch(records: Sequence[Any]) -> pa.RecordBatch:
    timestamps = [None if r.timestamp is None or r.timestamp < 0 else r.timestamp * 1000 for r in records]
    headers = [[{"key": k, "value": v} for k, v in (r.headers or ())] for r in records]
    return pa.RecordBatch.from_arrays([
        pa.array([r.topic for r in records], pa.string()),
        pa.array([r.partition for r in records], pa.int32()),
        pa.array([r.offset for r in records], pa.int64()),
        pa.array(timestamps, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        pa.array([r.key for r in records], pa.binary()),
        pa.array([r.value for r in records], pa.binary()),
        pa.array(headers, ARROW_SCHEMA.field("headers").type),
    ], schema=ARROW_SCHEMA)
