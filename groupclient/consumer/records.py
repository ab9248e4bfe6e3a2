"""Decoding fetched record batches into ``ConsumerRecord``s.

Two paths decode v2 batches into the same records (record_path.py chooses): the compiled one
(native/, a batch per call) where it is installed, and this module's pure Python.  The compiled
path hands any batch it does not take (an old message format, a CRC mismatch, an unknown codec,
malformed records) to the Python path, which decodes it or raises its error: the same input gives
the same records and the same errors on both.

In Python, v2 batches are decoded by a tight loop here (the hot path of a consumer): a compressed batch is
decompressed once (codecs.py) and its records sliced out of the result like an uncompressed
batch's, so the only per-record copies are the key and value the application gets.  Control
batches (transaction markers) hold no records.  Older message formats go through kafka-python's
``kafka.record``, which is also the reference the tests compare against.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from ..structs import ConsumerRecord
from kafka.record.legacy_records import LegacyRecordBatch
from kafka.record.util import calc_crc32c
from ..structs import TopicPartition

from ..error_codes import ErrorCode
from ..errors import BrokerError, RecordDeserializationError, UnsupportedCodecError
from ..protocol.apis import ApiKey
from ..protocol.error_table import error_for
from . import record_path
from .codecs import NAMES, decompress
from .varints import varint
from .transactions import AbortedTransactions

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordCount
_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC_START = 21
_BASE_AND_LENGTH = struct.Struct(">qi")
_MAGIC_AT = 16  # the magic byte, at the same place in every format (batch or message)
_LAST_DELTA = struct.Struct(">i")  # at byte 23 of a v2 batch
_COMPRESSION_MASK, _TIMESTAMP_TYPE_MASK, _CONTROL_MASK = 0x07, 0x08, 0x20
# the shortest a batch can say it is (its length field counts what follows it): an old-format
# message's fixed fields; a shorter one cannot be stepped over
_SHORTEST = 14

# The compiled path decodes an answer of compressed batches of this many bytes or more ahead,
# on worker threads (native/src/ahead.rs): starting a thread costs ~30 us, a 64 KiB batch's
# decompression 30-150 us.  Not uncompressed ones: there the workers would only check CRCs and
# parse, less than handing each batch over costs (benchmarks/decode.py: 100 B values the same,
# 1 KB 10-20% slower).
AHEAD_FROM = 128 * 1024
# Its worker threads per answer: one.  Consuming from Kafka on 2 cores (benchmarks/throughput.py),
# one worker made GroupConsumer 8-25% faster on lz4 and zstd, two no faster than one, and two
# made AsyncGroupConsumer (whose event loop needs the interpreter lock too) 5-15% slower than one.
AHEAD_WORKERS = 1
# (the tests decode uncompressed answers ahead too, to compare every input on it)
AHEAD_UNCOMPRESSED = False

# a list, as kafka-python's records have them; a tuple in records made as aiokafka's
Headers = Sequence[tuple[str, "bytes | None"]]
# a configured key or value deserializer bound to one topic: called with the bytes and the
# record's headers; with None for a missing key or value only for records made as aiokafka makes
# them (``aiokafka``: groupclient.aio), else a missing one stays None
Deserializer = Callable[[bytes | None, Headers], Any] | None


def next_offset(data: bytes, fetch_offset: int) -> int:
    """The offset after the last complete batch in ``data`` (at least ``fetch_offset``): where the
    next fetch of the partition starts, past trailing transaction markers too."""
    pos, end, found = 0, len(data), fetch_offset
    while pos + _MAGIC_AT + 1 <= end:
        base_offset, length = _BASE_AND_LENGTH.unpack_from(data, pos)
        batch_end = pos + 12 + length
        if batch_end > end or length < _SHORTEST:
            break  # a partial batch; or a malformed one, which decoding reports
        if data[pos + _MAGIC_AT] < 2:  # an old-format message: its offset is its last record's
            found = max(found, base_offset + 1)
        elif batch_end < pos + _HEADER.size:
            break  # shorter than its header: decoding reports it
        else:
            found = max(found, base_offset + _LAST_DELTA.unpack_from(data, pos + 23)[0] + 1)
        pos = batch_end
    return found


def decode_records(data: bytes, fetch_offset: int, topic: str, partition: int, kd: Deserializer,
                   vd: Deserializer, check_crcs: bool) -> Iterator[ConsumerRecord]:
    """The records of ``data`` from ``fetch_offset`` on, one at a time (tools and tests; the
    fetcher takes whole batches from :func:`decode_batches`)."""
    for records in decode_batches(data, fetch_offset, topic, partition, kd, vd, check_crcs):
        yield from records


class Section(NamedTuple):
    """One batch of a fetch answer, as its records are decoded: a v2 batch's records section
    (``records[start:stop]``, decompressed if it was compressed), or a message of the old formats
    (``magic`` below 2: the whole message, ``records[start:stop]``, the other fields unset)."""

    records: bytes
    start: int
    stop: int
    magic: int
    record_count: int = 0
    base_offset: int = 0
    epoch: int = -1
    base_ts: int = 0
    max_ts: int = 0
    attributes: int = 0


def sections(buf: bytes, fetch_offset: int, topic: str, partition: int, check_crcs: bool,
             start: int = 0, aborted: AbortedTransactions | None = None) -> Iterator[Section]:
    """The batches of ``buf`` from byte ``start`` on with records from ``fetch_offset`` on, in
    order: CRCs checked when asked (a mismatch raises, after the batches before it), transaction
    markers, batches of ``aborted`` transactions (read_committed) and a partial batch at the end
    left out, compressed records sections decompressed as they come.  What both decoders (records
    here, columns in columns.py) walk."""
    pos, end = start, len(buf)
    while pos + _MAGIC_AT + 1 <= end:
        base_offset, length = _BASE_AND_LENGTH.unpack_from(buf, pos)
        batch_end = pos + 12 + length
        if batch_end > end:
            return  # a partial batch at the end of a fetch answer: fetched again next time
        if length < _SHORTEST:
            raise _corrupt(topic, partition, base_offset, f"says it is {length} bytes long, shorter than any batch")
        magic = buf[pos + _MAGIC_AT]
        if magic < 2:
            # the old formats (v0, v1: a broker before Kafka 4): a message, or a compressed
            # wrapper whose offset is its last record's
            if base_offset >= fetch_offset:
                yield Section(buf, pos, batch_end, magic)
            pos = batch_end
            continue
        if batch_end < pos + _HEADER.size:
            raise _corrupt(topic, partition, base_offset, f"says it is {length} bytes long, shorter than its header")
        (_, _, epoch, _, crc, attributes, last_delta, base_ts, max_ts, _, _, _,
         count) = _HEADER.unpack_from(buf, pos)
        if aborted is not None and _left_out(aborted, buf, pos, base_offset, last_delta, attributes, topic, partition):
            pos = batch_end
            continue
        if base_offset + last_delta < fetch_offset:
            pos = batch_end
            continue
        if check_crcs and calc_crc32c(memoryview(buf)[pos + _CRC_START:batch_end]) != crc:
            raise _corrupt(topic, partition, base_offset, "does not match its CRC")
        if attributes & _CONTROL_MASK:
            pos = batch_end  # transaction markers are not records
            continue
        codec = attributes & _COMPRESSION_MASK
        if codec:
            # decompressed once; records are then sliced out of it like an uncompressed batch's
            records = _decompressed(codec, buf[pos + _HEADER.size:batch_end], topic, partition, base_offset)
            yield Section(records, 0, len(records), magic, count, base_offset, epoch, base_ts, max_ts, attributes)
        else:
            yield Section(buf, pos + _HEADER.size, batch_end, magic, count, base_offset, epoch, base_ts, max_ts,
                          attributes)
        pos = batch_end


def _left_out(aborted: AbortedTransactions, buf: bytes, pos: int, base_offset: int, last_delta: int,
              attributes: int, topic: str, partition: int) -> bool:
    """Whether the v2 batch at ``pos`` belongs to an aborted transaction (read_committed)."""
    try:
        return aborted.leaves_out(buf, pos, base_offset, base_offset + last_delta, attributes)
    except (IndexError, ValueError, struct.error, UnsupportedCodecError) as exc:
        raise _corrupt(topic, partition, base_offset, f"is a transaction marker that cannot be read ({exc})") from exc


def _past_left_out(aborted: AbortedTransactions, buf: bytes, pos: int, fetch_offset: int, topic: str,
                   partition: int, check_crcs: bool) -> int:
    """From ``pos``, past the v2 batches no record comes from (aborted, before ``fetch_offset``,
    transaction markers), as :func:`sections` steps over them: where the next batch to decode
    (or anything else: a partial batch, an old format, a CRC mismatch) starts."""
    end = len(buf)
    while pos + _HEADER.size <= end:
        base_offset, length = _BASE_AND_LENGTH.unpack_from(buf, pos)
        batch_end = pos + 12 + length
        if batch_end > end or length < _HEADER.size - 12 or buf[pos + _MAGIC_AT] < 2:
            return pos
        (_, _, _, _, crc, attributes, last_delta, *_) = _HEADER.unpack_from(buf, pos)
        if _left_out(aborted, buf, pos, base_offset, last_delta, attributes, topic, partition):
            pos = batch_end
            continue
        if base_offset + last_delta < fetch_offset:
            pos = batch_end
            continue
        if not attributes & _CONTROL_MASK:
            return pos  # records: decoded by the caller
        if check_crcs and calc_crc32c(memoryview(buf)[pos + _CRC_START:batch_end]) != crc:
            return pos  # the caller raises it
        pos = batch_end
    return pos


def decode_batches(data: bytes, fetch_offset: int, topic: str, partition: int, kd: Deserializer,
                   vd: Deserializer, check_crcs: bool, aiokafka: bool = False,
                   aborted: Sequence[tuple[int, int]] = ()) -> Iterator[list[ConsumerRecord]]:
    """The records of ``data`` from ``fetch_offset`` on, a list per record batch (a batch is
    decoded in one call: no generator step per record).  ``aiokafka``: records as aiokafka
    makes them: the deserializers are called with None for a missing key or value too, and the
    headers are a tuple (the empty one when there are none), so a record of bytes, strings and
    numbers holds no container the garbage collector must follow: the compiled path makes it
    untracked, and records waiting in a buffer cost full collections nothing.  A batch that cannot
    be decoded raises a CorruptRecordError naming the partition and the batch's offset, after the
    batches before it (on either path).  ``aborted``: the (producer id, first offset) pairs of
    the aborted transactions a read_committed Fetch answer lists: their batches are left out
    (transactions.py)."""
    buf = bytes(data)  # no copy when it is bytes already
    native = record_path.CHOSEN
    skipping = AbortedTransactions(aborted) if aborted else None
    if native is None:
        yield from _python_batches(buf, 0, fetch_offset, topic, partition, kd, vd, check_crcs, aiokafka, skipping)
        return
    pos = 0
    # a big answer of compressed batches (and not one to leave aborted transactions out of,
    # batch by batch) is decompressed and parsed by worker threads while this one builds records
    ahead = (native.decode_ahead(buf, 0, fetch_offset, check_crcs, AHEAD_WORKERS)
             if skipping is None and len(buf) >= AHEAD_FROM and (AHEAD_UNCOMPRESSED or _compressed(buf)) else None)
    while True:
        if skipping is not None:  # the compiled path decodes from the next batch that has records
            pos = _past_left_out(skipping, buf, pos, fetch_offset, topic, partition, check_crcs)
        # the compiled path (native/src/lib.rs): a batch per call, the same records as below
        if ahead is not None:
            outcome, pos, found = ahead.decode(topic, partition, kd, vd, aiokafka, ConsumerRecord)
        else:
            outcome, pos, found = native.decode_batch(buf, pos, fetch_offset, topic, partition, kd, vd, check_crcs,
                                                      aiokafka, ConsumerRecord)
        if outcome == native.RECORDS:
            yield found
        elif outcome == native.END:
            return
        elif outcome == native.DESERIALIZER:
            offset, key_or_value, exc, before = found
            raise _undeserializable(topic, partition, offset, key_or_value, exc, before) from exc
        else:  # an old message format, a CRC mismatch, malformed records...: decoded or raised here
            yield from _python_batches(buf, pos, fetch_offset, topic, partition, kd, vd, check_crcs, aiokafka,
                                       skipping)
            return


def _compressed(buf: bytes) -> bool:
    """Whether the answer's first batch is a compressed v2 batch (a producer compresses all its
    batches or none, and a topic's compression.type is one codec)."""
    return len(buf) >= _HEADER.size and buf[_MAGIC_AT] >= 2 and bool(buf[22] & _COMPRESSION_MASK)


