"""``spark.read.format("groupclient")`` and ``spark.readStream.format("groupclient")``.

Register once per session with :func:`register` (``spark.dataSource.register(GroupDataSource)``).

Streaming: the query is one member of the group.  The member lives in the driver's long-running
Python process that Spark keeps for the stream reader; it owns partitions through the group
protocol like any other member and keeps all of them paused, so it never fetches: it only
heartbeats, rejoins and commits.  Each micro-batch reads, on the executors, the offset ranges of
the partitions the member owns (group-less consumers, ranges.py).  When Spark commits a
micro-batch, ``commit(end)`` commits its end offsets to the group as that member, so another
member of the group, Spark or not, and a restarted query go on from there.

Batch: the DataSourceReader API has no hook that runs once Spark has the data, and a DataFrame
may be evaluated several times, so a batch read through the data source reads the ranges from
the group's committed offsets to the end offsets and commits nothing.  To read and commit, use
groupclient.spark.read_batch().

OpenTelemetry (telemetry.py): the ``otel_setup`` option runs in each process that reads ranges and
in the query's member's, before their first consumer; a range reader's consumer carries its task
(partition id, attempt, and the stage of a batch read: a stream runs a new stage per micro-batch,
which would make each micro-batch new metric series).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..structs import OffsetAndMetadata, TopicPartition
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType,
                               TimestampType)

from ..consumer.group_consumer import GroupConsumer
from ..errors import CommitFailedError
from .member_loop import task_info
from .offsets import committed_offsets, committed_or_reset, flat, partitions_of
from .options import consumer_settings, parse_options, source_int, without_group
from .ranges import OffsetRange, read_range
from .telemetry import executor_settings, flush, reader_task, task_attributes

log = logging.getLogger("groupclient.spark")

SPARK_SCHEMA = StructType([
    StructField("topic", StringType()), StructField("partition", IntegerType()), StructField("offset", LongType()),
    StructField("timestamp", TimestampType()), StructField("key", BinaryType()), StructField("value", BinaryType()),
    StructField("headers", ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))),
])
_READ_TIMEOUT_MS = 300_000
_JOIN_TIMEOUT_MS = 60_000


class RangePartition(InputPartition):
    def __init__(self, span: OffsetRange) -> None:
        super().__init__(span)
        self.span = span


class GroupDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "groupclient"

    def schema(self) -> StructType:
        return SPARK_SCHEMA

    def reader(self, schema: StructType) -> GroupBatchReader:
        return GroupBatchReader(self.options)

    def streamReader(self, schema: StructType) -> GroupStreamReader:
        return GroupStreamReader(self.options)


def register(spark: Any) -> None:
    """Make ``format("groupclient")`` known to ``spark``'s readers."""
    spark.dataSource.register(GroupDataSource)


class _Reading:
    per_stage = True  # whether a reader's telemetry carries its task's stage

    def __init__(self, options: Mapping[str, str]) -> None:
        self.topics, self.config = parse_options(options)
        self.read_timeout_ms = source_int(options, "read_timeout_ms", _READ_TIMEOUT_MS)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        span = getattr(partition, "span", None)
        if span is None:  # Spark's placeholder when there was nothing to plan
            return iter(())
        return self._read(span)

    def _read(self, span: OffsetRange) -> Iterator[Any]:
        settings = executor_settings(self.config)
        task = task_info()
        attributes = task_attributes(task.index, task.attempt, task.stage if self.per_stage else None)
        with reader_task():
            yield from read_range(settings, span, self.read_timeout_ms, attributes=attributes)


class GroupBatchReader(_Reading, DataSourceReader):
    def partitions(self) -> Sequence[InputPartition]:
        with GroupConsumer(**consumer_settings(self.config)) as consumer:
            tps = partitions_of(consumer, self.topics)
            starts = committed_or_reset(consumer, tps)
            ends = consumer.end_offsets(tps)
        return [RangePartition(OffsetRange(tp.topic, tp.partition, starts[tp], ends[tp]))
                for tp in tps if starts[tp] < ends[tp]]


