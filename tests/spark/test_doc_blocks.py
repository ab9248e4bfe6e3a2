"""The Spark code blocks of README.md and docs/spark.md, run as written on this suite's Spark
session (local[2,2]) against an embedded cluster whose ``orders`` topic holds JSON orders.

Changes to the blocks' text, each needed to run them here: the broker address becomes the
cluster's; ``s3a://bucket/...`` a local staging directory; ``consume``'s 60 s idle stop 2 s and its
4 members 2 (two cores: Spark runs tasks beyond the cores one wave after another); ``consume_share``'s
60 s idle stop 3 s, its 8 members 2 and its share group a fresh one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from groupclient.coordinator import EmbeddedCluster
from tests.docs.blocks import ROOT, block
from tests.docs.runners import Prepared, Python

pytestmark = pytest.mark.integration

ORDERS = 40


def loaded(embedded: EmbeddedCluster) -> str:
    """A fresh ``orders``-like topic of JSON orders (3 partitions); its name."""
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    embedded.create_topic(topic, 3)
    embedded.produce(topic, [json.dumps({"id": i, "amount": i * 1.5}).encode() for i in range(ORDERS)])
    return topic


def run_block(key: str, tmp_path: Path, namespace: dict[str, Any], address: str, topic: str,
              replace: dict[str, str] | None = None) -> dict[str, Any]:
    """Run the block in ``namespace``; the namespace with what the block defined."""

    @contextmanager
    def context(_: Path) -> Iterator[Prepared]:
        text = block(key).text
        changes = {'"orders"': repr(topic)} if '"orders"' in text else {}
        yield Prepared(dict(namespace), address, replace={**changes, **(replace or {})})

    result = Python(context, timeout_s=300).execute(block(key), tmp_path)
    return {k: v for k, v in result.items() if not k.startswith("__")}


def test_read_batch_blocks(spark: Any, embedded: EmbeddedCluster, tmp_path: Path) -> None:
    """Runs "README.md: from groupclient.spark import read_batch", then "docs/spark.md: from
    pyspark.sql.functions import col, from_json" on its frame, and "docs/spark.md: from
    groupclient.spark import read_batch, run_batch_read" on a second group."""
    topic = loaded(embedded)
    ns = run_block("README.md: from groupclient.spark import read_batch", tmp_path, {"spark": spark},
                   embedded.bootstrap_servers, topic)
    assert ns["frame"].count() == ORDERS
    ns = run_block("docs/spark.md: from pyspark.sql.functions import col, from_json", tmp_path, ns,
                   embedded.bootstrap_servers, topic)
    amounts = sorted(row["order"]["amount"] for row in ns["orders"].collect())
    assert amounts == [i * 1.5 for i in range(ORDERS)]
    staging = tmp_path / "staging"
    ns = run_block("docs/spark.md: from groupclient.spark import read_batch, run_batch_read", tmp_path,
                   {"spark": spark}, embedded.bootstrap_servers, topic,
                   {'"billing"': '"billing-2"', "s3a://bucket/groupclient-staging": str(staging)})
    assert ns["frame"].count() == ORDERS
    assert staging.exists()


def test_consume_block(spark: Any, embedded: EmbeddedCluster, tmp_path: Path) -> None:
    """Runs "docs/spark.md: from groupclient.spark import StopWhen, consume" with the config of
    the read_batch block; the handler is the block's (it does nothing), the members must then
    have delivered every record."""
    topic = loaded(embedded)
    config = {"bootstrap_servers": embedded.bootstrap_servers, "group_id": f"consume-{topic}",
              "auto_offset_reset": "earliest", "session_timeout_ms": 10000}
    ns = run_block("docs/spark.md: from groupclient.spark import StopWhen, consume", tmp_path,
                   {"spark": spark, "config": config}, embedded.bootstrap_servers, topic,
                   {"idle_ms=60_000": "idle_ms=2_000", "members=4": "members=2"})
    reports = ns["reports"]
    assert sum(r.records for r in reports) == ORDERS, reports


def test_consume_share_block(spark: Any, embedded: EmbeddedCluster, tmp_path: Path) -> None:
    """Runs "docs/spark.md: from groupclient.spark import StopWhen, consume_share" on a share group
    set to start at the beginning; its members must then have accepted every record."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    topic = loaded(embedded)
    group = f"share-{topic}"
    admin = KafkaAdminClient(bootstrap_servers=embedded.bootstrap_servers)
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, group, configs={
            "share.auto.offset.reset": "earliest"})])
    finally:
        admin.close()
    ns = run_block("docs/spark.md: from groupclient.spark import StopWhen, consume_share", tmp_path,
                   {"spark": spark}, embedded.bootstrap_servers, topic,
                   {"idle_ms=60_000": "idle_ms=3_000", "members=8": "members=2", '"billing-workers"': repr(group)})
    assert sum(r.accepted for r in ns["reports"]) == ORDERS, ns["reports"]


def test_data_source_blocks(spark: Any, embedded: EmbeddedCluster, tmp_path: Path) -> None:
    """Runs "docs/spark.md: import groupclient.spark" (a batch read through the data source) and
    "docs/spark.md: query = (spark.readStream.format("groupclient").option("kafka.bootstrap.servers",
    "broker:9092")" (a streaming query to Parquet, until it has read what is there)."""
    topic = loaded(embedded)
    ns = run_block("docs/spark.md: import groupclient.spark", tmp_path, {"spark": spark},
                   embedded.bootstrap_servers, topic, {'"billing"': f'"source-{topic}"'})
    assert ns["frame"].count() == ORDERS
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    ns = run_block('docs/spark.md: query = (spark.readStream.format("groupclient").option("kafka.bootstrap.servers", '
                   '"broker:9092")', tmp_path, {"spark": spark, "out": out, "checkpoint": checkpoint},
                   embedded.bootstrap_servers, topic, {'"billing"': f'"stream-{topic}"'})
    ns["query"].awaitTermination(300)
    assert spark.read.parquet(out).count() == ORDERS


def test_the_wheel_ships_to_executors(tmp_path: Path) -> None:
    """Runs "docs/spark.md: pip wheel --no-deps . -w dist" (the wheel built from this checkout,
    spark-submit on local[2]): the executors import groupclient from the shipped file, not from
    the installed package."""
    text = block("docs/spark.md: pip wheel --no-deps . -w dist").text
    (tmp_path / "job.py").write_text(
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.config('spark.ui.enabled', 'false').getOrCreate()\n"
        "def where(_):\n"
        "    import groupclient\n"
        "    yield groupclient.__file__\n"
        "print('FROM', sorted(set(spark.sparkContext.parallelize(range(2), 2).mapPartitions(where).collect())))\n"
        "spark.stop()\n")
    import pyspark

    spark_submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    script = (f'spark-submit() {{ "{spark_submit}" --master "local[2]" --conf spark.driver.host=127.0.0.1 '
              f'--conf spark.driver.bindAddress=127.0.0.1 "$@"; }}\nset -e\n'
              + text.replace("pip wheel --no-deps . ", f"pip wheel --no-deps {ROOT} "))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [line] = [line for line in done.stdout.splitlines() if line.startswith("FROM")]
    assert "/groupclient.zip/groupclient/__init__.py" in line, line
