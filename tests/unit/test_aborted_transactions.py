"""read_committed: records of aborted transactions are left out, on both record paths and by the
columns decoder, as Java's CompletedFetch leaves them out: a producer's transactional batches
from an aborted transaction's first offset up to its abort marker; and lag counts to the last
stable offset."""

from __future__ import annotations

import pytest
from kafka.errors import CorruptRecordError
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c

from groupclient.consumer.columns import decode_columns
from groupclient.consumer.records import decode_batches
from groupclient.consumer.subscription import SubscriptionState
from groupclient.structs import TopicPartition
from tests.record_paths import on_path

ABORT, COMMIT = 0, 1


def records(base: int, producer: int, count: int, transactional: bool = True, compression: int = 0) -> bytes:
    """A batch of ``count`` records from offset ``base``, written by ``producer`` (-1: none)."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=compression, is_transactional=transactional,
                                        producer_id=producer, producer_epoch=0 if producer >= 0 else -1,
                                        base_sequence=0 if producer >= 0 else -1, batch_size=1 << 20)
    for i in range(count):
        builder.append(i, 1_700_000_000_000 + base + i, None, f"v{base + i}".encode(), [])
    data = bytearray(builder.build())
    data[0:8] = base.to_bytes(8, "big")
    return bytes(data)


def marker(offset: int, producer: int, kind: int, key: bytes | None = None) -> bytes:
    """A transaction marker: a control batch of one record whose key says ABORT or COMMIT."""
    key = (0).to_bytes(2, "big") + kind.to_bytes(2, "big") if key is None else key
    value = (0).to_bytes(2, "big") + (0).to_bytes(4, "big")  # version, coordinator epoch
    body = bytes([0, 0, 0]) + bytes([len(key) * 2]) + key + bytes([len(value) * 2]) + value + bytes([0])
    record = bytes([len(body) * 2]) + body  # zigzag varints of small positive numbers
    header = bytearray(61)
    header[0:8] = offset.to_bytes(8, "big")
    header[8:12] = (49 + len(record)).to_bytes(4, "big")
    header[12:16] = (0).to_bytes(4, "big")  # leader epoch
    header[16] = 2
    header[21:23] = (0x30).to_bytes(2, "big")  # transactional, control
    header[27:35] = header[35:43] = (1_700_000_000_000).to_bytes(8, "big")
    header[43:51] = producer.to_bytes(8, "big")
    header[51:53] = (0).to_bytes(2, "big")
    header[53:57] = (0xFFFFFFFF).to_bytes(4, "big")  # base sequence -1
    header[57:61] = (1).to_bytes(4, "big")
    data = header + record
    data[17:21] = calc_crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def offsets(path: str, data: bytes, aborted: list[tuple[int, int]], fetch_offset: int = 0) -> list[int]:
    with on_path(path):
        found = [r.offset for batch in decode_batches(data, fetch_offset, "t", 0, None, None, True, aborted=aborted)
                 for r in batch]
    columns, error = decode_columns(data, fetch_offset, "t", 0, True, aborted)
    assert error is None
    assert list(columns.offsets) == found
    return found


# producer 7 aborts 0-2 (marker 3), then commits 4-5 (marker 6); producer 8 commits 7-8 (marker
# 10) around producer 7's second, aborted, transaction 9 (marker 11); a non-transactional 12-13
LOG = b"".join([
    records(0, 7, 3), marker(3, 7, ABORT),
    records(4, 7, 2), marker(6, 7, COMMIT),
    records(7, 8, 2), records(9, 7, 1), marker(10, 8, COMMIT), marker(11, 7, ABORT),
    records(12, -1, 2, transactional=False),
])
ABORTED = [(7, 0), (7, 9)]


@pytest.mark.parametrize("path", ["native", "python"])
def test_aborted_transactions_are_left_out(path: str) -> None:
    assert offsets(path, LOG, ABORTED) == [4, 5, 7, 8, 12, 13]
    assert offsets(path, LOG, []) == [0, 1, 2, 4, 5, 7, 8, 9, 12, 13]  # read_uncommitted: all of them


@pytest.mark.parametrize("path", ["native", "python"])
def test_a_fetch_from_inside_the_log_and_in_any_listed_order(path: str) -> None:
    assert offsets(path, LOG, list(reversed(ABORTED)), fetch_offset=5) == [5, 7, 8, 12, 13]
    assert offsets(path, LOG, ABORTED, fetch_offset=9) == [12, 13]


@pytest.mark.parametrize("path", ["native", "python"])
@pytest.mark.parametrize("compression", [1, 3, 4])
def test_compressed_batches_of_an_aborted_transaction(path: str, compression: int) -> None:
    data = records(0, 5, 3, compression=compression) + marker(3, 5, ABORT) + records(4, 5, 2, compression=compression)
    assert offsets(path, data, [(5, 0)]) == [4, 5]


@pytest.mark.parametrize("path", ["native", "python"])
def test_a_producer_not_listed_and_a_commit_marker_change_nothing(path: str) -> None:
    data = records(0, 3, 2) + marker(2, 3, COMMIT) + records(3, 4, 2)
    assert offsets(path, data, [(9, 0)]) == [0, 1, 3, 4]


def test_an_unreadable_abort_marker_is_the_same_corrupt_record_error_on_both_paths() -> None:
    data = records(0, 7, 2) + marker(2, 7, ABORT, key=b"\x00") + records(3, 7, 1)
    outcomes = []
    for path in ("native", "python"):
        with on_path(path), pytest.raises(CorruptRecordError) as raised:
            list(decode_batches(data, 0, "t", 0, None, None, True, aborted=[(7, 0)]))
        outcomes.append(str(raised.value))
    assert outcomes[0] == outcomes[1]
    assert "t-0" in outcomes[0] and "offset 2" in outcomes[0]



@pytest.mark.parametrize("read_committed, lag", [(False, 90), (True, 40)])
def test_lag_is_counted_to_the_last_stable_offset_under_read_committed(read_committed: bool, lag: int) -> None:
    """Java's partitionLag: records past the last stable offset (an open transaction's) cannot be
    read yet under read_committed, so they are not lag; under read_uncommitted they are."""
    tp = TopicPartition("t", 0)
    subscription = SubscriptionState("earliest", read_committed=read_committed)
    subscription.assign_from_user({tp})
    subscription.seek(tp, 10)
    subscription.set_high_watermark(tp, 100, last_stable=50)
    assert subscription.lags_by_partition() == {tp: lag}
    assert subscription.lags() == [lag]
    subscription.set_high_watermark(tp, 100, last_stable=-1)  # an answer without one keeps the last known
    assert subscription.lags() == [lag]
