"""read_committed: which record batches of one fetch answer belong to aborted transactions.

A broker answers a read_committed fetch with records up to the last stable offset and, per
partition, the transactions aborted in that range: (producer id, first offset).  It does not
take the aborted records out; the consumer does, as Java's ``CompletedFetch`` does, walking the
batches in offset order:

- a transaction starts counting as aborted once a batch reaches its first offset (its producer
  joins the aborted producers);
- a transactional batch of an aborted producer is left out, all of it;
- the producer's abort marker (a control batch whose record says ABORT) ends the transaction:
  the producer's later batches are read again.

Both record paths (records.py, the compiled one and the Python one, and columns.py) ask
:meth:`AbortedTransactions.leaves_out` about every v2 batch, in order, before anything else;
asking twice about the same batch answers the same (a batch the compiled path hands back to the
Python path is asked about again).  One object per fetch answer, used by one thread.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterable

from .codecs import decompress
from .varints import varint

# producerId (int64) at byte 43 of a v2 batch header, the attributes (int16) at byte 21
_PRODUCER_ID = struct.Struct(">q")
_PRODUCER_ID_AT = 43
_TRANSACTIONAL_MASK, _CONTROL_MASK, _COMPRESSION_MASK = 0x10, 0x20, 0x07
_HEADER_SIZE = 61
# a control record's key: version (int16), type (int16); type 0 is ABORT, 1 COMMIT
_CONTROL_KEY = struct.Struct(">hh")
_ABORT = 0


class AbortedTransactions:
    """The aborted transactions of one partition's fetch answer, consumed in offset order."""

    def __init__(self, aborted: Iterable[tuple[int, int]]) -> None:
        """``aborted``: (producer id, first offset) pairs, as the Fetch answer lists them."""
        self._pending = deque(sorted(aborted, key=lambda pair: pair[1]))
        self._producers: set[int] = set()

    def leaves_out(self, buf: bytes, pos: int, base_offset: int, last_offset: int, attributes: int) -> bool:
        """Whether the v2 batch at ``buf[pos:]`` (whole, its header read by the caller) is part of
        an aborted transaction.  Raises ValueError for an abort marker without a readable key."""
        producer_id = _PRODUCER_ID.unpack_from(buf, pos + _PRODUCER_ID_AT)[0]
        if producer_id < 0:  # not written by an idempotent or transactional producer
            return False
        while self._pending and self._pending[0][1] <= last_offset:
            self._producers.add(self._pending.popleft()[0])
        if attributes & _CONTROL_MASK:
            if producer_id in self._producers and _control_type(buf, pos, attributes) == _ABORT:
                self._producers.discard(producer_id)
            return False  # markers are never records: both paths skip them anyway
        return bool(attributes & _TRANSACTIONAL_MASK) and producer_id in self._producers


def _control_type(buf: bytes, pos: int, attributes: int) -> int:
    """The type of a control batch's (first) record: its key's second int16."""
    length = struct.unpack_from(">i", buf, pos + 8)[0]
    section = buf[pos + _HEADER_SIZE:pos + 12 + length]
    if attributes & _COMPRESSION_MASK:  # Kafka writes markers uncompressed; read one that is not too
        section = decompress(attributes & _COMPRESSION_MASK, section)
    p = varint(section, 0)[1] + 1  # the record's length, its attributes
    p = varint(section, p)[1]  # timestamp delta
    p = varint(section, p)[1]  # offset delta
    key_length, p = varint(section, p)
    if key_length < _CONTROL_KEY.size or p + key_length > len(section):
        raise ValueError(f"a control record with a key of {key_length} bytes")
    return int(_CONTROL_KEY.unpack_from(section, p)[1])
