"""Decoding a fetch answer into columns: no Python object per record.

:func:`decode_columns` reads every v2 record batch of one partition's fetch answer into
:class:`RecordColumns`: typed arrays of offsets, timestamps and the positions and lengths of keys
and values in one buffer (the answer itself when nothing is compressed; otherwise the batches'
records sections, decompressed, one after the other).  Nothing is sliced out per record: a
columnar consumer (groupclient.spark) gathers the keys and values into its own buffers in bulk.
Headers, rare in bulk data, are decoded per record when a record has any.

The same records as :func:`.records.decode_batches`, from the same bytes: transaction markers
skipped, records before the fetch offset skipped, CRCs checked when asked; an error (a CRC
mismatch, a missing codec) ends the columns at the batch before it and is handed back to be
raised once those are taken.  The old message formats (v0, v1: brokers before Kafka 4) are decoded
by the record decoder, then put in columns.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from .records import _TIMESTAMP_TYPE_MASK, _ZZ1, _ZZ2, Headers, Section, decode_batches, sections
from .transactions import AbortedTransactions
from .varints import varint


@dataclass
class RecordColumns:
    """Records of one partition as columns; ``key_at``/``value_at`` index ``buffer`` (a missing
    key or value has length -1); ``headers`` is None when no record has any."""

    topic: str
    partition: int
    buffer: bytes
    offsets: array[int]  # 'q'
    timestamps: array[int]  # 'q': milliseconds, -1 when the record has none
    key_at: array[int]  # 'q'
    key_length: array[int]  # 'q'
    value_at: array[int]  # 'q'
    value_length: array[int]  # 'q'
    headers: list[Headers] | None
    epochs: list[tuple[int, int]]  # (index of the first record of a leader epoch, the epoch)

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def last_offset(self) -> int:
        return int(self.offsets[-1])

    @property
    def last_epoch(self) -> int:
        """The leader epoch of the last record."""
        last = len(self.offsets) - 1
        found = -1
        for first, epoch in self.epochs:
            if first > last:
                break
            found = epoch
        return found

    def part(self, start: int, end: int) -> RecordColumns:
        """Records ``start`` to ``end`` (indexes), sharing the buffer."""
        if start == 0 and end == len(self.offsets):
            return self
        return RecordColumns(self.topic, self.partition, self.buffer, self.offsets[start:end],
                             self.timestamps[start:end], self.key_at[start:end], self.key_length[start:end],
                             self.value_at[start:end], self.value_length[start:end],
                             None if self.headers is None else self.headers[start:end],
                             [(max(0, first - start), epoch) for first, epoch in self.epochs if first < end])


def _empty(topic: str, partition: int, buffer: bytes) -> RecordColumns:
    return RecordColumns(topic, partition, buffer, array("q"), array("q"), array("q"), array("q"), array("q"),
                         array("q"), None, [])


def decode_columns(data: bytes, fetch_offset: int, topic: str, partition: int, check_crcs: bool,
                   aborted: Sequence[tuple[int, int]] = ()) -> tuple[RecordColumns, Exception | None]:
    """The records of ``data`` from ``fetch_offset`` on, and the error that ended them early;
    ``aborted``: as records.decode_batches takes it (read_committed)."""
    buf = bytes(data)
    found: list[Section] = []
    error: Exception | None = None
    try:
        for section in sections(buf, fetch_offset, topic, partition, check_crcs, 0,
                                AbortedTransactions(aborted) if aborted else None):
            if section.magic < 2:
                # the old formats (a broker before Kafka 4): rare, so record by record
                return _from_records(buf, fetch_offset, topic, partition, check_crcs, aborted)
            found.append(section)
    except Exception as exc:  # the batches before it go out first (as the record decoder's)
        error = exc
    # records section by records section: where it starts in the buffer, the record count, the
    # base offset, the base timestamp, the log-append timestamp (-1: create time), the epoch
    def placed(start: int, s: Section) -> tuple[int, ...]:
        log_ts = s.max_ts if s.attributes & _TIMESTAMP_TYPE_MASK else -1  # log append time: one for all
        return start, s.record_count, s.base_offset, s.base_ts, log_ts, s.epoch

    if all(s.records is buf for s in found):
        columns, failed = _decode(buf, [placed(s.start, s) for s in found], fetch_offset, topic, partition)
        return columns, failed or error
    # one buffer of every records section, one after the other: positions are positions in it
    joined = bytearray()
    starts = []
    for s in found:
        starts.append(placed(len(joined), s))
        joined += memoryview(s.records)[s.start:s.stop]
    columns, failed = _decode(bytes(joined), starts, fetch_offset, topic, partition)
    return columns, failed or error


def _decode(b: bytes, sections: list[tuple[int, ...]], fetch_offset: int, topic: str,
            partition: int) -> tuple[RecordColumns, Exception | None]:
    """The hot loop: varints inline as in records._decode_v2, each field appended to its array."""
    offsets, timestamps = array("q"), array("q")
    key_at, key_length, value_at, value_length = array("q"), array("q"), array("q"), array("q")
    headers: list[Headers] | None = None
    add_offset, add_ts = offsets.append, timestamps.append
    add_key_at, add_key_length = key_at.append, key_length.append
    add_value_at, add_value_length = value_at.append, value_length.append
    zz1, zz2 = _ZZ1, _ZZ2
    epochs: list[tuple[int, int]] = []
    failed: Exception | None = None
    for p, count, base_offset, base_ts, log_ts, epoch in sections:
        if not epochs or epochs[-1][1] != epoch:
            epochs.append((len(offsets), epoch))
        kept = len(offsets)
        try:
            for _ in range(count):
                while b[p] & 0x80:  # the record length
                    p += 1
                byte = b[p + 2]  # past the record attributes: the timestamp delta
                if byte < 0x80:
                    ts_delta = zz1[byte]
                    p += 3
                elif (more := b[p + 3]) < 0x80:
                    ts_delta = zz2[(byte & 0x7F) | (more << 7)]
                    p += 4
                else:
                    ts_delta, p = varint(b, p + 2)
                byte = b[p]
                if byte < 0x80:
                    offset_delta = zz1[byte]
                    p += 1
                elif (more := b[p + 1]) < 0x80:
                    offset_delta = zz2[(byte & 0x7F) | (more << 7)]
                    p += 2
                else:
                    offset_delta, p = varint(b, p)
                byte = b[p]
                if byte < 0x80:
                    key_len = zz1[byte]
                    p += 1
                elif (more := b[p + 1]) < 0x80:
                    key_len = zz2[(byte & 0x7F) | (more << 7)]
                    p += 2
                else:
                    key_len, p = varint(b, p)
                key_start = p
                if key_len > 0:
                    p += key_len
                byte = b[p]
                if byte < 0x80:
                    value_len = zz1[byte]
                    p += 1
                elif (more := b[p + 1]) < 0x80:
                    value_len = zz2[(byte & 0x7F) | (more << 7)]
                    p += 2
                else:
                    value_len, p = varint(b, p)
                value_start = p
                if value_len > 0:
                    p += value_len
                record_headers: list[tuple[str, bytes | None]] = []
                if b[p] == 0:  # no headers: the usual case
                    p += 1
                else:
                    header_count, p = varint(b, p)
                    for _ in range(header_count):
                        hk_len, p = varint(b, p)
                        if hk_len < 0:  # it would step back over what was read, again and again
                            raise ValueError(f"a header key of length {hk_len}")
                        hk = b[p : p + hk_len].decode()
                        p += hk_len
                        hv_len, p = varint(b, p)
                        hv = None
                        if hv_len >= 0:
                            hv, p = b[p : p + hv_len], p + hv_len
                        record_headers.append((hk, hv))
                offset = base_offset + offset_delta
                if offset < fetch_offset:
                    continue
                if record_headers and headers is None:
                    headers = [[] for _ in range(len(offsets))]
                if headers is not None:
                    headers.append(record_headers)
                add_offset(offset)
                add_ts(log_ts if log_ts >= 0 else base_ts + ts_delta)
                add_key_at(key_start)
                add_key_length(key_len)
                add_value_at(value_start)
                add_value_length(value_len)
        except Exception as exc:  # a malformed record: its batch goes, the batches before stay
            for column in (offsets, timestamps, key_at, key_length, value_at, value_length):
                del column[kept:]
            if headers is not None:
                del headers[kept:]
            epochs = [(first, e) for first, e in epochs if first < kept]
            failed = exc
            break
    return RecordColumns(topic, partition, b, offsets, timestamps, key_at, key_length, value_at, value_length,
                         headers, epochs), failed


def _from_records(buf: bytes, fetch_offset: int, topic: str, partition: int, check_crcs: bool,
                  aborted: Sequence[tuple[int, int]]) -> tuple[RecordColumns, Exception | None]:
    """An answer with messages of the old formats, by the record decoder, into columns over a
    buffer of their keys and values (the old formats are rare: a broker before Kafka 4)."""
    joined = bytearray()
    columns = _empty(topic, partition, b"")
    headers: list[Headers] = []
    error: Exception | None = None
    try:
        for batch in decode_batches(buf, fetch_offset, topic, partition, None, None, check_crcs, aborted=aborted):
            for record in batch:
                if not columns.epochs or columns.epochs[-1][1] != record.leader_epoch:
                    columns.epochs.append((len(columns.offsets), record.leader_epoch))
                columns.offsets.append(record.offset)
                columns.timestamps.append(record.timestamp if record.timestamp is not None else -1)
                for field, at, length in ((record.key, columns.key_at, columns.key_length),
                                          (record.value, columns.value_at, columns.value_length)):
                    at.append(len(joined))
                    length.append(-1 if field is None else len(field))
                    joined += field or b""
                headers.append(record.headers)
    except Exception as exc:  # the batches before it go out first
        error = exc
    columns.buffer = bytes(joined)
    columns.headers = headers if any(headers) else None
    return columns, error
