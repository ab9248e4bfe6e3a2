"""The loop an executor task runs as one member of the group.

poll → hand the records over (``Delivery.add``) → commit what has been delivered → check the
stop conditions, until one is met; then deliver what is pending, commit it and leave the group,
so its partitions go to the members still consuming.  What "delivered" means is the delivery's:
a batch read's (:class:`StagedDelivery`) gathers records and writes them as one durable file per
64 MB or 5 s, a long-running consumer's (:class:`HandOver`) calls the user's function with the
records of one or more polls.  A commit never covers a record whose delivery has not returned.  Before the
member gives partitions up in a rebalance it delivers and commits what it has of them (the
listener), so their next owner goes on from there.

With ``MemberOptions.members``, the member holds (pauses) what it is assigned until the group has
that many members (rendezvous.py), so they share the partitions from the start.

OpenTelemetry (telemetry.py): the configuration's ``otel_setup`` runs first (once per process),
the member's consumer carries its task on every span and measurement, and the run is a
``spark member {group}`` span that ends with the member's report.

Runs on the executor; imports nothing from pyspark, so it is tested without Spark.
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..structs import OffsetAndMetadata, TopicPartition

from ..clock import Clock, SystemClock
from ..consumer.group_consumer import GroupConsumer
from ..errors import CommitFailedError, InternalError, KafkaTimeoutError, RebalanceInProgressError
from ..consumer.columns import RecordColumns
from ..otel import semconv as names
from .arrow import columns_to_batch
from .rendezvous import JOIN_TIMEOUT_MS, GroupRendezvous
from .staging import PendingFile, Staging
from .stop import Progress, StopWhen
from .telemetry import annotate, executor_settings, member_task, task_attributes

log = logging.getLogger("groupclient.spark")

# a poll's records below the end offsets, by partition, as columns (consumer/columns.py)
Polled = dict[TopicPartition, list[RecordColumns]]
Offsets = dict[TopicPartition, int]
OnCommit = Callable[["TaskInfo", dict[tuple[str, int], int]], None]
EndOffsets = Mapping[str, Mapping[int, int]]  # topic -> partition -> end offset (plain, picklable)


class Delivery(Protocol):
    """Where a member's records go before their offsets are committed."""

    def add(self, records: Polled, offsets: Offsets, now_ms: int) -> Offsets:
        """Take a poll's records; returns the offsets that are delivered now (to commit)."""

    def due(self, now_ms: int) -> Offsets:
        """Deliver what has waited long enough; returns the offsets that are delivered now."""

    def flush(self) -> Offsets:
        """Deliver everything pending (before a rebalance gives partitions up, or a stop)."""

    def forget(self, partitions: set[TopicPartition]) -> None:
        """Drop what is pending of lost partitions: their next owner reads them again."""

    def pending(self) -> bool:
        """Whether records or offsets wait for delivery."""

    @property
    def batches(self) -> int:
        """How many batches it has delivered (handler calls, staged files)."""


BATCH_BYTES = 256 << 20  # keys and values gathered before a batch is handed over, whatever its count


def _payload_bytes(part: RecordColumns) -> int:
    return int(np.frombuffer(part.key_length, np.int64).clip(0).sum()
               + np.frombuffer(part.value_length, np.int64).clip(0).sum())


class HandOver:
    """Records to ``handler`` in batches gathered over polls, handed over once ``batch_records``
    records (or 256 MB of keys and values) are gathered, when the oldest has waited ``batch_ms``,
    when a poll finds nothing new (caught up), and before a rebalance or a stop; delivered when
    ``handler`` returns.  (A commit per poll of 500 records was most of a member's time on Kafka.)"""

    def __init__(self, handler: Callable[[Polled], None], batch_records: int = 10_000, batch_ms: int = 1000) -> None:
        self.handler = handler
        self.batch_records = batch_records
        self.batch_ms = batch_ms
        self._records: Polled = {}
        self._offsets: Offsets = {}
        self._count = 0
        self._bytes = 0  # of keys and values
        self._since_ms: int | None = None
        self.batches = 0  # handed over

    def add(self, records: Polled, offsets: Offsets, now_ms: int) -> Offsets:
        for tp, recs in records.items():
            self._records.setdefault(tp, []).extend(recs)
            self._count += sum(len(part) for part in recs)
            self._bytes += sum(_payload_bytes(part) for part in recs)
        self._offsets.update(offsets)
        if self._since_ms is None:
            self._since_ms = now_ms
        if (self._count >= self.batch_records or self._bytes >= BATCH_BYTES
                or now_ms - self._since_ms >= self.batch_ms):
            return self.flush()
        return {}

    def due(self, now_ms: int) -> Offsets:
        # called after a poll that brought nothing new: caught up, so nothing is gained by waiting
        return self.flush()

    def flush(self) -> Offsets:
        records, offsets = self._records, self._offsets
        self._records, self._offsets, self._count, self._bytes, self._since_ms = {}, {}, 0, 0, None
        if records:
            self.handler(records)
            self.batches += 1
        return offsets

    def forget(self, partitions: set[TopicPartition]) -> None:
        for tp in partitions:
            parts = self._records.pop(tp, [])
            self._count -= sum(len(part) for part in parts)
            self._bytes -= sum(_payload_bytes(part) for part in parts)
            self._offsets.pop(tp, None)
        if not self._offsets:
            self._since_ms = None

    def pending(self) -> bool:
        return self._since_ms is not None


