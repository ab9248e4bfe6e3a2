"""``groupclient groups list|describe|watch`` run as a subprocess against the embedded
coordinator and Apache Kafka, and the command line's argument errors, ``--version`` and
``--help``."""

from __future__ import annotations

import json
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kafka import KafkaProducer

import groupclient
from groupclient import GroupConsumer, OffsetAndMetadata, TopicPartition
from groupclient.coordinator import EmbeddedCluster
from tests.integration import external

pytestmark = pytest.mark.integration

COUNTS = {0: 10, 1: 5, 2: 7}  # records per partition
COMMITS = {0: 4, 1: 5}  # partition 2 gets no commit
EXPECTED_OFFSETS = {0: (4, 10, 6), 1: (5, 5, 0), 2: (None, 7, None)}  # committed, end, lag


def cli(*args: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "groupclient", *args], capture_output=True, text=True,
                          timeout=timeout_s)


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def consumer(bootstrap: str, group: str, topic: str, client_id: str) -> GroupConsumer:
    return GroupConsumer(topic, bootstrap_servers=bootstrap, group_id=group, client_id=client_id,
                         enable_auto_commit=False, auto_offset_reset="earliest")


def join_all(members: list[GroupConsumer], partitions: int, timeout_s: float = 60) -> bool:
    """Poll every member in turn until their assignments split all partitions between them."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for m in members:
            m.poll(timeout_ms=100)
        owned = [m.assignment() for m in members]
        if all(owned) and sum(len(o) for o in owned) == partitions == len(set().union(*owned)):
            return True
    return False


class Watch:
    """``groups watch`` in the background; its stdout lines are read by a thread."""

    def __init__(self, *args: str) -> None:
        # SIGINT back to its default in the child: a runner started in the background (``cmd &``)
        # passes it on ignored, and then Python would not stop on the test's Ctrl-C
        self.proc = subprocess.Popen([sys.executable, "-m", "groupclient", "groups", "watch", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, predicate: Callable[[str], bool], timeout_s: float = 30) -> bool:
        """Read lines until ``predicate(all text so far)`` holds, the output ends, or time is up."""
        deadline = time.monotonic() + timeout_s
        while not predicate(self.text):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                line = self._queue.get(timeout=remaining)
            except queue.Empty:
                return False
            if line is None:
                return predicate(self.text)
            self.lines.append(line)
        return True

    def wait_exit(self, timeout_s: float = 30) -> tuple[int, str]:
        """The exit code and stderr, once the process ended by itself (all stdout read)."""
        code = self.proc.wait(timeout_s)
        self.wait_for(lambda _: False, timeout_s=5)  # the rest of stdout, up to its end
        assert self.proc.stderr is not None
        return code, self.proc.stderr.read()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@contextmanager
def watching(*args: str) -> Iterator[Watch]:
    watch = Watch(*args)
    try:
        yield watch
    finally:
        watch.kill()


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (just closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- the shared scenarios --------------------------------------------------------------------
def check_list_and_describe(bootstrap: str, group: str, topic: str) -> None:
    """Two members hold the topic's 3 partitions; one committed partitions 0 and 1 (COMMITS)."""
    a, b = consumer(bootstrap, group, topic, "cli-a"), consumer(bootstrap, group, topic, "cli-b")
    try:
        assert join_all([a, b], 3)
        a.commit({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in COMMITS.items()})
        done = cli("groups", "describe", group, "--json", "--bootstrap-servers", bootstrap)
        assert done.returncode == 0, done.stderr
        d = json.loads(done.stdout)
        assert (d["group_id"], d["state"], d["protocol_type"], d["protocol"]) == (group, "Stable", "consumer", "range")
        by_client = {m["client_id"]: m for m in d["members"]}
        assert set(by_client) == {"cli-a", "cli-b"}
        for client_id, member in (("cli-a", a), ("cli-b", b)):
            assigned = {TopicPartition(x["topic"], x["partition"]) for x in by_client[client_id]["assignment"]}
            assert assigned == member.assignment()
            assert by_client[client_id]["group_instance_id"] is None
        owner = {x["partition"]: m["member_id"] for m in d["members"] for x in m["assignment"]}
        rows = {o["partition"]: (o["committed_offset"], o["log_end_offset"], o["lag"]) for o in d["offsets"]}
        assert rows == EXPECTED_OFFSETS
        assert {o["partition"]: o["member_id"] for o in d["offsets"]} == owner
        assert {o["topic"] for o in d["offsets"]} == {topic} and d["total_lag"] == 6

        text = cli("groups", "describe", group, "--bootstrap-servers", bootstrap)
        assert text.returncode == 0, text.stderr
        table = {tuple(line.split()) for line in text.stdout.splitlines()}
        assert (topic, "0", "4", "10", "6", owner[0]) in table
        assert (topic, "1", "5", "5", "0", owner[1]) in table
        assert (topic, "2", "-", "7", "-", owner[2]) in table
        assert ("total", "lag:", "6") in table
        assert any(row[:2] == (group, "Stable") and row[2:4] == ("consumer", "range") for row in table)

        listed = cli("groups", "list", "--json", "--bootstrap-servers", bootstrap)
        assert listed.returncode == 0, listed.stderr
        mine = [g for g in json.loads(listed.stdout) if g["group_id"] == group]
        assert [(g["protocol_type"], g["state"], g["type"]) for g in mine] == [("consumer", "Stable", "classic")]
        listed = cli("groups", "list", "--bootstrap-servers", bootstrap)
        assert listed.returncode == 0 and listed.stdout.splitlines()[0].split() == [
            "GROUP", "PROTOCOL-TYPE", "STATE", "TYPE", "COORDINATOR"]
        assert any(line.split()[:4] == [group, "consumer", "Stable", "classic"] for line in listed.stdout.splitlines())

        missing = cli("groups", "describe", "no-such-group", "--bootstrap-servers", bootstrap)
        assert (missing.returncode, missing.stdout, missing.stderr) == (
            1, "", "groupclient groups describe: group no-such-group not found\n")
    finally:
        a.close()
        b.close()


