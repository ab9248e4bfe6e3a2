"""Executor tasks consuming a share group (KIP-932): each task is a ``ShareConsumer`` handing
batches to a user function, accepting a batch once the function returns and releasing it when the
function raises.

A share group hands each record to one member at a time under an acquisition lock, so any number
of tasks can work on any number of partitions (more tasks than partitions too), and nothing needs
to be staged or committed by offset: what the function returned for is accepted, for good; what it
raised for goes back to the group at once, to be delivered again (to any task, with a higher
delivery count) until the group's ``share.delivery.count.limit``, after which the broker archives
it.  The task fails with the function's error, and Spark runs it again (``spark.task.maxFailures``).
A task that dies without a word (its executor lost) leaves its batch to the lock's end, after which
the broker delivers it again.

Each batch is one poll's records (``batch_records`` at most), with the columns of
``arrow.ARROW_SCHEMA`` and ``delivery_count``.  The function must finish a batch within the group's
``share.record.lock.duration.ms`` (30 s by default): past it the records may already be another
task's, and accepting them fails (counted in the report's ``acknowledgement_errors``; they are
delivered again).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..errors import ConfigurationError
from ..protocol.share_group import AcknowledgeType
from ..share.consumer import ShareConsumer
from ..share.settings import build_share_config
from .arrow import ARROW_SCHEMA, records_to_batch
from .member_loop import task_info
from .options import check_handler_arguments, topic_list
from .rendezvous import collect_rows
from .stop import Progress, StopWhen

log = logging.getLogger("groupclient.spark")

BATCH_FORMATS = ("arrow", "pandas")
SHARE_SCHEMA = ARROW_SCHEMA.append(pa.field("delivery_count", pa.int32()))
RELEASE_TIMEOUT_MS = 10_000  # how long a failing task waits for its batch's release to be taken


@dataclass
class ShareMemberReport:
    """What one share task did; one row per task comes back to the driver."""

    task: int
    attempt: int
    member_id: str = ""
    records: int = 0  # handed to the function
    batches: int = 0
    accepted: int = 0  # records whose ACCEPT the broker took
    acknowledgement_errors: int = 0  # records whose ACCEPT the broker refused (their lock ran out)
    redelivered: int = 0  # records handed over with a delivery count above 1
    partitions: list[str] = field(default_factory=list)  # every partition it got records of
    stop_reason: str = ""

    def as_row(self) -> dict[str, Any]:
        return dict(self.__dict__)


def share_table(records: list[Any]) -> pa.Table:
    """ShareRecords as one Arrow table: ARROW_SCHEMA's columns and ``delivery_count``."""
    batch = records_to_batch(records)
    counts = pa.array([r.delivery_count for r in records], pa.int32())
    return pa.Table.from_batches([pa.RecordBatch.from_arrays([*batch.columns, counts], schema=SHARE_SCHEMA)])


@dataclass(frozen=True)
class _ShareTask:
    topics: list[str]
    config: dict[str, Any]
    handler: Callable[[Any], object]
    stop: StopWhen
    batch_format: str
    batch_records: int
    batch_ms: int
    job: str

    def __call__(self, index: int, _rows: Iterable[Any]) -> Iterator[dict[str, Any]]:
        report = ShareMemberReport(index, task_info(self.job).attempt)
        consumer: ShareConsumer[Any, Any] = ShareConsumer(*self.topics, **self.config)
        try:
            report.member_id = consumer.member_id
            self._run(consumer, report)
        finally:
            consumer.close()
        yield report.as_row()

    def _run(self, consumer: ShareConsumer[Any, Any], report: ShareMemberReport) -> None:
        progress = Progress(0, _now_ms())
        seen: set[str] = set()
        while True:
            reason = self.stop.reason(progress, _now_ms(), int(time.time() * 1000))
            if reason is not None:
                report.stop_reason = reason
                return
            wait = self.stop.wait_ms(progress, _now_ms(), int(time.time() * 1000), self.batch_ms)
            records = [r for part in consumer.poll(timeout_ms=wait, max_records=self.batch_records).values()
                       for r in part]
            if not records:
                continue
            progress.records += len(records)
            progress.last_record_ms = _now_ms()
            report.records += len(records)
            report.batches += 1
            report.redelivered += sum(1 for r in records if r.delivery_count > 1)
            seen.update(f"{r.topic}-{r.partition}" for r in records)
            report.partitions = sorted(seen)
            table = share_table(records)
            try:
                self.handler(table if self.batch_format == "arrow" else table.to_pandas())
            except BaseException:
                _settle(consumer, records, AcknowledgeType.RELEASE, RELEASE_TIMEOUT_MS)
                raise
            refused = _settle(consumer, records, AcknowledgeType.ACCEPT, None)
            report.accepted += len(records) - refused
            report.acknowledgement_errors += refused


