"""Topic partitions as lists of record batches (magic v2), stored as produced.

The broker assigns offsets by rewriting each batch's base offset; everything else in the batch
(and so its CRC) stays as the producer wrote it.  There is no replication: the high watermark
is the log end offset.
"""

from __future__ import annotations

import bisect
import json
import logging
import random
import struct
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from kafka.record.util import calc_crc32c

from ...error_codes import ErrorCode
from ...protocol.names import name_problem
from .journal import Journal, OpenFiles

log = logging.getLogger("groupclient.coordinator.storage")

# baseOffset:i64 batchLength:i32 partitionLeaderEpoch:i32 magic:i8 crc:u32 attributes:i16
# lastOffsetDelta:i32 baseTimestamp:i64 maxTimestamp:i64 producerId:i64 producerEpoch:i16
# baseSequence:i32 recordCount:i32
_BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
_LENGTH_PREFIX = 12  # baseOffset + batchLength
_CRC_START = 21


class InvalidRecords(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


def validate_topic_name(name: str | None) -> str | None:
    """Kafka's Topic.validate; returns a reason, or None if the name is legal."""
    return name_problem(name)


@dataclass
class ProducerState:
    """Sequence tracking of one idempotent producer on one partition (last five batches)."""

    epoch: int
    last_sequence: int
    recent: list[tuple[int, int, int]] = field(default_factory=list)  # (first seq, last seq, base offset)


class ProducerIds:
    """Hands out producer ids; starts from the wall clock (``first``: its milliseconds shifted
    left by 8) so restarts do not reuse them."""

    def __init__(self, first: int) -> None:
        self._next = first
        self._epochs: dict[int, int] = {}

    def allocate(self, producer_id: int, epoch: int) -> tuple[int, int]:
        if producer_id >= 0 and self._epochs.get(producer_id) == epoch:
            # KIP-360: a known producer bumps its epoch instead of getting a new id
            self._epochs[producer_id] = epoch + 1
            return producer_id, epoch + 1
        self._next += 1
        self._epochs[self._next] = 0
        return self._next, 0


@dataclass(frozen=True)
class StoredBatch:
    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes


def split_batches(records: bytes, max_batch_bytes: int) -> list[tuple[bytearray, int, int]]:
    """Parse and check the batches of a produce request: (batch, lastOffsetDelta, maxTimestamp)."""
    view = memoryview(records)
    pos = 0
    batches = []
    while pos < len(view):
        if len(view) - pos < _BATCH_HEADER.size:
            raise InvalidRecords(ErrorCode.CORRUPT_MESSAGE, "truncated record batch header")
        (_, length, _, magic, crc, _, last_delta, _, max_ts, _, _, _, count) = _BATCH_HEADER.unpack_from(view, pos)
        size = _LENGTH_PREFIX + length
        if magic != 2:
            raise InvalidRecords(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, f"record batch magic {magic}, need 2")
        if length < _BATCH_HEADER.size - _LENGTH_PREFIX or pos + size > len(view):
            raise InvalidRecords(ErrorCode.CORRUPT_MESSAGE, "record batch length runs past the data")
        if size > max_batch_bytes:
            raise InvalidRecords(ErrorCode.MESSAGE_TOO_LARGE, f"record batch of {size} bytes")
        if last_delta < 0 or count < 0:
            raise InvalidRecords(ErrorCode.CORRUPT_MESSAGE, "negative record count")
        if calc_crc32c(view[pos + _CRC_START : pos + size]) != crc:
            raise InvalidRecords(ErrorCode.CORRUPT_MESSAGE, "record batch CRC mismatch")
        batches.append((bytearray(view[pos : pos + size]), last_delta, max_ts))
        pos += size
    if not batches:
        raise InvalidRecords(ErrorCode.INVALID_RECORD, "no record batch in the request")
    return batches


class PartitionLog:
    def __init__(self, journal: Journal | None = None) -> None:
        self.batches: list[StoredBatch] = []
        self._last_offsets: list[int] = []
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.producers: dict[int, ProducerState] = {}
        self._journal = journal
        if journal is not None:
            for entry in journal.replay():
                self._add(bytes(entry))

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    @property
    def journal(self) -> Journal | None:
        """Where the partition's records are kept, if anywhere."""
        return self._journal

    def remove(self) -> None:
        """The partition's topic is deleted: close and delete its journal, forget its records."""
        if self._journal is not None:
            self._journal.close()
            self._journal.path.unlink(missing_ok=True)
            self._journal = None
        self.batches.clear()
        self._last_offsets.clear()

    def append(self, records: bytes, max_batch_bytes: int) -> int:
        """Append every batch or none; return the base offset of the first."""
        parsed = split_batches(records, max_batch_bytes)
        duplicates = [self._check_sequence(batch) for batch, _, _ in parsed]
        first = next((d for d in duplicates if d is not None), self.log_end_offset)
        offset = self.log_end_offset
        for (batch, last_delta, _), duplicate in zip(parsed, duplicates):
            if duplicate is not None:
                continue  # an idempotent producer's retry of a batch we already have
            struct.pack_into(">q", batch, 0, offset)
            offset += last_delta + 1
            data = bytes(batch)
            if self._journal is not None:
                self._journal.append(data)
            self._add(data)
        return first

    def _check_sequence(self, batch: bytearray) -> int | None:
        """Base offset of an identical earlier batch, None for a new one; raise if out of order."""
        (_, _, _, _, _, _, last_delta, _, _, pid, epoch, first_seq, _) = _BATCH_HEADER.unpack_from(batch, 0)
        if pid < 0 or first_seq < 0:
            return None
        state = self.producers.get(pid)
        if state is None or epoch > state.epoch:
            return None
        if epoch < state.epoch:
            raise InvalidRecords(ErrorCode.INVALID_PRODUCER_EPOCH, f"producer {pid} epoch {epoch} is fenced")
        for seq_first, seq_last, base in state.recent:
            if seq_first == first_seq and seq_last == first_seq + last_delta:
                return base
        if first_seq != state.last_sequence + 1:
            raise InvalidRecords(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 f"producer {pid}: sequence {first_seq}, expected {state.last_sequence + 1}")
        return None

    def _add(self, data: bytes) -> None:
        (base, _, _, _, _, _, last_delta, _, max_ts, pid, epoch, first_seq, _) = _BATCH_HEADER.unpack_from(data, 0)
        stored = StoredBatch(base, base + last_delta, max_ts, data)
        if pid >= 0 and first_seq >= 0:
            state = self.producers.get(pid)
            if state is None or state.epoch != epoch:
                state = self.producers[pid] = ProducerState(epoch, -1)
            state.last_sequence = first_seq + last_delta
            state.recent = [*state.recent[-4:], (first_seq, first_seq + last_delta, base)]
        self.batches.append(stored)
        self._last_offsets.append(stored.last_offset)
        self.log_end_offset = stored.last_offset + 1

    def read(self, fetch_offset: int, max_bytes: int, at_least_one: bool = True) -> bytes:
        """Whole batches from the one holding ``fetch_offset``, up to ``max_bytes``.

        With ``at_least_one`` the first batch is returned even if it is larger (KIP-74), so a
        consumer can never be stuck behind a batch bigger than its fetch size.
        """
        if not at_least_one:
            index = bisect.bisect_left(self._last_offsets, fetch_offset)
            if index < len(self.batches) and len(self.batches[index].data) > max_bytes:
                return b""
        return b"".join(stored.data for stored in self.batches_from(fetch_offset, max_bytes))

    def batches_from(self, fetch_offset: int, max_bytes: int) -> list[StoredBatch]:
        """:meth:`read`'s batches, as stored (offsets and bytes)."""
        index = bisect.bisect_left(self._last_offsets, fetch_offset)
        out: list[StoredBatch] = []
        total = 0
        for stored in self.batches[index:]:
            if out and total + len(stored.data) > max_bytes:
                break
            out.append(stored)
            total += len(stored.data)
        return out

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """First offset whose record timestamp is >= ``timestamp`` (batch granularity first)."""
        from kafka.record.default_records import DefaultRecordBatch

        for stored in self.batches:
            if stored.max_timestamp < timestamp:
                continue
            for record in DefaultRecordBatch(stored.data):
                if record.timestamp >= timestamp:
                    return record.offset, record.timestamp
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        from kafka.record.default_records import DefaultRecordBatch

        best: tuple[int, int] | None = None
        for stored in self.batches:
            if best is not None and stored.max_timestamp < best[1]:
                continue
            for record in DefaultRecordBatch(stored.data):
                if best is None or record.timestamp > best[1]:
                    best = (record.offset, record.timestamp)
        return best


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionLog] = field(default_factory=list)