def check_watch_shows_rebalance(bootstrap: str, group: str, topic: str) -> None:
    """A member joins a one-member group: the watch shows it joining and both new assignments;
    a second watch with --count 1 stops by itself at that first change."""
    a = consumer(bootstrap, group, topic, "cli-a")
    b: GroupConsumer | None = None
    common = ("--bootstrap-servers", bootstrap, "--interval-ms", "100", "--duration-s", "90")
    try:
        assert join_all([a], 4)
        with watching(group, *common) as live, watching(group, *common, "--count", "1") as once:
            for w in (live, once):  # the first look: the member with every partition
                assert w.wait_for(lambda t: "(client cli-a" in t and re.search(r"assignment \S+: \S+\[0-3\]", t)
                                  is not None), w.text
            b = consumer(bootstrap, group, topic, "cli-b")
            assert join_all([a, b], 4)
            joined = r"member joined: (\S+) \(client cli-b"
            assert live.wait_for(lambda t: (m := re.search(joined, t)) is not None
                                 and f"assignment {m.group(1)}: " in t), live.text
            b_id = re.search(joined, live.text).group(1)  # type: ignore[union-attr]
            a_id = re.search(r"member joined: (\S+) \(client cli-a", live.text).group(1)  # type: ignore[union-attr]
            # a's change from all four partitions to two (range gives each member two)
            assert live.wait_for(lambda t: re.search(rf"assignment {re.escape(a_id)}: \S+\[0-3\] -> \S+\[[0-3]-[0-3]\]",
                                                     t) is not None), live.text
            assert re.search(rf"assignment {re.escape(b_id)}: \S+\[[0-3]-[0-3]\]$", live.text, re.M), live.text
            code, stderr = once.wait_exit()
            assert code == 0 and "Traceback" not in stderr, stderr
            assert f"member joined: {b_id}" in once.text, once.text
            live.proc.send_signal(signal.SIGINT)  # Ctrl-C: a clean stop
            code, stderr = live.wait_exit()
            assert code == 0 and "Traceback" not in stderr, stderr
    finally:
        a.close()
        if b is not None:
            b.close()


# -- the embedded coordinator ----------------------------------------------------------------
def test_list_and_describe_on_two_nodes() -> None:
    group, topic = name("cli-g"), name("cli-t")
    with EmbeddedCluster(nodes=2, group_initial_rebalance_delay_ms=0) as cluster:
        cluster.create_topic(topic, 3)
        for partition, count in COUNTS.items():
            cluster.produce(topic, [b"x"] * count, partition=partition)
        check_list_and_describe(cluster.bootstrap_servers, group, topic)


def test_list_shows_each_groups_coordinator() -> None:
    with EmbeddedCluster(nodes=2, group_initial_rebalance_delay_ms=0) as cluster:
        assert cli("groups", "list", "--bootstrap-servers", cluster.bootstrap_servers).stdout == "no groups\n"
        topic = name("cli-t")
        cluster.create_topic(topic, 1)
        groups = [name("cli-g") for _ in range(6)]
        members = [consumer(cluster.bootstrap_servers, g, topic, "c") for g in groups]
        try:
            for m in members:
                assert join_all([m], 1)
            done = cli("groups", "list", "--json", "--bootstrap-servers", cluster.bootstrap_servers)
            assert done.returncode == 0, done.stderr
            listed = {g["group_id"]: g["coordinator"] for g in json.loads(done.stdout)}
            assert listed == {g: cluster.coordinator_of(g) for g in groups}
        finally:
            for m in members:
                m.close()


