"""The example pipeline: sample events produced to the embedded coordinator, read by Spark
executors that are members of a consumer group, aggregated, written as Parquet, then checked.

    groupclient spark pipeline --events 100000 --output ./pipeline-out
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..structs import TopicPartition

from ..consumer.group_consumer import GroupConsumer
from ..coordinator import EmbeddedCluster
from .batch import run_batch_read

TOPIC = "events"
GROUP = "pipeline"
KINDS = ("view", "click", "purchase", "refund")
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: events are spread over the minutes after it


@dataclass
class PipelineResult:
    events: int
    members: int
    partitions: int
    produce_s: float
    spark_s: float  # the batch read, aggregation and Parquet write
    records_per_s: float  # events / spark_s
    aggregates: int  # rows written
    output: str
    checks: dict[str, bool]

    @property
    def ok(self) -> bool:
        return all(self.checks.values())


def sample_event(i: int) -> dict[str, Any]:
    return {"user": f"u{(i * 7919) % 997}", "kind": KINDS[i % len(KINDS)], "amount": (i * 31) % 10_000,
            "ts": START_MS + i * 10}


def produce_events(bootstrap: str, count: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, batch_size=256 * 1024, acks=1)
    try:
        for i in range(count):
            event = sample_event(i)
            producer.send(TOPIC, json.dumps(event).encode(), key=event["user"].encode(), timestamp_ms=event["ts"])
        producer.flush(timeout=120)
    finally:
        producer.close()


def run_pipeline(events: int, output: str, members: int = 2, partitions: int = 6,
                 master: str = "local[2]") -> PipelineResult:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    out = str(Path(output).resolve() / "aggregates")
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0) as cluster:
        cluster.create_topic(TOPIC, partitions)
        started = time.monotonic()
        produce_events(cluster.bootstrap_servers, events)
        produced = time.monotonic()
        spark = (SparkSession.builder.master(master).appName("groupclient-pipeline")
                 .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", str(max(2, members)))
                 .config("spark.sql.session.timeZone", "UTC").getOrCreate())
        try:
            spark_started = time.monotonic()
            config = {"bootstrap_servers": cluster.bootstrap_servers, "group_id": GROUP,
                      "auto_offset_reset": "earliest", "session_timeout_ms": 10_000}
            read = run_batch_read(spark, TOPIC, config, members=members,
                                  staging_dir=str(Path(output).resolve() / "staging"))
            schema = "user STRING, kind STRING, amount BIGINT, ts BIGINT"
            parsed = read.dataframe.select(F.from_json(F.col("value").cast("string"), schema).alias("e"), "timestamp")
            aggregates = (parsed.groupBy(F.window("timestamp", "1 minute").start.alias("minute"), F.col("e.kind").alias("kind"))
                          .agg(F.count("*").alias("events"), F.sum("e.amount").alias("amount"),
                               F.approx_count_distinct("e.user").alias("users")))
            aggregates.write.mode("overwrite").parquet(out)
            spark_s = time.monotonic() - spark_started
            written = spark.read.parquet(out)
            totals = written.agg(F.sum("events").alias("events"), F.sum("amount").alias("amount"),
                                 F.count("*").alias("rows")).first()
            assert totals is not None  # an aggregate without grouping has one row
            expected_amount = sum(sample_event(i)["amount"] for i in range(events))
            ends = cluster.end_offsets(TOPIC)
            with GroupConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=GROUP,
                               enable_auto_commit=False) as check:
                commits = {p: check.committed(TopicPartition(TOPIC, p)) for p in range(partitions)}
            checks = {
                "every event counted once": totals["events"] == events,
                "amounts add up": totals["amount"] == expected_amount,
                "group committed the end offsets": commits == ends,
                "a second read finds nothing new": run_batch_read(
                    spark, TOPIC, config, members=members,
                    staging_dir=str(Path(output).resolve() / "staging")).dataframe.count() == 0,
            }
            return PipelineResult(events, members, partitions, round(produced - started, 2), round(spark_s, 2),
                                  round(events / spark_s, 1), int(totals["rows"]), out, checks)
        finally:
            spark.stop()


def pipeline_command(events: int, output: str, members: int, partitions: int, master: str) -> int:
    result = run_pipeline(events, output, members, partitions, master)
    print(json.dumps({**asdict(result), "ok": result.ok}, indent=2))
    return 0 if result.ok else 1