class TopicStore:
    """Every topic, in memory, and with a data dir also in journals: ``topics.journal`` (the
    catalog: a topic exists once its entry is there) and one journal per partition under
    ``logs/``, created by its first append.  Partition journals share an :class:`OpenFiles`
    budget of ``max_open_files`` descriptors."""

    def __init__(self, data_dir: Path | None = None, fsync: bool = False, max_open_files: int = 128,
                 rng: random.Random | None = None, first_producer_id: int | None = None) -> None:
        """``rng`` makes the topic ids; ``first_producer_id`` (default: from the wall clock)."""
        self._rng = rng or random.Random()
        self.topics: dict[str, Topic] = {}
        self.partition_count = 0
        self._ids_and_counts: Mapping[str, tuple[uuid.UUID, int]] | None = None
        self._names_by_id: dict[uuid.UUID, str] | None = None
        self._dir = data_dir
        self._fsync = fsync
        self._open_files = OpenFiles(max_open_files)
        self._journals: list[Journal] = []
        self.producers = ProducerIds(first_producer_id if first_producer_id is not None
                                     else (time.time_ns() // 1_000_000) << 8)
        self._catalog = Journal(data_dir / "topics.journal", fsync) if data_dir else None
        self.on_append: Callable[[str, int], None] | None = None
        if self._catalog is not None:
            self._journals.append(self._catalog)
            # the last entry of a name wins: a creation, a growth (more partitions), a deletion
            catalog: dict[str, dict[str, Any]] = {}
            for entry in self._catalog.replay():
                record = json.loads(entry)
                catalog.pop(record["name"], None)  # a re-created name goes last, as it went
                if not record.get("deleted"):
                    catalog[record["name"]] = record
            for record in catalog.values():
                self._register(self._build(record["name"], record["partitions"], uuid.UUID(record["topic_id"])))

    def _build(self, name: str, partitions: int, topic_id: uuid.UUID) -> Topic:
        """The topic in memory, its journals (if any) read, nothing written."""
        topic = Topic(name, topic_id)
        self._add_partitions(topic, partitions)
        return topic

    def _add_partitions(self, topic: Topic, count: int) -> None:
        for index in range(len(topic.partitions), len(topic.partitions) + count):
            journal = None
            if self._dir is not None:
                journal = Journal(self._dir / "logs" / _journal_name(topic.name, topic.topic_id, index), self._fsync,
                                  self._open_files)
                self._journals.append(journal)
            topic.partitions.append(PartitionLog(journal))

    def _register(self, topic: Topic) -> Topic:
        self.topics[topic.name] = topic
        self.partition_count += len(topic.partitions)
        self._changed()
        return topic

    def _changed(self) -> None:
        self._ids_and_counts = None
        self._names_by_id = None

    def grow(self, name: str, total: int) -> Topic:
        """Give a topic more partitions, ``total`` in all (CreatePartitions)."""
        topic = self.topics[name]
        if total <= len(topic.partitions):
            raise ValueError(f"topic {name!r} has {len(topic.partitions)} partitions; it can only grow")
        added = total - len(topic.partitions)
        self._add_partitions(topic, added)
        self.partition_count += added
        if self._catalog is not None:
            record = {"name": name, "partitions": total, "topic_id": str(topic.topic_id)}
            self._catalog.append(json.dumps(record).encode())
        self._changed()
        log.info("topic %s grew to %d partitions", name, total)
        return topic

    def delete(self, name: str) -> Topic:
        """Delete a topic and its records (DeleteTopics); a topic created later under the same name
        is another topic, with another id."""
        topic = self.topics.pop(name)
        self.partition_count -= len(topic.partitions)
        removed = {id(j) for j in (p.journal for p in topic.partitions) if j is not None}
        for partition in topic.partitions:
            partition.remove()
        self._journals = [j for j in self._journals if id(j) not in removed]
        if self._catalog is not None:
            # after the partitions' files: a crash in between leaves the topic, emptied, not the
            # files of a deleted topic for a later topic of the same name to read
            self._catalog.append(json.dumps({"name": name, "deleted": True}).encode())
        self._changed()
        log.info("deleted topic %s (%d partitions)", name, len(topic.partitions))
        return topic

    def ids_and_counts(self) -> Mapping[str, tuple[uuid.UUID, int]]:
        """Every topic's id and partition count, by name: the same object until a topic is
        created (consumer groups compare subscriptions against it on every heartbeat)."""
        if self._ids_and_counts is None:
            self._ids_and_counts = MappingProxyType(
                {name: (t.topic_id, len(t.partitions)) for name, t in self.topics.items()})
        return self._ids_and_counts

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic with that id, if there is one."""
        if self._names_by_id is None:
            self._names_by_id = {t.topic_id: name for name, t in self.topics.items()}
        return self._names_by_id.get(topic_id)

    def create(self, name: str, partitions: int) -> Topic:
        reason = validate_topic_name(name)
        if reason:
            raise ValueError(reason)
        if partitions < 1:
            raise ValueError("a topic needs at least one partition")
        if name in self.topics:
            raise KeyError(f"topic {name!r} already exists")
        topic = self._build(name, partitions, uuid.UUID(int=self._rng.getrandbits(128), version=4))
        if self._catalog is not None:
            # last: a topic that could not be built (or a failed write) leaves no entry behind,
            # and an entry is whole or cut off on the next start (one checksummed write)
            record = {"name": name, "partitions": partitions, "topic_id": str(topic.topic_id)}
            self._catalog.append(json.dumps(record).encode())
        log.info("created topic %s with %d partitions", name, partitions)
        return self._register(topic)

    def open_files(self) -> int:
        """Descriptors the partition journals hold now (at most max_open_files)."""
        return len(self._open_files)

    def partition(self, name: str, index: int) -> PartitionLog | None:
        topic = self.topics.get(name)
        if topic is None or not 0 <= index < len(topic.partitions):
            return None
        return topic.partitions[index]

    def append(self, name: str, index: int, records: bytes, max_batch_bytes: int) -> int:
        log_ = self.partition(name, index)
        if log_ is None:
            raise InvalidRecords(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{name}-{index}")
        base = log_.append(records, max_batch_bytes)
        if self.on_append is not None:
            self.on_append(name, index)
        return base

    def close(self) -> None:
        for journal in self._journals:
            journal.close()


def _journal_name(topic: str, topic_id: uuid.UUID, partition: int) -> str:
    """``<topic>-<partition>.journal``; for a name so long (up to 249 characters are legal) that
    the file name and its ``.compacting`` rewrite would pass the 255-byte limit, the topic id
    stands in for most of it."""
    if len(topic) <= 200:
        return f"{topic}-{partition}.journal"
    return f"{topic[:64]}~{topic_id.hex}-{partition}.journal"
