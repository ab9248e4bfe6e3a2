"""Static membership, restarts with a data directory, and coordinator failover."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from benchmarks.brokers import free_port
from groupclient.coordinator import EmbeddedCluster
from tests.integration.peers import PeerSet, all_consumed, wait_stable_cover, wait_until

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("kind", ["kafka-python", "confluent"])
def test_static_member_restart_causes_no_rebalance(cluster: EmbeddedCluster, peers: PeerSet, kind: str) -> None:
    group, topic = f"static-{kind}", f"static-{kind}-topic"
    cluster.create_topic(topic, 4)
    a = peers.start(kind, cluster.bootstrap_servers, group, topic, instance_id="inst-a", session_ms=20000)
    b = peers.start(kind, cluster.bootstrap_servers, group, topic, instance_id="inst-b", session_ms=20000)
    assert wait_stable_cover(cluster, group, topic, 4, [a, b]), [a.describe(), b.describe()]
    before = cluster.describe_group(group)
    assert before is not None
    b_partitions = set(b.assignment)

    b.kill()  # a static member's crash is not a departure until its session (20 s) expires
    b2 = peers.start(kind, cluster.bootstrap_servers, group, topic, instance_id="inst-b", session_ms=20000)
    assert b2.wait_for(lambda p: p.assignment == b_partitions, 30), b2.describe()
    after = cluster.describe_group(group)
    assert after is not None
    assert after["generation"] == before["generation"], "restart of a static member caused a rebalance"
    assert after["state"] == "Stable"
    assert sorted(m["instance_id"] for m in after["members"].values()) == ["inst-a", "inst-b"]
    expected = set(cluster.produce(topic, [b"x"] * 80))
    assert wait_until(lambda: all_consumed([a, b2], expected), 30), [a.describe(), b2.describe()]


def test_second_process_with_same_instance_id_fences_the_first(cluster: EmbeddedCluster, peers: PeerSet) -> None:
    group, topic = "fencing", "fencing-topic"
    cluster.create_topic(topic, 2)
    first = peers.start("kafka-python", cluster.bootstrap_servers, group, topic, instance_id="dup")
    assert wait_stable_cover(cluster, group, topic, 2, [first]), first.describe()
    second = peers.start("kafka-python", cluster.bootstrap_servers, group, topic, instance_id="dup")
    assert second.wait_for(lambda p: p.assignment == {0, 1}, 30), second.describe()
    # the first incarnation learns it was fenced on its next heartbeat or commit
    cluster.produce(topic, [b"y"] * 10)
    # the error event, or the end of its output (an exit alone may come before its last lines are read)
    assert first.wait_for(lambda p: bool(p.errors) or p.ended_at is not None, 30), first.describe()
    assert "Fenced" in first.errors[0]["type"] or "fenced" in first.errors[0]["message"].lower(), first.errors
    members = cluster.describe_group(group)["members"]  # type: ignore[index]
    assert len(members) == 1


def consume_and_commit(bootstrap: str, topic: str, group: str, count: int) -> None:
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    got = 0
    for _ in range(100):
        got += sum(len(r) for r in consumer.poll(200).values())
        if got >= count:
            break
    consumer.commit()
    consumer.close()
    assert got == count


def test_restart_with_data_dir_keeps_offsets_topics_and_records(tmp_path: Path) -> None:
    port = free_port()
    with EmbeddedCluster(data_dir=tmp_path, ports=[port], group_initial_rebalance_delay_ms=0) as c1:
        c1.create_topic("persisted", 3)
        c1.produce("persisted", [f"v{i}".encode() for i in range(50)])
        consume_and_commit(c1.bootstrap_servers, "persisted", "keep", 50)
        committed = c1.committed_offsets("keep")
        assert sum(committed.values()) == 50
    with EmbeddedCluster(data_dir=tmp_path, ports=[port], group_initial_rebalance_delay_ms=0) as c2:
        assert c2.committed_offsets("keep") == committed
        assert sum(c2.end_offsets("persisted").values()) == 50
        consumer = KafkaConsumer(bootstrap_servers=c2.bootstrap_servers, group_id="keep")
        assert consumer.committed(TopicPartition("persisted", 0)) == committed[("persisted", 0)]
        consumer.close()


def test_crash_of_the_coordinator_process_loses_no_commit(tmp_path: Path) -> None:
    """SIGKILL the CLI coordinator after commits; a restart on the same data dir has them."""
    port = free_port()
    cmd = [sys.executable, "-m", "groupclient.coordinator", "--port", str(port), "--data-dir", str(tmp_path),
           "--initial-rebalance-delay-ms", "0", "--topic", "crash:2"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert server.stdout is not None
        assert server.stdout.readline().strip() == f"bootstrap_servers=127.0.0.1:{port}"
        bootstrap = f"127.0.0.1:{port}"
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        for i in range(40):
            producer.send("crash", f"c{i}".encode(), partition=i % 2)
        producer.flush()
        producer.close()
        consume_and_commit(bootstrap, "crash", "crashy", 40)
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id="crashy")
        committed = {p: consumer.committed(TopicPartition("crash", p)) for p in (0, 1)}
        consumer.close()
        assert committed == {0: 20, 1: 20}
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait(10)
    restarted = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert restarted.stdout is not None
        restarted.stdout.readline()
        consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", group_id="crashy")
        assert {p: consumer.committed(TopicPartition("crash", p)) for p in (0, 1)} == committed
        consumer.close()
    finally:
        restarted.send_signal(signal.SIGTERM)
        assert restarted.wait(15) == 0  # clean shutdown on SIGTERM


def test_stopping_the_coordinator_node_moves_the_group(peers: PeerSet) -> None:
    group, topic = "failover", "failover-topic"
    with EmbeddedCluster(nodes=3, group_initial_rebalance_delay_ms=0) as cluster:
        cluster.create_topic(topic, 6)
        members = [peers.start(k, cluster.bootstrap_servers, group, topic)
                   for k in ("kafka-python", "kafka-python", "confluent")]
        assert wait_stable_cover(cluster, group, topic, 6, members), [m.describe() for m in members]
        expected = set(cluster.produce(topic, [b"before"] * 120))
        assert wait_until(lambda: all_consumed(members, expected), 30)
        old = cluster.coordinator_of(group)
        assert old is not None
        cluster.stop_node(old)
        new = cluster.coordinator_of(group)
        assert new is not None and new != old
        expected |= set(cluster.produce(topic, [b"after"] * 120))
        assert wait_until(lambda: all_consumed(members, expected), 60), [m.describe() for m in members]
        assert wait_stable_cover(cluster, group, topic, 6, members), [m.describe() for m in members]
        end = {(topic, p): o for p, o in cluster.end_offsets(topic).items()}
        assert wait_until(lambda: cluster.committed_offsets(group) == end, 30), cluster.committed_offsets(group)
        cluster.start_node(old)  # the preferred leader takes its partitions back
        assert cluster.coordinator_of(group) == old
        expected |= set(cluster.produce(topic, [b"back"] * 60))
        assert wait_until(lambda: all_consumed(members, expected), 60), [m.describe() for m in members]
        assert not any(m.errors for m in members)
        peers.stop_all()  # while the cluster still runs, so members leave cleanly
        assert all(m.has_event("closed") for m in members), [m.describe() for m in members]


def test_third_party_producers(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("produced", 3)
    kp = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, compression_type="gzip")
    futures = [kp.send("produced", key=f"k{i}".encode(), value=f"kp{i}".encode()) for i in range(100)]
    kp.flush()
    assert all(f.get(10).offset >= 0 for f in futures)
    kp.close()
    ck = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True})
    delivered: list[object] = []
    for i in range(100):
        ck.produce("produced", value=f"ck{i}".encode(), on_delivery=lambda err, msg: delivered.append(err))
    assert ck.flush(10) == 0
    assert delivered == [None] * 100
    assert sum(cluster.end_offsets("produced").values()) == 200
    consumer = KafkaConsumer("produced", bootstrap_servers=cluster.bootstrap_servers, group_id="reader",
                             auto_offset_reset="earliest")
    values: list[bytes] = []
    for _ in range(100):
        values += [r.value for recs in consumer.poll(200).values() for r in recs]
        if len(values) >= 200:
            break
    consumer.close()
    assert sorted(values) == sorted([f"kp{i}".encode() for i in range(100)] + [f"ck{i}".encode() for i in range(100)])
