"""Batch reads with group semantics on Spark (local[2,2]) against the embedded coordinator and
Apache Kafka."""

from __future__ import annotations

import os
import threading
import time
import uuid
from typing import Any

import pytest

from groupclient import GroupConsumer
from groupclient.spark import StopWhen, TaskInfo, run_batch_read
from tests.spark.helpers import committed, config, ends, new_topic, produce

pytestmark = pytest.mark.integration


def offsets_of(frame: Any) -> list[tuple[int, int]]:
    return [(r["partition"], r["offset"]) for r in frame.select("partition", "offset").collect()]


def test_batch_read_delivers_every_offset_once_and_commits_it_for_the_group(spark: Any, bootstrap: str) -> None:
    topic, group = new_topic(bootstrap, 4), f"g-{uuid.uuid4().hex[:6]}"
    placed = produce(bootstrap, topic, 600, 4)
    read = run_batch_read(spark, topic, config(bootstrap, group, max_poll_records=50), members=2)
    got = offsets_of(read.dataframe)
    assert sorted(got) == sorted(placed), "every offset exactly once"
    assert read.duplicates == []
    assert {r.stop_reason for r in read.reports} == {"every owned partition reached its end offset"}
    row = read.dataframe.where("partition = 1").orderBy("offset").first()
    assert row["topic"] == topic and row["value"].startswith(b"v") and row["key"].startswith(b"k")
    assert row["headers"][0]["key"] == "n" and row["timestamp"] is not None
    # the commits are the group's: another member of the group sees them, and a second read is empty
    assert committed(bootstrap, group, topic, 4) == ends(placed, 4)
    assert run_batch_read(spark, topic, config(bootstrap, group), members=2).dataframe.count() == 0


class _DieOnce:
    """Kills the Python worker of the first task that commits, right after its first commit
    (once per read: the marker file says it happened).  That task's output dies with it."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __call__(self, task: TaskInfo, offsets: dict[tuple[str, int], int]) -> None:
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os._exit(17)


def test_a_task_that_dies_right_after_a_commit_loses_no_offset(spark: Any, embedded: Any, tmp_path: Any) -> None:
    bootstrap = embedded.bootstrap_servers
    topic, group = new_topic(bootstrap, 4), f"g-{uuid.uuid4().hex[:6]}"
    placed = produce(bootstrap, topic, 2000, 4)
    # small files: many files and commits per member, so the task dies in the middle of its read
    read = run_batch_read(spark, topic, config(bootstrap, group, max_poll_records=20), members=2,
                          on_commit=_DieOnce(str(tmp_path / "died")), file_bytes=4000)
    assert (tmp_path / "died").exists()
    assert sum(r.batches for r in read.reports) > 4, "several files per member"
    assert len(read.reports) == 2 and {r.stop_reason for r in read.reports} == {StopWhen.AT_END}
    got = offsets_of(read.dataframe)
    assert sorted(got) == sorted(placed), "no offset lost, none twice"
    assert committed(bootstrap, group, topic, 4) == ends(placed, 4)


def test_a_spark_read_and_a_plain_member_share_the_partitions_without_overlap(spark: Any, bootstrap: str) -> None:
    topic, group = new_topic(bootstrap, 4), f"g-{uuid.uuid4().hex[:6]}"
    placed = produce(bootstrap, topic, 2000, 4)
    plain: list[tuple[int, int]] = []
    joined, spark_done, stop = threading.Event(), threading.Event(), threading.Event()
    failure: list[BaseException] = []

    def plain_member() -> None:
        # a slow member (10 records per poll, paced) that commits what it delivered when it
        # gives partitions up, as kafka-python's consumer does
        try:
            with GroupConsumer(topic, **config(bootstrap, group, enable_auto_commit=True, max_poll_records=10)) as c:
                deadline = time.monotonic() + 120
                while not stop.is_set() and time.monotonic() < deadline:
                    for tp, records in c.poll(timeout_ms=100).items():
                        plain.extend((tp.partition, r.offset) for r in records)
                    if c.assignment():
                        joined.set()
                    if spark_done.is_set() and len(set(plain)) + spark_count[0] >= len(placed):
                        break
                    stop.wait(0.05)
        except BaseException as exc:  # reported by the test thread
            failure.append(exc)
            joined.set()

    spark_count = [0]
    thread = threading.Thread(target=plain_member, daemon=True)
    thread.start()
    try:
        assert joined.wait(60)
        read = run_batch_read(spark, topic, config(bootstrap, group, max_poll_records=50), members=2)
        got = offsets_of(read.dataframe)
        spark_count[0] = len(got)
        spark_done.set()
        thread.join(130)
    finally:
        stop.set()
        thread.join(10)
    assert not failure, failure
    assert got and plain, "both the Spark members and the plain member consumed some partitions"
    assert not set(got) & set(plain), "no record delivered to both"
    assert len(got) == len(set(got)) and len(plain) == len(set(plain))
    assert set(got) | set(plain) == placed