class StagedDelivery:
    """A batch read's delivery: records gathered into one file per ``file_bytes`` or
    ``file_ms`` (staging.py), delivered once the file is durable."""

    def __init__(self, staging: Staging, name: Callable[[int], str], file_bytes: int, file_ms: int) -> None:
        self.staging = staging
        self.name = name  # the file name of the n-th file
        self.batches = 0  # files written
        self.pending_file = PendingFile(file_bytes, file_ms)

    def add(self, records: Polled, offsets: Offsets, now_ms: int) -> Offsets:
        for tp, offset in offsets.items():
            recs = records.get(tp)
            self.pending_file.add(tp, columns_to_batch(recs) if recs else None, offset, now_ms)
        return self.due(now_ms)

    def due(self, now_ms: int) -> Offsets:
        return self.flush() if self.pending_file.due(now_ms) else {}

    def flush(self) -> Offsets:
        table, ranges, offsets = self.pending_file.take()
        if table is not None:
            self.batches += 1
            self.staging.write(table, self.name(self.batches), ranges)
        return offsets

    def forget(self, partitions: set[TopicPartition]) -> None:
        self.pending_file.forget(partitions)

    def pending(self) -> bool:
        return not self.pending_file.empty()


@dataclass(frozen=True)
class TaskInfo:
    """Which Spark task this member is: its partition index, attempt number and stage (None
    outside Spark)."""

    index: int
    attempt: int = 0
    job: str = ""
    stage: int | None = None


