"""Long-running consumption: N executor tasks, each a member of the group, handing batches to a
user function and committing after it returns.

The function runs on the executors and gets an Arrow table (or a pandas DataFrame) with the
columns of arrow.ARROW_SCHEMA.  If it raises, nothing of that batch is committed and the task
fails; Spark runs the task again and the new member goes on from the group's last commit, so the
batch is handed over again (at least once).  Members come and go through the group protocol: a
task that stops leaves the group and the others take its partitions over.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError
import pyarrow as pa

from .arrow import ARROW_SCHEMA, columns_to_batch
from .member_loop import HandOver, MemberOptions, MemberReport, OnCommit, Polled, TaskInfo, run_member, task_info
from .offsets import Offsets, end_offsets
from .options import check_handler_arguments, consumer_config, topic_list
from .rendezvous import collect_rows as _collect, runs_together
from .stop import StopWhen

BATCH_FORMATS = ("arrow", "pandas")


@dataclass(frozen=True)
class _ConsumeTask:
    topics: list[str]
    config: dict[str, Any]
    handler: Callable[[Any], object]
    stop: StopWhen
    batch_format: str
    ends: Offsets | None
    on_commit: OnCommit | None
    job: str
    batch_records: int
    batch_ms: int
    hold_for: int | None  # the members to wait for (a barrier stage), or None

    def __call__(self, index: int, _rows: Iterable[Any]) -> Iterator[dict[str, Any]]:
        spark_task = task_info(self.job)

        def deliver(records: Polled) -> None:
            table = pa.Table.from_batches([columns_to_batch(parts) for parts in records.values()], schema=ARROW_SCHEMA)
            self.handler(table if self.batch_format == "arrow" else table.to_pandas())

        options = MemberOptions(end_offsets=self.ends, on_commit=self.on_commit, commit_metadata=self.job,
                                members=self.hold_for)
        report = run_member(self.topics, self.config, HandOver(deliver, self.batch_records, self.batch_ms), self.stop,
                            TaskInfo(index, spark_task.attempt, self.job, spark_task.stage), options)
        yield report.as_row()


def consume(spark: Any, topics: Iterable[str] | str, config: Mapping[str, Any], handler: Callable[[Any], object], *,
            stop: StopWhen, members: int | None = None, batch_format: str = "arrow",
            on_commit: OnCommit | None = None, together: bool | None = None, batch_records: int = 10_000,
            batch_ms: int = 1000) -> list[MemberReport]:
    """Run ``members`` executor tasks (default: the context's parallelism) consuming
    ``topics`` as members of ``config['group_id']`` until ``stop``; returns one report per task.

    Members are meant to run at the same time: give the job at least ``members`` executor
    cores, or the later tasks start only when earlier ones stop.  ``together``: the members join
    the group together before any reads (a barrier stage; None: when there is a slot for each).
    ``handler`` gets up to ``batch_records`` records at a time, gathered over polls for at most
    ``batch_ms`` (sooner when a poll finds nothing new)."""
    names = topic_list(topics)
    cfg = consumer_config(config)
    check_handler_arguments(handler, stop, batch_format, BATCH_FORMATS, batch_records, batch_ms)
    context = spark.sparkContext
    count = members if members is not None else context.defaultParallelism
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ConfigurationError(f"members must be a positive integer, not {members!r}")
    together_now = runs_together(context, count, together)
    ends = end_offsets(names, cfg) if stop.at_end else None
    job = f"groupclient.spark consume {','.join(names)}"
    task = _ConsumeTask(names, cfg, handler, stop, batch_format, ends, on_commit, job, batch_records,
                        batch_ms, count if together_now else None)
    context.setJobDescription(f"{job} for group {cfg['group_id']} with {count} members")
    tasks = context.parallelize(range(count), count)
    rows = _collect((tasks.barrier() if together_now else tasks).mapPartitionsWithIndex(task), together_now)
    return [MemberReport(**row) for row in rows]
