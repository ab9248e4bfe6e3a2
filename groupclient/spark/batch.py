"""A batch read with group semantics: the driver's half.

The driver takes every partition's end offset, starts one Spark task per member (a barrier
stage when there is a slot for each, so that they join the group together: rendezvous.py), and
each task consumes as a GroupConsumer member of the group from the group's committed offsets up
to those ends (member_loop.py).  A task gathers what it polls into one durable file per 64 MB or
5 s in the read's staging location and only then commits its offsets (staging.py).  When the job
is done, the DataFrame is the staged files.

Why staging: Spark keeps the output of a task only if the task succeeds, and a task can die
after its commit reached the broker.  Committing only what is already in a durable file means a
commit never points past a record the DataFrame does not have.  A file whose commit did not
happen (the task died between the two, or the group moved on) holds records that the next owner
of the partition reads again: a duplicate with the same (topic, partition, offset), found from
the files' offset ranges and dropped.
"""

from __future__ import annotations

import logging
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError, KafkaTimeoutError
from .arrow import RECORD_ID, SPARK_DDL
from .member_loop import MemberOptions, MemberReport, OnCommit, StagedDelivery, TaskInfo, run_member, task_info
from .offsets import Offsets, end_offsets
from .options import consumer_config, topic_list
from .rendezvous import collect_rows as _collect, runs_together
from .staging import FILE_BYTES, FILE_MS, Staging, overlapping
from .stop import StopWhen

log = logging.getLogger("groupclient.spark")


class ReadTimeoutError(KafkaTimeoutError):
    """A batch read's members did not reach the end offsets in time.  Nothing is lost: what was
    read is committed and staged at ``location`` (read it with ``spark.read.parquet``), the rest
    is left for the next read."""

    def __init__(self, message: str, location: str) -> None:
        super().__init__(f"{message}; what was read and committed is staged at {location}")
        self.location = location


@dataclass
class BatchRead:
    """The result of :func:`run_batch_read`."""

    dataframe: Any  # pyspark.sql.DataFrame
    location: str  # the staging location the DataFrame reads
    end_offsets: Offsets  # the ends taken when the read started
    reports: list[MemberReport]  # one per member task that finished
    duplicates: list[tuple[Any, ...]]  # (topic, partition, file, file) where two files overlap


@dataclass(frozen=True)
class _BatchTask:
    """What runs in each executor task (pickled to the executors: plain data only)."""

    topics: list[str]
    config: dict[str, Any]
    ends: Offsets
    location: str
    read_id: str
    on_commit: OnCommit | None
    deadline: float
    hold_for: int | None  # the members to wait for (a barrier stage), or None
    file_bytes: int
    file_ms: int

    def __call__(self, index: int, _rows: Iterable[Any]) -> Iterator[dict[str, Any]]:
        task = task_info(self.read_id)

        def name(count: int) -> str:
            return f"part-{index:05d}-{task.attempt}-{count:06d}-{uuid.uuid4().hex[:8]}.parquet"

        delivery = StagedDelivery(Staging(self.location), name, self.file_bytes, self.file_ms)
        options = MemberOptions(end_offsets=self.ends, on_commit=self.on_commit,
                                commit_metadata=f"groupclient.spark read {self.read_id}",
                                members=self.hold_for)
        report = run_member(self.topics, self.config, delivery, StopWhen(at_end=True, deadline=self.deadline),
                            TaskInfo(index, task.attempt, self.read_id, task.stage), options)
        yield report.as_row()


def run_batch_read(spark: Any, topics: Iterable[str] | str, config: Mapping[str, Any], *, members: int | None = None,
                   staging_dir: str | None = None, deduplicate: bool = True,
                   timeout_s: float = 600, on_commit: OnCommit | None = None, together: bool | None = None,
                   file_bytes: int = FILE_BYTES, file_ms: int = FILE_MS) -> BatchRead:
    """Read what the group has not consumed yet, up to the end offsets of now, with ``members``
    executor tasks as members of ``config['group_id']``; commit it for the group.

    ``staging_dir`` must be reachable by the driver and every executor (``hdfs://``, ``s3a://``,
    a shared mount); in local mode it defaults to a temporary directory.  ``on_commit(task,
    offsets)`` runs on the executor after each commit.  ``together``: the members join the group
    together before any reads (a barrier stage; None: when there is a task slot for each).  A
    member writes a staged file, and commits it, per ``file_bytes`` of records or ``file_ms``."""
    names = topic_list(topics)
    cfg = consumer_config(config)
    context = spark.sparkContext
    count = members if members is not None else context.defaultParallelism
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ConfigurationError(f"members must be a positive integer, not {members!r}")
    if staging_dir is None:
        if not context.master.startswith("local"):
            raise ConfigurationError("staging_dir is required outside local mode: a location the driver and "
                                     "every executor can reach (hdfs://..., s3a://..., a shared mount)")
        staging_dir = tempfile.mkdtemp(prefix="groupclient-reads-")
    for label, value in (("file_bytes", file_bytes), ("file_ms", file_ms)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigurationError(f"{label} must be a positive integer, not {value!r}")
    read_id = uuid.uuid4().hex
    together_now = runs_together(context, count, together)
    ends = end_offsets(names, cfg)
    staging = Staging(f"{staging_dir.rstrip('/')}/{read_id}")
    staging.create()
    job = _BatchTask(names, cfg, ends, staging.uri, read_id, on_commit, time.time() + timeout_s,
                     count if together_now else None,
                     file_bytes, file_ms)
    context.setJobDescription(f"groupclient batch read of {','.join(names)} for group {cfg['group_id']}")
    try:
        tasks = context.parallelize(range(count), count)
        rows = _collect((tasks.barrier() if together_now else tasks).mapPartitionsWithIndex(job), together_now)
    except Exception as exc:
        # tasks that finished before the job failed have committed: their records are staged
        note = f"groupclient: records committed by this read are staged at {staging.uri}"
        log.error("batch read failed; %s", note)
        add_note = getattr(exc, "add_note", None)  # Python 3.11+
        if add_note is not None:
            add_note(note)
        raise
    reports = [MemberReport(**row) for row in rows]
    late = [r for r in reports if r.stop_reason != StopWhen.AT_END]
    if late:
        # what was staged is committed and kept; the rest stays for the next read
        raise ReadTimeoutError(f"members did not reach the end offsets within {timeout_s} s: "
                               + "; ".join(f"task {r.task} owned {r.partitions}" for r in late), staging.uri)
    duplicates = overlapping(staging.files())
    frame = spark.read.schema(SPARK_DDL).parquet(staging.uri)
    if duplicates and deduplicate:
        frame = frame.dropDuplicates(RECORD_ID)
    return BatchRead(frame, staging.uri, ends, reports, duplicates)


def read_batch(spark: Any, topics: Iterable[str] | str, config: Mapping[str, Any], *, members: int | None = None,
               staging_dir: str | None = None, deduplicate: bool = True, together: bool | None = None) -> Any:
    """The DataFrame of :func:`run_batch_read`: columns topic, partition, offset, timestamp, key,
    value, headers; each record once (unless ``deduplicate=False``)."""
    return run_batch_read(spark, topics, config, members=members, staging_dir=staging_dir,
                          deduplicate=deduplicate, together=together).dataframe