@dataclass
class MemberReport:
    """What one member task did; one row per task comes back to the driver."""

    task: int
    attempt: int
    member_id: str = ""
    records: int = 0
    batches: int = 0
    rebalances: int = 0
    commits: int = 0  # that succeeded
    failed_commits: int = 0
    partitions: list[str] = field(default_factory=list)  # every partition it owned at some time
    stop_reason: str = ""
    waited_ms: int = 0  # how long it held its partitions waiting for the other members

    def as_row(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def span_attributes(self) -> dict[str, Any]:
        """The report as attributes of the member's span (telemetry.py)."""
        found: dict[str, Any] = {names.SPARK_RECORDS: self.records, names.SPARK_BATCHES: self.batches,
                                 names.SPARK_COMMITS: self.commits, names.SPARK_FAILED_COMMITS: self.failed_commits,
                                 names.SPARK_REBALANCES: self.rebalances, names.SPARK_WAITED_MS: self.waited_ms}
        if self.stop_reason:
            found[names.SPARK_OUTCOME] = self.stop_reason
        if self.member_id:
            found[names.MEMBER_ID] = self.member_id
        return found


@dataclass
class MemberOptions:
    """How :func:`run_member` goes about it, beyond what to read and where to deliver it."""

    end_offsets: EndOffsets | None = None  # bounds the read; see run_member
    on_commit: OnCommit | None = None
    commit_metadata: str = ""
    members: int | None = None  # hold until the group has this many members (rendezvous.py)
    join_timeout_ms: int = JOIN_TIMEOUT_MS
    clock: Clock | None = None


class _Member:
    """One member's state, shared by its loop and its rebalance listener (both on the task's
    thread: the listener runs inside poll())."""

    def __init__(self, consumer: GroupConsumer, delivery: Delivery, report: MemberReport, task: TaskInfo,
                 options: MemberOptions) -> None:
        self.consumer = consumer
        self.delivery = delivery
        self.report = report
        self.task = task
        self.options = options
        self.retry: Offsets = {}  # commits refused while the group rebalanced
        self.holding = options.members is not None

    # the rebalance listener
    def on_partitions_revoked(self, revoked: Any) -> None:
        # what was polled of any partition is delivered and committed while this member still
        # owns it: the next owner goes on from there.  A commit of a revoked partition refused
        # now is not tried again: should the partition come back, its new owner may have moved
        # the group on past it
        self.commit(self.delivery.flush())
        for tp in revoked:
            self.retry.pop(tp, None)

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.report.rebalances += 1
        owned = set(self.report.partitions) | {f"{tp.topic}:{tp.partition}" for tp in assigned}
        self.report.partitions = sorted(owned)
        if self.holding and assigned:
            self.consumer.pause(*assigned)

    def on_partitions_lost(self, lost: Any) -> None:
        self.delivery.forget(set(lost))
        for tp in lost:
            self.retry.pop(tp, None)

    def commit(self, offsets: Offsets) -> None:
        """Commit ``offsets`` (and those refused before, for partitions still owned)."""
        if self.retry:
            owned = self.consumer.assignment()
            offsets = {**{tp: o for tp, o in self.retry.items() if tp in owned}, **offsets}
        if not offsets:
            self.retry = {}
            return
        self.retry = _commit(self.consumer, offsets, self.options.commit_metadata, self.report, self.task,
                             self.options.on_commit)

    def hold_until_all_joined(self, clock: Clock) -> None:
        """Poll with every partition paused until the group has every member of the job and
        this member is stable (rendezvous.py), or the join timeout."""
        assert self.options.members is not None
        consumer = self.consumer
        rendezvous = GroupRendezvous(consumer.config, self.options.members, clock)
        started = clock.monotonic_ms()
        give_up = started + self.options.join_timeout_ms
        try:
            while True:
                if consumer.poll(timeout_ms=20):
                    # every assigned partition is paused while holding: records would be skipped
                    raise InternalError("a holding member received records")
                verdict = rendezvous.verdict(consumer.group_metadata().phase == "stable")
                if verdict == "read":
                    break
                if verdict == "rejoin":
                    consumer.enforce_rebalance("another member of the Spark job joined")
                if clock.monotonic_ms() >= give_up:
                    log.warning("not every member joined group %s within %d ms; reading what this member owns",
                                consumer.config["group_id"], self.options.join_timeout_ms)
                    break
        finally:
            rendezvous.close()
        self.holding = False
        self.report.waited_ms = clock.monotonic_ms() - started
        owned = consumer.assignment()
        if owned:
            consumer.resume(*owned)


def run_member(topics: list[str], config: dict[str, Any], delivery: Delivery, stop: StopWhen, task: TaskInfo,
               options: MemberOptions | None = None) -> MemberReport:
    """Consume as one member until ``stop``; see the module's doc.

    ``options.end_offsets`` bounds what is read: records at or past a partition's end are not
    delivered, and a partition missing from it (created after the job started) is not read.
    ``config`` may hold ``otel_setup`` (options.py), run before the consumer is built."""
    options = options or MemberOptions()
    if stop.at_end and options.end_offsets is None:
        raise ValueError("StopWhen(at_end=True) needs the end offsets taken when the job started")
    settings = executor_settings(config)
    report = MemberReport(task.index, task.attempt)
    attributes = task_attributes(task.index, task.attempt, task.stage)
    with member_task(str(settings.get("group_id") or ""), attributes, report.span_attributes):
        return _run(topics, settings, delivery, stop, task, options, report, attributes)


def _run(topics: list[str], settings: dict[str, Any], delivery: Delivery, stop: StopWhen, task: TaskInfo,
         options: MemberOptions, report: MemberReport, attributes: dict[str, int]) -> MemberReport:
    """run_member's loop, with the consumer ``settings`` (no ``otel_setup``) and the task's
    telemetry ``attributes``."""
    clock = options.clock or SystemClock()
    bounded = options.end_offsets is not None
    ends = {TopicPartition(t, int(p)): int(e) for t, parts in (options.end_offsets or {}).items()
            for p, e in parts.items()}
    consumer = GroupConsumer(**settings)
    try:
        annotate(consumer, attributes)  # before its first poll: every span and measurement has them
        member = _Member(consumer, delivery, report, task, options)
        consumer.subscribe(topics, listener=member)
        if member.holding:
            member.hold_until_all_joined(clock)
        progress = Progress(0, clock.monotonic_ms())
        while True:
            wait = stop.wait_ms(progress, clock.monotonic_ms(), clock.wall_ms(), 500)
            batch = consumer._poll_columns(timeout_ms=wait)  # noqa: SLF001 - the columnar poll is groupclient.spark's
            records, offsets, done = _bounded(batch, ends if bounded else None)
            if done:
                consumer.pause(*done)
            member.commit(delivery.add(records, offsets, clock.monotonic_ms()) if offsets
                          else delivery.due(clock.monotonic_ms()))
            count = sum(len(part) for parts in records.values() for part in parts)
            if count:
                report.records += count
                progress.records = report.records
                progress.last_record_ms = clock.monotonic_ms()
            owned_at_end = bounded and _owned_all_at_end(consumer, ends)
            if owned_at_end and delivery.pending():
                # everything owned is read: stage it now rather than when the file is due
                member.commit(delivery.flush())
            progress.at_end = owned_at_end and not member.retry and not delivery.pending()
            reason = stop.reason(progress, clock.monotonic_ms(), clock.wall_ms())
            if reason is None:
                continue
            member.commit(delivery.flush())
            report.stop_reason = reason
            report.member_id = consumer.group_metadata().member_id
            return report
    finally:
        report.batches = delivery.batches
        consumer.close(autocommit=False)


def _bounded(batch: Polled, ends: dict[TopicPartition, int] | None) -> tuple[Polled, Offsets, set[TopicPartition]]:
    """The records of ``batch`` below their partition's end, the offsets to commit for them, and
    the partitions to pause: those read to their end, and those the read does not cover."""
    records: Polled = {}
    offsets: Offsets = {}
    done: set[TopicPartition] = set()
    for tp, parts in batch.items():
        if ends is None:
            kept = parts
        elif tp not in ends:
            done.add(tp)  # created after the job started: not part of this read
            continue
        else:
            end = ends[tp]
            kept = [part for part in parts if part.offsets[0] < end]
            if kept and kept[-1].last_offset >= end:
                kept[-1] = kept[-1].part(0, bisect_left(kept[-1].offsets, end))
            if parts[-1].last_offset >= end:
                done.add(tp)
                if parts[0].offsets[0] <= end:
                    # what lay between the last record and the end was no record.  (A first
                    # record past the end: another member consumed past it since the end was
                    # taken; committing the end would move the group back.)
                    offsets[tp] = end
            kept = [part for part in kept if len(part)]
        if kept:
            records[tp] = kept
            offsets[tp] = max(offsets.get(tp, 0), kept[-1].last_offset + 1)
    return records, offsets, done


def _commit(consumer: GroupConsumer, offsets: Offsets, metadata: str, report: MemberReport,
            task: TaskInfo, on_commit: OnCommit | None) -> Offsets:
    """Commit ``offsets``; returns those to commit again after the rebalance under way."""
    try:
        consumer.commit({tp: OffsetAndMetadata(o, metadata, -1) for tp, o in offsets.items()})
    except RebalanceInProgressError:
        # a cooperative member keeps its partitions while the group rebalances: it commits them
        # once the rebalance is over (those it gave up are the new owner's to re-read)
        return offsets
    except CommitFailedError as exc:
        # the group moved on: whoever owns these partitions now reads them again from the last
        # commit.  The records were delivered, so this is a duplicate, never a loss.
        report.failed_commits += 1
        log.warning("commit after delivery failed (%s); the new owner re-reads these records", exc)
        return {}
    report.commits += 1
    if on_commit is not None:
        on_commit(task, {(tp.topic, tp.partition): o for tp, o in offsets.items()})
    return {}


def _owned_all_at_end(consumer: GroupConsumer, ends: dict[TopicPartition, int]) -> bool:
    """True when the member is stable and every partition it owns is at or past its end."""
    if consumer.group_metadata().phase != "stable":
        return False
    for tp in consumer.assignment():
        end = ends.get(tp)
        if end is None:
            continue
        try:
            position = consumer.position(tp, timeout_ms=0 if tp in consumer.paused() else 1000)
        except KafkaTimeoutError:
            return False
        if position < end:
            return False
    return True


def task_info(job: str = "") -> TaskInfo:
    """This executor task's index, attempt and stage (0, 0 and None outside Spark)."""
    try:
        from pyspark import TaskContext
    except ImportError:  # pragma: no cover - the spark extra installs pyspark
        return TaskInfo(0, 0, job)
    context = TaskContext.get()
    if context is None:
        return TaskInfo(0, 0, job)
    return TaskInfo(context.partitionId(), context.attemptNumber(), job, context.stageId())
