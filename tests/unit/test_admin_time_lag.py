"""``--lag-seconds`` without sockets: which record's timestamp a Fetch answer gives (record
batches built by kafka-python, as a broker stores them: compacted, with transaction markers,
LogAppendTime, the old formats, cut short, corrupt), and the time lag's table, JSON and watch line."""

from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.util import calc_crc32c

from groupclient import TopicPartition
from groupclient.admin import Coordinator, GroupDescription, PartitionLag
from groupclient.admin.render import render_description, render_time_lag
from groupclient.admin.time_lag import FetchAgain, first_timestamp

TP = TopicPartition("orders", 0)
T0 = 1_700_000_000_000


def batch(base: int, deltas: list[int], stamp: int = T0, transactional: bool = False) -> bytes:
    """A v2 batch at offset ``base`` with a record at each offset delta (gaps: compacted away);
    the record at delta d written at ``stamp`` + d seconds."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                  producer_id=7 if transactional else -1, producer_epoch=0 if transactional else -1,
                                  base_sequence=0 if transactional else -1, batch_size=2**20)
    for d in deltas:
        b.append(d, stamp + 1000 * d, None, b"v", [])
    data = bytearray(b.build())
    data[0:8] = base.to_bytes(8, "big")  # the broker assigns the base offset; the CRC does not cover it
    return bytes(data)


def rewritten(data: bytes, attributes: int = 0, max_ts: int | None = None) -> bytes:
    """``data`` with attribute bits added (0x20 control, 0x08 LogAppendTime) and another
    maxTimestamp, its CRC computed again, as a broker would have written it."""
    out = bytearray(data)
    out[21:23] = (int.from_bytes(out[21:23], "big") | attributes).to_bytes(2, "big")
    if max_ts is not None:
        out[35:43] = max_ts.to_bytes(8, "big")
    out[17:21] = calc_crc32c(bytes(out[21:])).to_bytes(4, "big")
    return bytes(out)


def test_the_last_consumed_record_counts() -> None:
    data = batch(10, [0, 1, 2, 3, 4])
    assert first_timestamp(data, 12, 13, TP) == T0 + 2000  # committed 13: record 12 was the last consumed


def test_a_compacted_away_record_gives_way_to_the_first_waiting() -> None:
    data = batch(10, [0, 3, 4])  # offsets 10, 13, 14: 11 and 12 compacted away
    assert first_timestamp(data, 12, 13, TP) == T0 + 3000


def test_a_transaction_marker_gives_way_to_the_first_waiting() -> None:
    marker = rewritten(batch(12, [0], transactional=True), attributes=0x20)
    data = marker + batch(13, [0, 1], stamp=T0 + 60_000)
    assert first_timestamp(data, 12, 13, TP) == T0 + 60_000
    # an answer with the marker only: fetched again past it
    again = first_timestamp(marker, 12, 13, TP)
    assert isinstance(again, FetchAgain) and again.offset == 13


def test_log_append_time_is_the_batchs() -> None:
    data = rewritten(batch(10, [0, 1, 2]), attributes=0x08, max_ts=T0 + 99_000)
    assert first_timestamp(data, 11, 12, TP) == T0 + 99_000


def test_the_old_formats() -> None:
    v1 = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=2**20)
    for offset in range(3):
        v1.append(offset, T0 + offset, None, b"v")
    assert first_timestamp(bytes(v1.build()), 1, 2, TP) == T0 + 1
    v0 = LegacyRecordBatchBuilder(magic=0, compression_type=0, batch_size=2**20)
    for offset in range(3):
        v0.append(offset, None, None, b"v")
    assert first_timestamp(bytes(v0.build()), 1, 2, TP) is None  # v0 has no timestamps


def test_a_batch_cut_short_is_fetched_again_and_a_corrupt_one_is_unknown() -> None:
    data = batch(10, [0, 1, 2])
    again = first_timestamp(data[:-5], 11, 12, TP)  # larger than the answer's limit
    assert isinstance(again, FetchAgain) and again.offset == 11
    corrupt = bytearray(data)
    corrupt[-1] ^= 0xFF
    assert first_timestamp(bytes(corrupt), 11, 12, TP) is None


def described(*offsets: PartitionLag) -> GroupDescription:
    return GroupDescription("shop", "Empty", "", "", Coordinator(0, "127.0.0.1", 9092), (), offsets, with_time_lag=True)


LAGS = (PartitionLag("orders", 0, 4, 10, None, 12.3456), PartitionLag("orders", 1, 5, 5, None, 0.0),
        PartitionLag("orders", 2, None, 7, None, None))


def test_time_lag_in_the_table_json_and_watch_line() -> None:
    d = described(*LAGS)
    assert d.max_time_lag_s == 12.3456
    assert render_description(d).splitlines()[-7:] == [
        "TOPIC   PARTITION  COMMITTED-OFFSET  LOG-END-OFFSET  LAG  TIME-LAG-S  MEMBER-ID",
        "orders  0          4                 10              6    12.346      -",
        "orders  1          5                 5               0    0.000       -",
        "orders  2          -                 7               -    -           -",
        "",
        "total lag: 6",
        "max time lag: 12.346 s",
    ]
    as_json = d.to_json()
    assert [o["time_lag_s"] for o in as_json["offsets"]] == [12.3456, 0.0, None]
    assert as_json["max_time_lag_s"] == 12.3456
    assert render_time_lag(d) == "time lag: max 12.346 s; orders[0] 12.346 s, orders[1] 0.000 s, orders[2] -"


def test_unknown_everywhere_and_not_asked_for() -> None:
    d = described(LAGS[2])
    assert d.max_time_lag_s is None and d.to_json()["max_time_lag_s"] is None
    assert render_description(d).endswith("total lag: -\nmax time lag: -")
    assert render_time_lag(d) == "time lag: max -; orders[2] -"
    assert render_time_lag(described()) == "time lag: - (no committed offsets)"
    plain = GroupDescription("shop", "Empty", "", "", Coordinator(0, "127.0.0.1", 9092), (), LAGS)
    assert "max_time_lag_s" not in plain.to_json() and "time_lag_s" not in plain.to_json()["offsets"][0]
    assert "TIME-LAG-S" not in render_description(plain) and "time lag" not in render_description(plain)
