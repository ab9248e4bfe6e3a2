"""``groupclient groups describe|watch --lag-seconds`` run as a subprocess against the embedded
coordinator and Apache Kafka: records produced with known timestamps, offsets committed by a
group, and each partition's time lag checked against those timestamps and the wall clock."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient
from kafka.structs import TopicPartition as KafkaTopicPartition

from groupclient import GroupConsumer, OffsetAndMetadata, TopicPartition
from groupclient.coordinator import EmbeddedCluster
from tests.integration import external
from tests.integration.test_cli_groups import cli, consumer, join_all, name, watching

pytestmark = pytest.mark.integration

COUNTS = {0: 10, 1: 5, 2: 7, 3: 3}  # records per partition
# partition 0 is behind (its last consumed record is offset 3), 1 caught up, 2 has no commit, 3 a
# commit at offset 0 (nothing consumed: the first record waiting stands in)
COMMITS = {0: 4, 1: 5, 3: 0}
AGO_MS = 600_000  # the records are written as if 10 minutes ago, a second apart
TOLERANCE_S = 0.002  # milliseconds on both sides, and a float's rounding

Stamps = dict[tuple[int, int], int]  # (partition, offset) -> the record's timestamp


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def produce_timed(bootstrap: str, topic: str) -> Stamps:
    """COUNTS records into each partition, each with a timestamp of its own (CreateTime)."""
    base = now_ms() - AGO_MS
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    sent = []
    for partition, count in COUNTS.items():
        for i in range(count):
            stamp = base + 1000 * (10 * partition + i)
            sent.append((stamp, producer.send(topic, b"x", partition=partition, timestamp_ms=stamp)))
    producer.flush()
    stamps = {}
    for stamp, future in sent:
        meta = future.get(10)
        stamps[(meta.partition, meta.offset)] = stamp
    producer.close()
    assert sorted(stamps) == [(p, o) for p, n in COUNTS.items() for o in range(n)]
    return stamps


def between(value: float | None, stamp: int, before_ms: int, after_ms: int) -> bool:
    """Whether ``value`` is now - ``stamp`` for a "now" between the two wall clock readings."""
    if value is None:
        return False
    return (before_ms - stamp) / 1000 - TOLERANCE_S <= value <= (after_ms - stamp) / 1000 + TOLERANCE_S


def check_time_lags(bootstrap: str, group: str, topic: str, stamps: Stamps, fallback: dict[int, int]) -> None:
    """describe --lag-seconds, in JSON and as a table: each partition's time lag is now - the
    timestamp of the record at committed - 1 (or of ``fallback[partition]``, the offset of the
    first record waiting, where that one is gone)."""
    # the record whose timestamp counts: at committed - 1, and for the commit at 0 the first
    last = {0: fallback.get(0, COMMITS[0] - 1), 3: fallback.get(3, 0)}
    before = now_ms()
    done = cli("groups", "describe", group, "--lag-seconds", "--json", "--bootstrap-servers", bootstrap)
    after = now_ms()
    assert done.returncode == 0, done.stderr
    d = json.loads(done.stdout)
    rows = {o["partition"]: o for o in d["offsets"]}
    assert sorted(rows) == [0, 1, 2, 3] and all(o["topic"] == topic for o in d["offsets"])
    assert [(rows[p]["committed_offset"], rows[p]["lag"]) for p in range(4)] == [(4, 6), (5, 0), (None, None), (0, 3)]
    for p in (0, 3):
        assert between(rows[p]["time_lag_s"], stamps[(p, last[p])], before, after), (p, rows[p], before, after)
    assert rows[1]["time_lag_s"] == 0  # caught up
    assert rows[2]["time_lag_s"] is None  # nothing committed: unknown, like its lag
    assert d["max_time_lag_s"] == max(rows[0]["time_lag_s"], rows[3]["time_lag_s"])

    before = now_ms()
    text = cli("groups", "describe", group, "--lag-seconds", "--bootstrap-servers", bootstrap)
    after = now_ms()
    assert text.returncode == 0, text.stderr
    lines = [line.split() for line in text.stdout.splitlines()]
    header = ["TOPIC", "PARTITION", "COMMITTED-OFFSET", "LOG-END-OFFSET", "LAG", "TIME-LAG-S", "MEMBER-ID"]
    assert header in lines
    table = {int(row[1]): row for row in lines if row[:1] == [topic]}
    assert [table[p][2:5] for p in range(4)] == [["4", "10", "6"], ["5", "5", "0"], ["-", "7", "-"], ["0", "3", "3"]]
    assert table[1][5] == "0.000" and table[2][5] == "-"
    for p in (0, 3):
        assert between(float(table[p][5]), stamps[(p, last[p])], before, after), (table[p], before, after)
    [top] = [row for row in lines if row[:3] == ["max", "time", "lag:"]]
    assert top[4] == "s" and float(top[3]) == max(float(table[0][5]), float(table[3][5]))

    plain = json.loads(cli("groups", "describe", group, "--json", "--bootstrap-servers", bootstrap).stdout)
    assert "max_time_lag_s" not in plain and all("time_lag_s" not in o for o in plain["offsets"])


def committed_group(bootstrap: str, topic: str) -> tuple[str, Any]:
    """A member that owns the topic's partitions (so that partition 2, never committed, is
    listed) and has committed COMMITS; the caller closes it."""
    group = name("tl-g")
    member = consumer(bootstrap, group, topic, "tl-a")
    assert join_all([member], len(COUNTS))
    member.commit({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in COMMITS.items()})
    return group, member


# -- the embedded coordinator ----------------------------------------------------------------
def test_describe_shows_each_partitions_time_lag() -> None:
    topic = name("tl-t")
    with EmbeddedCluster(nodes=2, group_initial_rebalance_delay_ms=0) as cluster:  # leaders on both nodes
        cluster.create_topic(topic, len(COUNTS))
        stamps = produce_timed(cluster.bootstrap_servers, topic)
        group, member = committed_group(cluster.bootstrap_servers, topic)
        try:
            check_time_lags(cluster.bootstrap_servers, group, topic, stamps, {})
        finally:
            member.close()


def test_watch_prints_the_time_lag_at_each_look(cluster: EmbeddedCluster) -> None:
    """docs/cli.md: $ groupclient groups watch billing --lag-seconds --interval-ms 1000 --duration-s 3

    A line at each look, which is not a change: with ``--count 1`` and nothing changing, the
    watch goes on until ``--duration-s``."""
    topic = name("tl-t")
    cluster.create_topic(topic, len(COUNTS))
    stamps = produce_timed(cluster.bootstrap_servers, topic)
    group, member = committed_group(cluster.bootstrap_servers, topic)
    try:
        started = now_ms()
        with watching(group, "--lag-seconds", "--bootstrap-servers", cluster.bootstrap_servers,
                      "--interval-ms", "200", "--duration-s", "2", "--count", "1") as w:
            code, stderr = w.wait_exit()
        ended = now_ms()
    finally:
        member.close()
    assert code == 0 and stderr == "", stderr
    assert w.lines[0].endswith(f" {group}: state Stable, protocol range, 1 member"), w.text
    timed = [line.split(f" {group}: time lag: ", 1)[1] for line in w.lines if f" {group}: time lag: " in line]
    assert len(timed) >= 4, w.text  # about 2 s / 200 ms looks; every one has its line
    seen = []
    for line in timed:
        match = re.fullmatch(rf"max (\S+) s; {topic}\[0\] (\S+) s, {topic}\[1\] 0\.000 s, {topic}\[2\] -, "
                             rf"{topic}\[3\] (\S+) s", line)
        assert match is not None, line
        top, lag0, lag3 = (float(g) for g in match.groups())
        assert top == lag0 and between(lag0, stamps[(0, 3)], started, ended), line
        assert between(lag3, stamps[(3, 0)], started, ended), line
        seen.append(lag0)
    assert seen == sorted(seen) and seen[-1] > seen[0], timed  # the clock moves on between looks


def test_a_timestamp_ahead_of_the_clock_is_a_time_lag_of_0(cluster: EmbeddedCluster) -> None:
    """A producer whose clock runs ahead: 0, not a negative time lag (as the consumer's gauge)."""
    topic, group = name("tl-t"), name("tl-g")
    cluster.create_topic(topic, 1)
    cluster.produce(topic, [b"a", b"b"], partition=0, timestamp_ms=now_ms() + 60_000)
    with GroupConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group, enable_auto_commit=False) as c:
        c.assign([TopicPartition(topic, 0)])
        c.commit({TopicPartition(topic, 0): OffsetAndMetadata(1, "", -1)})
    done = cli("groups", "describe", group, "--lag-seconds", "--json", "--bootstrap-servers", cluster.bootstrap_servers)
    assert done.returncode == 0, done.stderr
    d = json.loads(done.stdout)
    assert [(o["lag"], o["time_lag_s"]) for o in d["offsets"]] == [(1, 0.0)] and d["max_time_lag_s"] == 0.0


def test_lag_seconds_does_not_go_with_kafkas_columns() -> None:
    done = cli("groups", "describe", "g", "--format", "kafka", "--lag-seconds", timeout_s=30)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("usage: groupclient groups describe")
    assert "error: argument --lag-seconds: not allowed with --format kafka" in done.stderr, done.stderr


# -- Apache Kafka ----------------------------------------------------------------------------
@pytest.mark.kafka
def test_describe_time_lag_on_kafka(kafka_broker: Any) -> None:
    """As on the embedded coordinator; then the records before offset 6 of partition 0 are
    deleted (DeleteRecords): the last consumed one (3) is gone, and the first record at or after
    the committed offset still there (6) stands in."""
    bootstrap = kafka_broker.bootstrap
    topic = external.new_topic(bootstrap, len(COUNTS))
    stamps = produce_timed(bootstrap, topic)
    group, member = committed_group(bootstrap, topic)
    try:
        check_time_lags(bootstrap, group, topic, stamps, {})
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.delete_records({KafkaTopicPartition(topic, 0): 6})
        finally:
            admin.close()
        check_time_lags(bootstrap, group, topic, stamps, {0: 6})
    finally:
        member.close()
