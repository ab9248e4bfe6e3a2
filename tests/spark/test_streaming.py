"""``format("groupclient")``: Structured Streaming with group semantics, and the batch source."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from groupclient import GroupConsumer
from tests.spark.helpers import committed, config, ends, new_topic, produce

pytestmark = pytest.mark.integration


def stream_once(spark: Any, bootstrap: str, topic: str, group: str, checkpoint: str, out: str) -> None:
    """One run of a query that reads what is there (trigger availableNow) into Parquet."""
    frame = (spark.readStream.format("groupclient").option("topics", topic)
             .options(**{k: str(v) for k, v in config(bootstrap, group).items()}).load())
    query = (frame.writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(180), "the query did not finish in time"
        assert query.exception() is None, query.exception()
    finally:
        query.stop()


def written(spark: Any, out: str) -> list[tuple[int, int]]:
    return [(r["partition"], r["offset"]) for r in spark.read.parquet(out).select("partition", "offset").collect()]


def test_a_stopped_and_restarted_query_resumes_from_the_group_commits(spark: Any, bootstrap: str,
                                                                       tmp_path: Any) -> None:
    topic, group = new_topic(bootstrap, 3), f"g-{uuid.uuid4().hex[:6]}"
    first = produce(bootstrap, topic, 300, 3)
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "cp")
    stream_once(spark, bootstrap, topic, group, checkpoint, out)
    assert sorted(written(spark, out)) == sorted(first)
    assert committed(bootstrap, group, topic, 3) == ends(first, 3), "Spark's batch commit reached the group"

    second = produce(bootstrap, topic, 150, 3, start=300)
    stream_once(spark, bootstrap, topic, group, checkpoint, out)  # the same checkpoint: a restart
    assert sorted(written(spark, out)) == sorted(first | second), "nothing lost, nothing twice"

    # a new query (no checkpoint) of the same group starts where the group is, not at the start
    third = produce(bootstrap, topic, 90, 3, start=450)
    out2 = str(tmp_path / "out2")
    stream_once(spark, bootstrap, topic, group, str(tmp_path / "cp2"), out2)
    assert sorted(written(spark, out2)) == sorted(third)
    assert committed(bootstrap, group, topic, 3) == ends(first | second | third, 3)

    # and a plain member of the group goes on from there too: nothing is left for it
    with GroupConsumer(topic, **config(bootstrap, group, enable_auto_commit=False)) as member:
        got = []
        for _ in range(20):
            got.extend(r for rs in member.poll(timeout_ms=300).values() for r in rs)
            if member.assignment() and not got:
                break
        assert member.assignment() and not got


def test_the_batch_source_reads_what_the_group_has_not_consumed_and_commits_nothing(spark: Any,
                                                                                   embedded: Any) -> None:
    bootstrap = embedded.bootstrap_servers
    topic, group = new_topic(bootstrap, 2), f"g-{uuid.uuid4().hex[:6]}"
    placed = produce(bootstrap, topic, 100, 2)
    frame = (spark.read.format("groupclient").option("topics", topic)
             .option("kafka.bootstrap.servers", bootstrap).option("group.id", group)
             .option("auto_offset_reset", "earliest").load())
    rows = [(r["partition"], r["offset"]) for r in frame.collect()]
    assert sorted(rows) == sorted(placed)
    assert committed(bootstrap, group, topic, 2) == {0: None, 1: None}
    assert frame.count() == 100, "evaluated again, the same rows"


def test_bad_options_fail_on_the_driver_with_the_option_named(spark: Any, embedded: Any) -> None:
    reader = spark.read.format("groupclient").option("bootstrap_servers", embedded.bootstrap_servers)
    with pytest.raises(Exception, match="topics"):
        reader.option("group_id", "g").load().collect()
    with pytest.raises(Exception, match="session_timeout_ms must be an integer"):
        reader.option("topics", "t").option("group_id", "g").option("session_timeout_ms", "soon").load().collect()