def _python_batches(buf: bytes, start: int, fetch_offset: int, topic: str, partition: int, kd: Deserializer,
                    vd: Deserializer, check_crcs: bool, aiokafka: bool,
                    aborted: AbortedTransactions | None = None) -> Iterator[list[ConsumerRecord]]:
    """The pure-Python path of :func:`decode_batches`, from byte ``start`` of ``buf`` on."""
    for s in sections(buf, fetch_offset, topic, partition, check_crcs, start, aborted):
        if s.magic < 2:
            yield _legacy_batch(s.records[s.start:s.stop], s.magic, fetch_offset, topic, partition, kd, vd,
                                check_crcs, aiokafka)
            continue
        try:
            batch = _decode_v2(s.records, s.start, s.stop, s.record_count, s.base_offset, s.epoch, s.base_ts,
                               s.max_ts, s.attributes, fetch_offset, topic, partition, kd, vd, aiokafka)
        except RecordDeserializationError:
            raise
        except (IndexError, ValueError) as exc:  # (UnicodeDecodeError is a ValueError)
            raise _corrupt(topic, partition, s.base_offset, f"holds malformed records ({exc})") from exc
        yield batch


def _decompressed(codec: int, data: bytes, topic: str, partition: int, base_offset: int) -> bytes:
    """A batch's records section decompressed; the batch is corrupt if its codec is none of
    Kafka's or its data is not of that codec (a codec whose package is missing raises
    UnsupportedCodecError: an installation to fix, not a batch)."""
    if codec not in NAMES:
        raise _corrupt(topic, partition, base_offset, f"says it is compressed with codec {codec}, which Kafka has not")
    try:
        return decompress(codec, data)
    except UnsupportedCodecError:
        raise
    except Exception as exc:  # each codec package raises its own kind
        raise _corrupt(topic, partition, base_offset, f"cannot be decompressed with {NAMES[codec]} ({exc})") from exc