def _settle(consumer: ShareConsumer[Any, Any], records: list[Any], kind: AcknowledgeType,
            timeout_ms: int | None) -> int:
    """Acknowledge a batch and wait for the broker's answer: the records it refused."""
    for record in records:
        consumer.acknowledge(record, kind)
    try:
        outcomes = consumer.commit_sync(timeout_ms=timeout_ms)
    except Exception:  # a release that could not go: the lock's end gives the records back
        if kind is AcknowledgeType.ACCEPT:
            raise
        log.warning("releasing a failed batch of %d record(s) was not answered; they come back when their "
                    "acquisition lock runs out", len(records), exc_info=True)
        return len(records)
    failed = {(tp.topic, tp.partition) for tp, error in outcomes.items() if error is not None}
    refused = sum(1 for r in records if (r.topic, r.partition) in failed)
    if refused and kind is AcknowledgeType.ACCEPT:
        log.warning("the broker refused to accept %d record(s) the function processed (%s): their acquisition "
                    "lock had run out, and they will be delivered again; keep a batch's work within the group's "
                    "share.record.lock.duration.ms, or lower batch_records", refused,
                    "; ".join(f"{tp.topic}-{tp.partition}: {error}" for tp, error in outcomes.items() if error))
    return refused


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


def consume_share(spark: Any, topics: Iterable[str] | str, config: Mapping[str, Any],
                  handler: Callable[[Any], object], *, stop: StopWhen, members: int | None = None,
                  batch_format: str = "arrow", batch_records: int = 500, batch_ms: int = 1000,
                  ) -> list[ShareMemberReport]:
    """Run ``members`` executor tasks (default: the context's parallelism), each a member of the
    share group ``config['group_id']`` consuming ``topics``, until ``stop`` (``records``,
    ``idle_ms`` or ``deadline``: a share group has no end offsets of its own, so ``at_end`` is
    refused); returns one report per task.

    ``handler`` gets each batch (one poll's records, ``batch_records`` at most, as an Arrow table or
    a pandas DataFrame with ``delivery_count``): when it returns, the batch is accepted; when it
    raises, the batch is released and the task fails with its error (Spark runs it again).
    ``config`` is ShareConsumer settings; acknowledgements are explicit (this function makes them)."""
    names = topic_list(topics)
    given = dict(config)
    if given.get("share_acknowledgement_mode", "explicit") != "explicit":
        raise ConfigurationError("consume_share acknowledges each batch itself (accepted when the handler returns, "
                                 "released when it raises): leave share_acknowledgement_mode out")
    cfg = build_share_config({**given, "share_acknowledgement_mode": "explicit"})
    cfg = {k: v for k, v in cfg.items() if k in given or k == "share_acknowledgement_mode"}
    check_handler_arguments(handler, stop, batch_format, BATCH_FORMATS, batch_records, batch_ms)
    if stop.at_end:
        raise ConfigurationError("StopWhen(at_end=True) needs end offsets a member owns, and a share group's members "
                                 "own none: stop a share read with idle_ms, records or a deadline")
    context = spark.sparkContext
    count = members if members is not None else context.defaultParallelism
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ConfigurationError(f"members must be a positive integer, not {members!r}")
    job = f"groupclient.spark consume_share {','.join(names)}"
    task = _ShareTask(names, cfg, handler, stop, batch_format, batch_records, batch_ms, job)
    context.setJobDescription(f"{job} for share group {cfg['group_id']} with {count} members")
    rows = collect_rows(context.parallelize(range(count), count).mapPartitionsWithIndex(task), False)
    return [ShareMemberReport(**row) for row in rows]
