"""The loop an executor task runs as one member of the group.

poll → hand the records over (``deliver``) → commit what was handed over → check the stop
conditions, until one is met; then leave the group, so its partitions go to the members still
consuming.  ``deliver`` returning is what "delivered" means: a batch read's ``deliver`` writes a
durable staging file, a long-running consumer's calls the user's function.  A commit never
covers a record ``deliver`` has not returned from.

Runs on the executor; imports nothing from pyspark, so it is tested without Spark.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..structs import OffsetAndMetadata, TopicPartition

from ..clock import Clock, SystemClock
from ..consumer.group_consumer import GroupConsumer
from ..errors import CommitFailedError, KafkaTimeoutError, RebalanceInProgressError
from .stop import Progress, StopWhen

log = logging.getLogger("groupclient.spark")

Deliver = Callable[[list[Any]], None]
OnCommit = Callable[["TaskInfo", dict[tuple[str, int], int]], None]
EndOffsets = Mapping[str, Mapping[int, int]]  # topic -> partition -> end offset (plain, picklable)


@dataclass(frozen=True)
class TaskInfo:
    """Which Spark task this member is: its partition index and attempt number."""

    index: int
    attempt: int = 0
    job: str = ""


@dataclass
class MemberReport:
    """What one member task did; one row per task comes back to the driver."""

    task: int
    attempt: int
    member_id: str = ""
    records: int = 0
    batches: int = 0
    rebalances: int = 0
    failed_commits: int = 0
    partitions: list[str] = field(default_factory=list)  # every partition it owned at some time
    stop_reason: str = ""

    def as_row(self) -> dict[str, Any]:
        return dict(self.__dict__)


class _Listener:
    def __init__(self, report: MemberReport) -> None:
        self.report = report

    def on_partitions_revoked(self, revoked: Any) -> None:
        pass

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.report.rebalances += 1
        owned = set(self.report.partitions) | {f"{tp.topic}:{tp.partition}" for tp in assigned}
        self.report.partitions = sorted(owned)

    def on_partitions_lost(self, lost: Any) -> None:
        pass


def run_member(topics: list[str], config: dict[str, Any], deliver: Deliver, stop: StopWhen, task: TaskInfo, *,
               end_offsets: EndOffsets | None = None, on_commit: OnCommit | None = None,
               commit_metadata: str = "", clock: Clock | None = None) -> MemberReport:
    """Consume as one member until ``stop``; see the module's doc.

    ``end_offsets`` bounds what is read: records at or past a partition's end are not delivered,
    and a partition missing from it (created after the job started) is not read at all."""
    if stop.at_end and end_offsets is None:
        raise ValueError("StopWhen(at_end=True) needs the end offsets taken when the job started")
    clock = clock or SystemClock()
    report = MemberReport(task.index, task.attempt)
    ends = {TopicPartition(t, int(p)): int(e) for t, parts in (end_offsets or {}).items() for p, e in parts.items()}
    consumer = GroupConsumer(**config)
    try:
        consumer.subscribe(topics, listener=_Listener(report))
        progress = Progress(0, clock.monotonic_ms())
        retry: dict[TopicPartition, int] = {}
        while True:
            wait = stop.wait_ms(progress, clock.monotonic_ms(), clock.wall_ms(), 500)
            batch = consumer.poll(timeout_ms=wait)
            records, offsets = _bounded(consumer, batch, ends if end_offsets is not None else None)
            if records:
                deliver(records)
                report.records += len(records)
                report.batches += 1
                progress.records = report.records
                progress.last_record_ms = clock.monotonic_ms()
            if retry:  # commits refused while the group rebalanced, for partitions still owned
                offsets = {**{tp: o for tp, o in retry.items() if tp in consumer.assignment()}, **offsets}
            if offsets:
                retry = _commit(consumer, offsets, commit_metadata, report, task, on_commit)
            progress.at_end = not retry and end_offsets is not None and _owned_all_at_end(consumer, ends)
            reason = stop.reason(progress, clock.monotonic_ms(), clock.wall_ms())
            if reason is not None:
                report.stop_reason = reason
                report.member_id = consumer.group_metadata().member_id
                return report
    finally:
        consumer.close(autocommit=False)


def _bounded(consumer: GroupConsumer, batch: dict[TopicPartition, list[Any]],
             ends: dict[TopicPartition, int] | None) -> tuple[list[Any], dict[TopicPartition, int]]:
    """The records of ``batch`` below their partition's end, and the offsets to commit for them."""
    records: list[Any] = []
    offsets: dict[TopicPartition, int] = {}
    for tp, recs in batch.items():
        if ends is None:
            kept = recs
        elif tp not in ends:
            consumer.pause(tp)  # created after the job started: not part of this read
            continue
        else:
            kept = [r for r in recs if r.offset < ends[tp]]
            if len(kept) < len(recs):
                consumer.pause(tp)
                offsets[tp] = ends[tp]  # what lay between the last record and the end was no record
        if kept:
            records.extend(kept)
            offsets[tp] = max(offsets.get(tp, 0), kept[-1].offset + 1)
    return records, offsets


def _commit(consumer: GroupConsumer, offsets: dict[TopicPartition, int], metadata: str, report: MemberReport,
            task: TaskInfo, on_commit: OnCommit | None) -> dict[TopicPartition, int]:
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
    """This executor task's index and attempt (0, 0 outside Spark)."""
    try:
        from pyspark import TaskContext
    except ImportError:  # pragma: no cover - the spark extra installs pyspark
        return TaskInfo(0, 0, job)
    context = TaskContext.get()
    if context is None:
        return TaskInfo(0, 0, job)
    return TaskInfo(context.partitionId(), context.attemptNumber(), job)