# Zigzag values of the one- and two-byte varints, indexed by their 7 and 14 payload bits: most of a
# record's varints are one or two bytes, and a table lookup is several bytecodes fewer than the
# arithmetic (a tenth of the decoding time; the two tables hold ~16k ints, ~0.5 MB).
_ZZ1 = tuple((v >> 1) ^ -(v & 1) for v in range(1 << 7))
_ZZ2 = tuple((v >> 1) ^ -(v & 1) for v in range(1 << 14))
# a ConsumerRecord without the Python-level namedtuple __new__ frame (its fields in order)
_new_tuple = tuple.__new__


def _decode_v2(b: bytes, p: int, stop: int, count: int, base_offset: int, epoch: int, base_ts: int, max_ts: int,
               attributes: int, fetch_offset: int, topic: str, partition: int, kd: Deserializer,
               vd: Deserializer, aiokafka: bool = False) -> list[ConsumerRecord]:
    """The ``count`` records of a v2 batch whose records are ``b[p:stop]``; ValueError when they
    run past ``stop`` (IndexError past the end of ``b``).

    The hot loop of a consumer, written out by hand: varints are decoded inline (a function call
    per field was a third of the time), a one- or two-byte one by table, longer ones by _varint."""
    out: list[ConsumerRecord] = []
    append = out.append
    ts_type = 1 if attributes & _TIMESTAMP_TYPE_MASK else 0
    log_append = ts_type == 1
    # (declared: mypy 1.10, the floor, leaves the type variables of a generic class object unsolved)
    record_cls: type[ConsumerRecord]
    zz1, zz2, record_cls, new = _ZZ1, _ZZ2, ConsumerRecord, _new_tuple
    for _ in range(count):
        while b[p] & 0x80:  # the record length: not needed, every field is read in turn
            p += 1
        # past its last byte and the record attributes (unused): the timestamp delta
        byte = b[p + 2]
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
        if key_len >= 0:
            key: bytes | None = b[p : p + key_len]
            p += key_len
        else:
            key = None
        byte = b[p]
        if byte < 0x80:
            value_len = zz1[byte]
            p += 1
        elif (more := b[p + 1]) < 0x80:
            value_len = zz2[(byte & 0x7F) | (more << 7)]
            p += 2
        else:
            value_len, p = varint(b, p)
        if value_len >= 0:
            value: bytes | None = b[p : p + value_len]
            p += value_len
        else:
            value = None
        header_size = -1
        if b[p] == 0:  # no headers: the usual case
            p += 1
            headers: Headers = () if aiokafka else []
        else:
            found: list[tuple[str, bytes | None]] = []
            header_count, p = varint(b, p)
            header_size = 0
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
                found.append((hk, hv))
                header_size += hk_len + max(hv_len, 0)
            headers = tuple(found) if aiokafka else found
        offset = base_offset + offset_delta
        if offset < fetch_offset:
            continue
        # the deserializers are the application's code: a failure names the record (no cost
        # when nothing is raised)
        try:
            k = key if kd is None or (key is None and not aiokafka) else kd(key, headers)
        except Exception as exc:
            raise _undeserializable(topic, partition, offset, "key", exc, out) from exc
        try:
            v = value if vd is None or (value is None and not aiokafka) else vd(value, headers)
        except Exception as exc:
            raise _undeserializable(topic, partition, offset, "value", exc, out) from exc
        append(new(record_cls, (
            topic, partition, epoch, offset, max_ts if log_append else base_ts + ts_delta, ts_type,
            k, v, headers, None, key_len, value_len, header_size)))
    if p > stop:
        raise ValueError(f"{count} records run {p - stop} bytes past their batch")
    return out


