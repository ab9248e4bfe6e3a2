"""Long-running members on the executors, and the pipeline command end to end."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from groupclient.spark import StopWhen, consume
from tests.spark.helpers import committed, config, ends, new_topic, produce

pytestmark = pytest.mark.integration


class _Recorder:
    """Writes each batch's (partition, offset) to a file per call; fails the first batch of the
    first task that gets one, once (the marker file), before it is committed."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def __call__(self, batch: Any) -> None:
        import os

        rows = list(zip(batch["partition"].to_pylist(), batch["offset"].to_pylist()))
        try:
            os.close(os.open(f"{self.folder}/failed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            Path(self.folder, f"{uuid.uuid4().hex}.json").write_text(json.dumps(rows))
            return
        raise RuntimeError("the handler failed on this batch")


def test_members_hand_batches_over_and_a_failed_batch_comes_again(spark: Any, embedded: Any, tmp_path: Any) -> None:
    bootstrap = embedded.bootstrap_servers
    topic, group = new_topic(bootstrap, 4), f"g-{uuid.uuid4().hex[:6]}"
    placed = produce(bootstrap, topic, 800, 4)
    # together=False: only the failed task runs again (in a barrier stage every task would)
    reports = consume(spark, topic, config(bootstrap, group, max_poll_records=40), _Recorder(str(tmp_path)),
                      stop=StopWhen(at_end=True, deadline=time.time() + 120), members=2, together=False)
    delivered = [tuple(x) for f in tmp_path.glob("*.json") for x in json.loads(f.read_text())]
    assert (tmp_path / "failed").exists()
    assert set(delivered) == placed, "every record handed over (the failed batch again, at least once)"
    assert len(delivered) == len(placed), "no batch handed over twice after it was committed"
    assert any(r.attempt == 1 for r in reports), "the failed task was tried again"
    assert {r.stop_reason for r in reports} == {StopWhen.AT_END}
    assert committed(bootstrap, group, topic, 4) == ends(placed, 4)


def test_idle_members_stop_and_say_why(spark: Any, embedded: Any) -> None:
    bootstrap = embedded.bootstrap_servers
    topic, group = new_topic(bootstrap, 2), f"g-{uuid.uuid4().hex[:6]}"
    produce(bootstrap, topic, 30, 2)
    reports = consume(spark, topic, config(bootstrap, group), lambda batch: None, stop=StopWhen(idle_ms=3000),
                      members=2, batch_format="pandas")
    assert sum(r.records for r in reports) == 30
    assert {r.stop_reason for r in reports} == {"no record for 3000 ms"}


def test_the_pipeline_command_runs_end_to_end(tmp_path: Any) -> None:
    """The command of "docs/cli.md: $ groupclient spark pipeline --events 2000 --output
    /tmp/docrun/pipeline-out" and of "docs/spark.md: pip install -e '.[spark]' && groupclient spark
    pipeline --events 100000 --output pipeline-out" (with 20000 events), checked end to end."""
    out = tmp_path / "pipeline"
    done = subprocess.run([sys.executable, "-m", "groupclient", "spark", "pipeline", "--events", "20000",
                           "--output", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout[done.stdout.index("{"):])
    assert result["ok"] and all(result["checks"].values())
    assert result["events"] == 20000 and result["aggregates"] == 4 * 4  # 4 kinds x 4 minutes (200 s of events)
    import pyarrow.parquet as pq

    table = pq.read_table(str(out / "aggregates"))
    assert sum(table["events"].to_pylist()) == 20000


def test_members_that_join_together_share_the_partitions_from_the_start(spark: Any, bootstrap: str) -> None:
    """A barrier stage's members hold their partitions until all have joined: neither reads
    most of the records before the other is in the group (the first one used to read all)."""
    topic, group = new_topic(bootstrap, 8), f"g-{uuid.uuid4().hex[:6]}"
    placed = produce(bootstrap, topic, 4000, 8)
    counts: list[int] = []
    for _ in range(2):
        reports = consume(spark, topic, config(bootstrap, group, max_poll_records=100), lambda batch: None,
                          stop=StopWhen(at_end=True, deadline=time.time() + 120), members=2, together=True)
        counts.append(sum(r.records for r in reports))
        if counts[-1]:
            assert max(r.records for r in reports) <= 0.6 * len(placed), [r.as_row() for r in reports]
            assert all(r.waited_ms > 0 for r in reports)
    assert counts == [len(placed), 0]
    assert committed(bootstrap, group, topic, 8) == ends(placed, 8)