def test_watch_shows_a_rebalance(cluster: EmbeddedCluster) -> None:
    topic = name("cli-t")
    cluster.create_topic(topic, 4)
    check_watch_shows_rebalance(cluster.bootstrap_servers, name("cli-g"), topic)


def test_watch_a_missing_group_until_duration(cluster: EmbeddedCluster) -> None:
    with watching("nobody", "--bootstrap-servers", cluster.bootstrap_servers, "--interval-ms", "50",
                  "--duration-s", "0.5") as w:
        code, stderr = w.wait_exit()
    assert code == 0 and stderr == ""
    assert w.lines and w.lines[0].endswith(" nobody: group nobody not found") and len(w.lines) == 1


def test_empty_group_with_offsets_only(cluster: EmbeddedCluster) -> None:
    """A group that only committed (no members): Empty, no protocol, lag from the commits."""
    topic, group = name("cli-t"), name("cli-g")
    cluster.create_topic(topic, 2)
    cluster.produce(topic, [b"x"] * 6, partition=1)
    with GroupConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group, enable_auto_commit=False) as c:
        c.assign([TopicPartition(topic, 1)])
        c.commit({TopicPartition(topic, 1): OffsetAndMetadata(2, "", -1)})
    done = cli("groups", "describe", group, "--bootstrap-servers", cluster.bootstrap_servers)
    assert done.returncode == 0, done.stderr
    lines = [line.split() for line in done.stdout.splitlines()]
    assert lines[1] == [group, "Empty", "-", "-", "0", "0", f"(127.0.0.1:{cluster.bootstrap_servers.split(':')[1]})"]
    assert ["no", "members"] in lines and [topic, "1", "2", "6", "4", "-"] in lines and ["total", "lag:", "4"] in lines


# -- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [["list"], ["describe", "g"], ["watch", "g"]])
def test_unreachable_bootstrap_fails_fast_and_cleanly(command: list[str]) -> None:
    port = closed_port()
    started = time.monotonic()
    done = cli("groups", *command, "--bootstrap-servers", f"127.0.0.1:{port}", "--timeout-ms", "1000")
    elapsed = time.monotonic() - started
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"groupclient groups {command[0]}: no bootstrap server answered within 1000 ms: "
                           f"127.0.0.1:{port} (connect failed: Connection refused)\n")
    assert elapsed < 10, elapsed  # 1 s of trying, and the interpreter's start


def test_a_bootstrap_server_that_is_not_kafka_is_named_as_such() -> None:
    """An HTTP server at the address: said so, not "cannot reach" (which it was not)."""
    from tests.integration.wire import http_like_server

    with http_like_server() as port:
        done = cli("groups", "list", "--bootstrap-servers", f"127.0.0.1:{port}", "--timeout-ms", "1000")
    assert done.returncode == 2 and done.stdout == ""
    assert "127.0.0.1:%d (bad response size 1213486160 (the answer begins 'HTTP': the peer is an HTTP server, " \
           "not a Kafka broker))" % port in done.stderr, done.stderr