class GroupStreamReader(_Reading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    per_stage = False  # a stage per micro-batch: as an attribute, new metric series every micro-batch

    def __init__(self, options: Mapping[str, str]) -> None:
        super().__init__(options)
        self.join_timeout_ms = source_int(options, "join_timeout_ms", _JOIN_TIMEOUT_MS)
        self.max_records = source_int(options, "max_records_per_trigger", 0) or None
        self._member: GroupConsumer | None = None
        self._available_now: dict[TopicPartition, int] | None = None
        self._committed: dict[TopicPartition, int] = {}  # what the group has, as far as known

    # the reader is pickled to the executors for read(): the member stays on the driver
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_member"] = None
        return state

    def _owned(self) -> set[TopicPartition]:
        """Keep the membership going and return what the member owns once it is stable."""
        if self._member is None:
            # the member lives in a process Spark starts for the stream reader: otel_setup runs there
            member = GroupConsumer(**executor_settings(self.config))
            member.subscribe(self.topics, listener=_PauseEverything(member))
            self._member = member
        member = self._member
        give_up = _now_ms() + self.join_timeout_ms
        member.poll(timeout_ms=0)
        while member.group_metadata().phase != "stable" and _now_ms() < give_up:
            member.poll(timeout_ms=100)
        if member.group_metadata().phase != "stable":
            log.warning("the query's member has not joined group %s within %d ms", self.config["group_id"],
                        self.join_timeout_ms)
        return member.assignment()

    def initialOffset(self) -> dict[str, Any]:
        owned = sorted(self._owned())
        assert self._member is not None
        return _json(committed_or_reset(self._member, owned))

    def latestOffset(self, start: dict[str, Any] | None = None, limit: ReadLimit | None = None) -> dict[str, Any]:
        owned = sorted(self._owned())
        assert self._member is not None
        # Spark plans the next batch only after the previous one is done and in its commit log:
        # ``start`` (that batch's end) is processed, so it is committed to the group now
        self._commit_processed(flat(start or {}))
        ends = self._member.end_offsets(owned) if owned else {}
        if self._available_now is not None:
            ends = {tp: min(end, self._available_now.get(tp, end)) for tp, end in ends.items()}
        if isinstance(limit, ReadMaxRows) and ends:
            starts = self._starts(flat(start or {}), list(ends))
            ends = _within(limit.max_rows, starts, ends)
        return _json(ends)

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_records) if self.max_records else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        with GroupConsumer(**without_group(self.config)) as consumer:
            self._available_now = consumer.end_offsets(partitions_of(consumer, self.topics))

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        ends = flat(end)
        starts = self._starts(flat(start), list(ends))
        return [RangePartition(OffsetRange(tp.topic, tp.partition, min(starts[tp], ends[tp]), ends[tp]))
                for tp in sorted(ends) if starts[tp] < ends[tp]]

    def _starts(self, spark_starts: dict[TopicPartition, int], tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Where each partition's next batch starts: Spark's offset, or the group's commit when
        that is further on (another member consumed it while this query did not own it).
        ``auto_offset_reset`` decides only for a partition with neither."""
        if self._member is None:
            self._owned()
        assert self._member is not None
        group = committed_offsets(self._member, tps)
        starts = {tp: max(spark_starts[tp], group.get(tp, -1)) for tp in tps if tp in spark_starts}
        fresh = [tp for tp in tps if tp not in spark_starts]
        if fresh:
            starts.update(committed_or_reset(self._member, fresh))
        return starts

    def commit(self, end: dict[str, Any]) -> None:
        # Spark calls this for a batch only once it writes the next batch's offsets, which may
        # be never (an idle stream, a query that stops); latestOffset commits sooner
        self._commit_processed(flat(end))

    def _commit_processed(self, processed: dict[TopicPartition, int]) -> None:
        """Commit, for the partitions the member owns, offsets Spark has finished with, unless
        the group is already further on (another member consumed past them)."""
        member = self._member
        if member is None or not processed:
            return
        owned = member.assignment()
        offsets = {}
        for tp, offset in processed.items():
            if tp not in owned:
                continue
            if tp not in self._committed:
                found = member.committed(tp)
                self._committed[tp] = found if isinstance(found, int) else -1
            if offset > self._committed[tp]:
                offsets[tp] = offset
        if not offsets:
            return
        try:
            member.commit({tp: OffsetAndMetadata(o, "groupclient.spark stream", -1) for tp, o in offsets.items()})
        except CommitFailedError as exc:
            # the group moved on since this batch was planned: the partitions' new owners read the
            # batch again from the group's last commit (a duplicate, never a loss)
            log.warning("commit of a finished micro-batch failed (%s)", exc)
            self._committed.clear()
            return
        self._committed.update(offsets)

    def stop(self) -> None:
        if self._member is not None:
            self._member.close(autocommit=False)
            self._member = None
            flush()  # the process may end with os._exit (telemetry.py)


class _PauseEverything:
    """Keeps every partition the query's member owns paused: its records are read by the tasks."""

    def __init__(self, member: GroupConsumer) -> None:
        self.member = member

    def on_partitions_assigned(self, assigned: Any) -> None:
        if assigned:
            self.member.pause(*assigned)

    def on_partitions_revoked(self, revoked: Any) -> None:
        pass

    def on_partitions_lost(self, lost: Any) -> None:
        pass


def _within(max_rows: int, starts: dict[TopicPartition, int], ends: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
    """End offsets that hold at most ``max_rows`` records in all, shared out partition by
    partition, a partition with fewer than its share leaving the rest to the others."""
    left = max_rows
    capped = {tp: starts.get(tp, end) for tp, end in ends.items()}
    while left > 0:
        open_ = [tp for tp in sorted(ends) if capped[tp] < ends[tp]]
        if not open_:
            break
        share = max(1, left // len(open_))
        for tp in open_:
            take = min(share, ends[tp] - capped[tp], left)
            capped[tp] += take
            left -= take
            if left == 0:
                break
    return capped


def _json(offsets: Mapping[TopicPartition, int]) -> dict[str, Any]:
    # partitions as strings: Spark keeps offsets as JSON, whose keys are strings
    out: dict[str, dict[str, int]] = {}
    for tp, offset in sorted(offsets.items()):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offset)
    return out


def _now_ms() -> int:
    return int(time.monotonic() * 1000)