def _legacy_batch(raw: bytes, magic: int, fetch_offset: int, topic: str, partition: int, kd: Deserializer,
                  vd: Deserializer, check_crcs: bool, aiokafka: bool = False) -> list[ConsumerRecord]:
    """One message of the old formats (or a compressed wrapper of several), by kafka-python."""
    batch = LegacyRecordBatch(raw, magic)
    if check_crcs and not batch.validate_crc():  # before iterating: that decompresses the wrapper
        raise _corrupt(topic, partition, _BASE_AND_LENGTH.unpack_from(raw, 0)[0], "does not match its CRC")
    out: list[ConsumerRecord] = []
    epoch = -1  # the old formats carry no leader epoch
    for r in batch:
        if r.offset < fetch_offset:
            continue
        key, value = r.key, r.value
        headers: Headers = tuple(r.headers) if aiokafka else list(r.headers)
        try:
            k = kd(key, headers) if kd is not None and (key is not None or aiokafka) else key
        except Exception as exc:
            raise _undeserializable(topic, partition, r.offset, "key", exc, out) from exc
        try:
            v = vd(value, headers) if vd is not None and (value is not None or aiokafka) else value
        except Exception as exc:
            raise _undeserializable(topic, partition, r.offset, "value", exc, out) from exc
        out.append(ConsumerRecord(
            topic, partition, epoch, r.offset, r.timestamp, r.timestamp_type, k, v,
            headers, None, len(key) if key is not None else -1, len(value) if value is not None else -1,
            sum(len(hk) + len(hv or b"") for hk, hv in headers) if headers else -1))
    return out


def _undeserializable(topic: str, partition: int, offset: int, key_or_value: str, cause: Exception,
                      before: list[ConsumerRecord]) -> RecordDeserializationError:
    error = RecordDeserializationError(TopicPartition(topic, partition), offset, key_or_value, cause)
    error.records_before = before
    return error


def _corrupt(topic: str, partition: int, base_offset: int, what: str) -> BrokerError:
    """A batch that cannot be decoded (its CRC does not match, it is cut short, its records are
    malformed...): what the error table says of CORRUPT_MESSAGE on a fetch, a CorruptRecordError
    (raised to the application once per fetch of it; the position stays at the batch, so
    ``seek()`` past it to go on, as in Java)."""
    return error_for(ErrorCode.CORRUPT_MESSAGE, ApiKey.FETCH,
                     f"the record batch at offset {base_offset} of {topic}-{partition} {what}; seek past it to skip it")
