"""OpenTelemetry of the Spark members and readers, from the executors' own exports: the
configuration's ``otel_setup`` (tests/spark/otel_setup.py) sets each Python worker's providers,
which write JSON lines to a folder the test then reads (the workers are other processes)."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from groupclient.otel import semconv as names  # noqa: E402
from groupclient.spark import StopWhen, consume, register  # noqa: E402
from tests.spark.helpers import config, new_topic, produce  # noqa: E402
from tests.spark.otel_setup import FOLDER, read  # noqa: E402

pytestmark = pytest.mark.integration

SETUP = "tests.spark.otel_setup:install"
TASK = (names.SPARK_PARTITION_ID, names.SPARK_ATTEMPT, names.SPARK_STAGE_ID)
CONSUMED = names.MESSAGING_CLIENT_CONSUMED_MESSAGES


@pytest.fixture
def exported(spark: Any, tmp_path: Path) -> Iterator[Path]:
    """The folder the workers' otel_setup exports to, named in the environment Spark gives the
    Python workers it starts (a new environment: new workers).  The data source captures the
    environment when it is registered, so it is registered again, and once more afterwards."""
    folder = tmp_path / "otel"
    folder.mkdir()
    environment = spark.sparkContext.environment
    environment[FOLDER] = str(folder)
    register(spark)
    try:
        yield folder
    finally:
        environment.pop(FOLDER, None)
        register(spark)


def setups_per_process(folder: Path) -> Counter[int]:
    return Counter(row["pid"] for row in read(folder, "setup"))


def consumed_by_task(folder: Path) -> Counter[int]:
    """The consumed-records metric's points added up by task (each carries its task)."""
    total: Counter[int] = Counter()
    for row in read(folder, "metrics"):
        if row["name"] == CONSUMED:
            assert all(key in row["attributes"] for key in TASK), row
            total[row["attributes"][names.SPARK_PARTITION_ID]] += row["value"]
    return total


def test_members_report_their_task_and_a_span_each_to_the_providers_otel_setup_sets(
        spark: Any, embedded: Any, exported: Path) -> None:
    """Runs docs/observability.md: # myjob/telemetry.py, importable on the executors (--py-files, or
    installed in their Python) -- as tests/spark/otel_setup.py, that function with file exporters."""
    bootstrap = embedded.bootstrap_servers
    topic, group = new_topic(bootstrap, 4), f"g-{uuid.uuid4().hex[:6]}"
    placed = produce(bootstrap, topic, 400, 4)
    reports = consume(spark, topic, config(bootstrap, group, max_poll_records=50, otel_setup=SETUP),
                      lambda batch: None, stop=StopWhen(at_end=True, deadline=time.time() + 120), members=2)
    assert sum(r.records for r in reports) == len(placed)

    assert setups_per_process(exported) and set(setups_per_process(exported).values()) == {1}, \
        "otel_setup runs once in each worker process"
    spans = read(exported, "spans")
    members = {s["attributes"][names.SPARK_PARTITION_ID]: s for s in spans if s["name"] == f"spark member {group}"}
    assert len(members) == len(reports) == 2 and sorted(members) == [0, 1], "one member span per task"
    stages = {s["attributes"][names.SPARK_STAGE_ID] for s in members.values()}
    assert len(stages) == 1 and isinstance(stages.pop(), int)
    for report in reports:
        span = members[report.task]
        attributes = span["attributes"]
        assert span["kind"] == "INTERNAL" and span["status"] == "UNSET"
        assert attributes[names.SPARK_ATTEMPT] == report.attempt == 0
        assert attributes[names.MESSAGING_CONSUMER_GROUP_NAME] == group
        assert attributes[names.MEMBER_ID] == report.member_id
        assert attributes[names.SPARK_OUTCOME] == report.stop_reason == StopWhen.AT_END
        assert (attributes[names.SPARK_RECORDS], attributes[names.SPARK_BATCHES], attributes[names.SPARK_COMMITS],
                attributes[names.SPARK_WAITED_MS]) == (report.records, report.batches, report.commits, report.waited_ms)
        assert report.commits >= 1 or not report.records

    # the consumers' spans (polls, rebalances) carry their task and are children of its member span
    consumers = [s for s in spans if not s["name"].startswith("spark member")]
    assert {s["name"] for s in consumers} >= {f"poll {topic}", f"rebalance {group}"}
    for span in consumers:
        member = members[span["attributes"][names.SPARK_PARTITION_ID]]
        assert all(span["attributes"][key] == member["attributes"][key] for key in TASK), span
        assert (span["trace_id"], span["parent_id"]) == (member["trace_id"], member["span_id"]), span
    polled = Counter[int]()
    for span in consumers:
        if span["name"] == f"poll {topic}":
            polled[span["attributes"][names.SPARK_PARTITION_ID]] += span["attributes"][names.MESSAGING_BATCH_MESSAGE_COUNT]
    by_task = {r.task: r.records for r in reports}
    assert dict(polled) == {k: v for k, v in by_task.items() if v}

    # every measurement carries its task; the consumed records add up, task by task
    assert all(all(key in row["attributes"] for key in TASK) for row in read(exported, "metrics"))
    assert dict(consumed_by_task(exported)) == {k: v for k, v in by_task.items() if v}


def test_the_data_source_readers_report_their_task(spark: Any, embedded: Any, exported: Path) -> None:
    bootstrap = embedded.bootstrap_servers
    topic = new_topic(bootstrap, 3)
    placed = produce(bootstrap, topic, 90, 3)
    frame = (spark.read.format("groupclient").option("kafka.bootstrap.servers", bootstrap)
             .option("group.id", f"g-{uuid.uuid4().hex[:6]}").option("topics", topic)
             .option("auto.offset.reset", "earliest").option("otel_setup", SETUP).load())
    assert frame.count() == len(placed)

    assert set(setups_per_process(exported).values()) == {1}
    receives = [s for s in read(exported, "spans") if s["name"] == f"poll {topic}"]
    assert receives and all(all(key in s["attributes"] for key in TASK) for s in receives)
    consumed = consumed_by_task(exported)
    assert sorted(consumed) == [0, 1, 2], "one reader task per partition"
    assert sum(consumed.values()) == len(placed)
