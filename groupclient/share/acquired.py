"""The records a ShareFetch answer acquired for this consumer: those of its record batches that fall
in the acquired ranges, each with its range's delivery count (the Java client's
``ShareCompletedFetch``).  Sans-IO.

What else the ranges hold is accounted for too: an acquired offset with no record (removed by
compaction, a transaction marker) is a gap, acknowledged as one; a batch that cannot be read (its
CRC does not match, it is cut short) has its acquired offsets rejected, as Java does, since it will
never be read; a record whose key or value cannot be deserialized is not handed out, and is
released unless the application acknowledges it otherwise.  A bad record outside the acquired
ranges is not this consumer's business.
"""

from __future__ import annotations

import bisect
import operator
import struct
from itertools import repeat
from dataclasses import dataclass, field
from typing import Any

from ..consumer.records import Deserializer, decode_batches
from ..errors import BrokerError, RecordDeserializationError, UnsupportedCodecError
from ..structs import TopicPartition
from .records import ShareRecord, share_record


@dataclass
class Acquired:
    """What one partition's answer holds for the application, and what it cannot have."""

    records: list[ShareRecord[Any, Any]] = field(default_factory=list)
    gaps: list[int] = field(default_factory=list)  # acquired offsets with no record
    rejected: list[int] = field(default_factory=list)  # acquired offsets of batches that cannot be read
    undeliverable: list[int] = field(default_factory=list)  # records that could not be deserialized
    errors: list[BaseException] = field(default_factory=list)  # what poll() raises about them


def acquired_records(data: bytes, ranges: list[Any], tp: TopicPartition, kd: Deserializer, vd: Deserializer,
                     check_crcs: bool) -> Acquired:
    """The records of ``data`` in the acquired ``ranges`` (ShareFetch's AcquiredRecords), each
    with its delivery count, and the rest of the ranges accounted for (see the module)."""
    spans = sorted((r.first_offset, r.last_offset, r.delivery_count) for r in ranges)
    firsts = [s[0] for s in spans]

    def span_of(offset: int) -> int:
        i = bisect.bisect_right(firsts, offset) - 1
        return i if i >= 0 and offset <= spans[i][1] else -1

    got = Acquired()
    out = got.records
    seen: set[int] = set()  # the offsets accounted for, but those of whole batches (``whole``)
    whole = 0
    start = spans[0][0]
    end = spans[-1][1]
    new = tuple.__new__
    while start <= end:
        try:
            for batch in decode_batches(data, start, tp.topic, tp.partition, kd, vd, check_crcs):
                if not batch:
                    continue
                i = span_of(batch[0].offset)
                if i >= 0 and batch[-1].offset <= spans[i][1]:
                    # the whole batch in one acquired range: the common case, without a look-up
                    # per record (``record + count``: a ShareRecord's fields, in order); their
                    # offsets go to ``seen`` only if gaps must be found (below)
                    count = (spans[i][2],)
                    out += map(new, repeat(ShareRecord), map(operator.add, batch, repeat(count)))  # all in C
                    whole += len(batch)
                    continue
                for record in batch:
                    i = span_of(record.offset)
                    if i >= 0:
                        out.append(share_record(record, spans[i][2]))
                        seen.add(record.offset)
            break
        except RecordDeserializationError as exc:
            for record in exc.records_before:
                i = span_of(record.offset)
                if i >= 0:
                    out.append(share_record(record, spans[i][2]))
                    seen.add(record.offset)
            if span_of(exc.offset) >= 0:  # one of ours: released unless acknowledged otherwise
                seen.add(exc.offset)
                got.undeliverable.append(exc.offset)
                got.errors.append(_undeliverable(exc))
            start = exc.offset + 1
        except (BrokerError, UnsupportedCodecError) as exc:
            # a batch that cannot be read: where the records decoded stop
            resume = max(max(seen, default=start - 1) + 1, out[-1].offset + 1 if out else start, start)
            unreadable = _batch_at(data, resume)
            if unreadable is None:
                break
            first, last = unreadable
            rejected = [o for o in range(max(first, resume), last + 1) if span_of(o) >= 0 and o not in seen]
            got.rejected += rejected
            seen.update(rejected)
            got.errors.append(exc)
            start = last + 1
    size = sum(last - first + 1 for first, last, _ in spans)
    if len(seen) + whole != size:  # some acquired offset is not accounted for: find the gaps
        seen.update(record.offset for record in out)
        got.gaps = [o for first, last, _ in spans for o in range(first, last + 1) if o not in seen]
    return got


def _batch_at(data: bytes, offset: int) -> tuple[int, int] | None:
    """The (first, last) offsets of the first batch of ``data`` that ends at or after ``offset``."""
    pos, size = 0, len(data)
    while pos + 27 <= size:
        base, length = struct.unpack_from(">qi", data, pos)
        last = base + struct.unpack_from(">i", data, pos + 23)[0] if data[pos + 16] >= 2 else base
        if last >= offset:
            return base, last
        pos += 12 + max(length, 0)
    return None


def _undeliverable(exc: RecordDeserializationError) -> RecordDeserializationError:
    """The decoder's error, saying what becomes of the record in a share group."""
    tp = exc.partition
    error = RecordDeserializationError(tp, exc.offset, exc.key_or_value, exc.__cause__ or exc)
    error.args = (f"the {exc.key_or_value} deserializer failed on the record at offset {exc.offset} of "
                  f"{tp.topic}-{tp.partition}: {exc.__cause__!r}; it was not returned, and is released (delivered "
                  f"again) unless acknowledged otherwise before the next poll(): acknowledge({tp.topic!r}, "
                  f"{tp.partition}, {exc.offset}, AcknowledgeType.REJECT) drops it for good",)
    return error


__all__ = ["Acquired", "acquired_records"]