@pytest.mark.parametrize(("args", "error"), [
    (["coordinator", "--port", "99999"], "argument --port: a port is 0..65535, got 99999"),
    (["coordinator", "--port", "-1"], "argument --port: a port is 0..65535, got -1"),
    (["coordinator", "--topic", "orders:0"], "argument --topic: expected NAME or NAME:PARTITIONS with at least 1"),
    (["coordinator", "--nodes", "0"], "argument --nodes: must be at least 1, got 0"),
    (["coordinator", "--offsets-partitions", "0"], "argument --offsets-partitions: must be at least 1"),
    (["coordinator", "--initial-rebalance-delay-ms", "-1"], "argument --initial-rebalance-delay-ms: must be at least 0"),
    (["coordinator", "--log-level", "LOUD"], "argument --log-level: expected DEBUG, INFO"),
    (["demo", "--members", "0"], "argument --members: must be at least 1, got 0"),
    (["demo", "--partitions", "-3"], "argument --partitions: must be at least 1, got -3"),
    (["demo", "--records", "-1"], "argument --records: must be at least 1, got -1"),
    (["demo", "--records", "many"], "argument --records: expected an integer, got 'many'"),
    (["groups"], "the following arguments are required"),
    (["groups", "describe"], "the following arguments are required: group"),
    (["groups", "list", "--timeout-ms", "0"], "argument --timeout-ms: must be at least 1, got 0"),
    (["groups", "list", "--bootstrap-servers", "localhost:http"], "argument --bootstrap-servers: bad bootstrap"),
    (["groups", "watch", "g", "--count", "-1"], "argument --count: must be at least 1, got -1"),
    (["groups", "watch", "g", "--interval-ms", "0"], "argument --interval-ms: must be at least 1, got 0"),
    (["groups", "watch", "g", "--duration-s", "-2"], "argument --duration-s: must be more than 0"),
    (["assignors", "bench", "--members", "0", "--partitions", "4"], "argument --members: must be at least 1"),
    (["spark", "pipeline", "--events", "0"], "argument --events: must be at least 1, got 0"),
])
def test_argument_errors_are_usage_errors(args: list[str], error: str) -> None:
    done = cli(*args, timeout_s=30)
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    assert done.stderr.startswith("usage: groupclient") and f"error: {error}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_version() -> None:
    """The version, and which record path decodes (docs/performance.md)."""
    from groupclient.consumer import record_path

    done = cli("--version", timeout_s=30)
    assert done.returncode == 0
    # argparse wraps the line at the terminal's width
    assert " ".join(done.stdout.split()) == f"groupclient {groupclient.__version__}, {record_path.describe()}"


@pytest.mark.parametrize("command", [
    [], ["coordinator"], ["demo"], ["groups"], ["groups", "list"], ["groups", "describe"], ["groups", "watch"],
    ["assignors"], ["assignors", "bench"], ["spark"], ["spark", "pipeline"],
])
def test_help_of_every_command(command: list[str]) -> None:
    done = cli(*command, "--help", timeout_s=30)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith(f"usage: {' '.join(['groupclient', *command])}")
    # every option has its own help: on its line, or on the next, indented
    section = done.stdout.split("options:", 1)[1].splitlines()
    for i, line in enumerate(section):
        if line.startswith("  -"):
            inline = re.search(r"\S {2,}\S", line.strip()) is not None
            below = i + 1 < len(section) and re.match(r" {6,}\S", section[i + 1]) is not None
            assert inline or below, f"{line.strip()} has no help:\n{done.stdout}"


# -- Apache Kafka ----------------------------------------------------------------------------
@pytest.mark.kafka
def test_list_and_describe_on_kafka(kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap
    topic = external.new_topic(bootstrap, 3)
    produce_counts(bootstrap, topic)
    check_list_and_describe(bootstrap, name("cli-g"), topic)


def produce_counts(bootstrap: str, topic: str) -> None:
    """COUNTS records into each partition of ``topic``."""
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for partition, count in COUNTS.items():
        for _ in range(count):
            producer.send(topic, b"x", partition=partition)
    producer.flush()
    producer.close()


@pytest.mark.kafka
def test_watch_shows_a_rebalance_on_kafka(kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap
    check_watch_shows_rebalance(bootstrap, name("cli-g"), external.new_topic(bootstrap, 4))


def test_output_into_a_closed_pipe_ends_quietly(cluster: EmbeddedCluster) -> None:
    """`groupclient groups list --json | true`: before, a BrokenPipeError traceback and exit 1."""
    proc = subprocess.Popen([sys.executable, "-m", "groupclient", "groups", "list", "--json",
                             "--bootstrap-servers", cluster.bootstrap_servers],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before anything was written
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr


def test_describe_in_kafka_consumer_groups_columns(cluster: EmbeddedCluster) -> None:
    """`--format kafka`: kafka-consumer-groups.sh --describe's columns, so operators' scripts work."""
    topic = "kafka-format"
    cluster.create_topic(topic, 2)
    cluster.produce(topic, [b"a", b"b", b"c"], partition=0)
    consumer = GroupConsumer(topic, bootstrap_servers=cluster.bootstrap_servers, group_id="kafka-format-group",
                             client_id="billing-1", auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        for _ in range(50):
            if consumer.poll(200):
                break
        consumer.commit()
        done = cli("groups", "describe", "kafka-format-group", "--format", "kafka",
                   "--bootstrap-servers", cluster.bootstrap_servers)
    finally:
        consumer.close()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "" and lines[1].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                                                   "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    rows = [line.split() for line in lines[2:]]
    member = consumer.group_metadata().member_id or rows[0][6]
    assert rows == [["kafka-format-group", topic, "0", "3", "3", "0", member, "/127.0.0.1", "billing-1"],
                    ["kafka-format-group", topic, "1", "0", "0", "0", member, "/127.0.0.1", "billing-1"]]
