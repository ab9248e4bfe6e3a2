"""``groupclient groups list|describe|watch`` of consumer-protocol (KIP-848) groups, run as a
subprocess against the embedded coordinator and Apache Kafka 4.4 (the ``kip848_bootstrap``
fixture): groups of ``GroupConsumer(group_protocol="consumer")`` members, described with
ConsumerGroupDescribe (DescribeGroups says such a group "is not a classic group")."""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from groupclient import GroupConsumer, OffsetAndMetadata, TopicPartition
from groupclient.admin import AdminConnection, GroupAdmin, GroupDescription, GroupNotFoundError
from tests.integration import external
from tests.integration.peers import PollGate
from tests.integration.test_cli_groups import COMMITS, EXPECTED_OFFSETS, cli, name, produce_counts, watching

pytestmark = pytest.mark.integration


class Polled:
    """A consumer-protocol GroupConsumer polling in a thread of its own (a consumer belongs to the
    thread that made it).  ``hold()`` stops its polls, from the end of the one under way — its
    heartbeat thread keeps it in the group, but it gives up no partition until it polls again — and
    ``release()`` lets it go on."""

    def __init__(self, bootstrap: str, group: str, topic: str, client_id: str) -> None:
        self.settings: dict[str, Any] = {"bootstrap_servers": bootstrap, "group_id": group, "client_id": client_id,
                         "group_protocol": "consumer", "enable_auto_commit": False, "auto_offset_reset": "earliest"}
        self.topic = topic
        self.client_id = client_id
        self.assigned: frozenset[TopicPartition] = frozenset()
        self.commit: dict[TopicPartition, OffsetAndMetadata] | None = None
        self.error: BaseException | None = None
        self.gate = PollGate()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=client_id, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        consumer = GroupConsumer(self.topic, **self.settings)
        try:
            deadline = time.monotonic() + 600  # bounded: close() ends it long before
            while not self._stop.is_set() and time.monotonic() < deadline:
                if not self.gate.may_poll():
                    self._stop.wait(0.05)
                    continue
                consumer.poll(timeout_ms=50)
                self.assigned = frozenset(consumer.assignment())
                if self.commit is not None and self.assigned:
                    consumer.commit(self.commit)
                    self.commit = None
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            self.error = exc
        finally:
            self.gate.ended()
            consumer.close()

    def hold(self) -> None:
        """Returns once no poll() is under way (a member reconciles only in poll())."""
        self.gate.hold(self.client_id)

    def release(self) -> None:
        self.gate.release()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), f"{self.client_id} did not stop"


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def described(bootstrap: str, group: str, predicate: Callable[[GroupDescription], bool],
              timeout_s: float = 60) -> GroupDescription:
    """The group as the admin client describes it, once ``predicate`` holds of it."""
    last: GroupDescription | None = None
    with AdminConnection(bootstrap, timeout_ms=5000) as conn:
        admin = GroupAdmin(conn)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                last = admin.describe_group(group, conn.timer(), offsets=False)
            except GroupNotFoundError:
                last = None
            if last is not None and predicate(last):
                return last
            conn.pause(100)
    raise AssertionError(f"group {group} never got there; last described: {last}")


def settled(clients: set[str]) -> Callable[[GroupDescription], bool]:
    """Stable, with exactly these members, each holding its target and some partitions."""
    return lambda d: (d.state == "Stable" and {m.client_id for m in d.members} == clients
                      and all(m.assignment and not m.reconciling for m in d.members))


def test_list_and_describe_a_consumer_group(kip848_bootstrap: str) -> None:
    bootstrap, group = kip848_bootstrap, name("cli848")
    topic = external.new_topic(bootstrap, 3)
    produce_counts(bootstrap, topic)
    a = Polled(bootstrap, group, topic, "cli-a")
    b: Polled | None = None
    try:
        wait_until(lambda: len(a.assigned) == 3, 60, "cli-a to own the topic")
        b = Polled(bootstrap, group, topic, "cli-b")
        described(bootstrap, group, settled({"cli-a", "cli-b"}))
        a.commit = {TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in COMMITS.items()}
        wait_until(lambda: a.commit is None or a.error is not None, 30, "cli-a's commit")
        assert a.error is None and b.error is None, (a.error, b.error)
        # each member's own account too: a member acknowledges its partitions (the broker's
        # "settled") inside a poll, before that poll returns them to its thread
        wait_until(lambda: len(a.assigned) + len(b.assigned) == 3 and not a.assigned & b.assigned, 30,
                   "both members to have seen their partitions")
        owned = {"cli-a": a.assigned, "cli-b": b.assigned}

        done = cli("groups", "describe", group, "--json", "--bootstrap-servers", bootstrap)
        assert done.returncode == 0, done.stderr
        d = json.loads(done.stdout)
        assert (d["group_id"], d["type"], d["state"], d["protocol_type"]) == (group, "consumer", "Stable", "consumer")
        assert d["assignor"] == d["protocol"] == "uniform"  # the default server-side assignor
        assert isinstance(d["group_epoch"], int) and d["group_epoch"] >= 2
        assert d["assignment_epoch"] == d["group_epoch"]
        by_client = {m["client_id"]: m for m in d["members"]}
        assert set(by_client) == {"cli-a", "cli-b"}
        for client_id, m in by_client.items():
            current = {TopicPartition(x["topic"], x["partition"]) for x in m["assignment"]}
            assert current == owned[client_id] and m["target_assignment"] == m["assignment"]
            assert m["reconciling"] is False and m["member_epoch"] == d["assignment_epoch"]
            assert (m["subscribed_topics"], m["subscribed_topic_regex"], m["group_instance_id"]) == ([topic], None, None)
            assert m["client_host"].endswith("127.0.0.1")
        owner = {x["partition"]: m["member_id"] for m in d["members"] for x in m["assignment"]}
        rows = {o["partition"]: (o["committed_offset"], o["log_end_offset"], o["lag"]) for o in d["offsets"]}
        assert rows == EXPECTED_OFFSETS and d["total_lag"] == 6
        assert {o["partition"]: o["member_id"] for o in d["offsets"]} == owner

        text = cli("groups", "describe", group, "--bootstrap-servers", bootstrap)
        assert text.returncode == 0, text.stderr
        lines = [line.split() for line in text.stdout.splitlines()]
        assert lines[0] == ["GROUP", "TYPE", "STATE", "ASSIGNOR", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "MEMBERS",
                            "COORDINATOR"]
        epoch = str(d["group_epoch"])
        assert lines[1][:7] == [group, "consumer", "Stable", "uniform", epoch, epoch, "2"]
        assert lines[3] == ["MEMBER-ID", "GROUP-INSTANCE-ID", "CLIENT-ID", "CLIENT-HOST", "MEMBER-EPOCH",
                            "SUBSCRIBED", "ASSIGNMENT", "TARGET-ASSIGNMENT"]
        for m in d["members"]:
            row = next(line for line in lines if line and line[0] == m["member_id"])
            assert row[2] == m["client_id"] and row[4:6] == [epoch, topic] and row[6] == row[7], row
        assert "(reconciling)" not in text.stdout
        assert [topic, "0", "4", "10", "6", owner[0]] in lines and [topic, "2", "-", "7", "-", owner[2]] in lines
        assert ["total", "lag:", "6"] in lines

        kafka = cli("groups", "describe", group, "--format", "kafka", "--bootstrap-servers", bootstrap)
        assert kafka.returncode == 0, kafka.stderr
        out = kafka.stdout.splitlines()
        assert out[0] == "" and out[1].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                                                   "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
        members = {m["member_id"]: m for m in d["members"]}
        expected = []
        for member_id in sorted(members, key=lambda i: -len(members[i]["assignment"])):  # Kafka: biggest first
            for x in members[member_id]["assignment"]:
                committed, end, lag = (("-" if v is None else str(v)) for v in EXPECTED_OFFSETS[x["partition"]])
                expected.append([group, topic, str(x["partition"]), committed, end, lag, member_id,
                                 members[member_id]["client_host"], members[member_id]["client_id"]])
        assert [line.split() for line in out[2:]] == expected

        listed = cli("groups", "list", "--json", "--bootstrap-servers", bootstrap)
        assert listed.returncode == 0, listed.stderr
        mine = [g for g in json.loads(listed.stdout) if g["group_id"] == group]
        assert [(g["protocol_type"], g["state"], g["type"]) for g in mine] == [("consumer", "Stable", "consumer")]
        listed = cli("groups", "list", "--bootstrap-servers", bootstrap)
        assert listed.returncode == 0 and [group, "consumer", "Stable", "consumer"] in [
            line.split()[:4] for line in listed.stdout.splitlines()]

        # a group neither describe knows is still "not found"
        missing = cli("groups", "describe", "no-such-group", "--bootstrap-servers", bootstrap)
        assert (missing.returncode, missing.stdout, missing.stderr) == (
            1, "", "groupclient groups describe: group no-such-group not found\n")
    finally:
        a.close()
        if b is not None:
            b.close()


def test_describe_and_watch_show_a_member_reconciling(kip848_bootstrap: str) -> None:
    """Mirrors the block "docs/cli.md: $ groupclient groups watch shipping --interval-ms 200 --duration-s 8":
    shipping-2 joins while shipping-1, which has the whole topic, is not polling, so it cannot give
    up the partitions shipping-2 is to get; shipping-2 is reconciling (current assignment
    (none), target two partitions) until shipping-1 polls again."""
    bootstrap, group = kip848_bootstrap, name("cli848")
    topic = external.new_topic(bootstrap, 4)
    a = Polled(bootstrap, group, topic, "shipping-1")
    b: Polled | None = None
    try:
        wait_until(lambda: len(a.assigned) == 4, 60, "shipping-1 to own the topic")
        described(bootstrap, group, settled({"shipping-1"}))
        with watching(group, "--bootstrap-servers", bootstrap, "--interval-ms", "100", "--duration-s", "120") as w:
            assert w.wait_for(lambda t: re.search(r"assignment \S+: \S+\[0-3\]", t) is not None), w.text
            assert re.search(r": state Stable, type consumer, assignor uniform, group epoch \d+, assignment epoch \d+, "
                             r"1 member$", w.lines[0]), w.text
            assert re.search(r"member joined: \S+ \(client shipping-1, host \S+, epoch \d+\)$", w.text, re.M), w.text

            a.hold()
            b = Polled(bootstrap, group, topic, "shipping-2")
            stuck = described(bootstrap, group, lambda d: any(m.client_id == "shipping-2" and m.reconciling
                                                              and m.target_assignment for m in d.members))
            b_id = next(m.member_id for m in stuck.members if m.client_id == "shipping-2")
            assert stuck.state == "Reconciling", stuck

            done = cli("groups", "describe", group, "--json", "--bootstrap-servers", bootstrap)
            assert done.returncode == 0, done.stderr
            second = next(m for m in json.loads(done.stdout)["members"] if m["member_id"] == b_id)
            assert second["reconciling"] is True and second["assignment"] == [] and len(second["target_assignment"]) == 2
            text = cli("groups", "describe", group, "--bootstrap-servers", bootstrap)
            row = next(line for line in text.stdout.splitlines() if line.startswith(b_id))
            assert row.split()[-3:] == ["(none)", row.split()[-2], "(reconciling)"], row
            kafka = cli("groups", "describe", group, "--format", "kafka", "--bootstrap-servers", bootstrap)
            assert kafka.stdout.splitlines()[:2] == ["", f"Warning: Consumer group '{group}' is rebalancing."], kafka.stdout
            assert b_id not in kafka.stdout  # Kafka's tool shows no row for a member that owns nothing

            joined = rf"member joined: {re.escape(b_id)} \(client shipping-2"
            assert w.wait_for(lambda t: re.search(joined, t) is not None
                              and re.search(rf"reconciling {re.escape(b_id)}: \(none\) -> \S+\[", t) is not None
                              and re.search(r"group epoch \d+ -> \d+", t) is not None), w.text
            assert "state Stable -> Reconciling" in w.text or "state Stable -> Assigning" in w.text, w.text

            a.release()
            assert w.wait_for(lambda t: re.search(rf"reconciled {re.escape(b_id)}: \S+\[", t) is not None
                              and re.search(r"state (Reconciling|Assigning) -> Stable", t) is not None), w.text
            described(bootstrap, group, settled({"shipping-1", "shipping-2"}))
            w.proc.send_signal(signal.SIGINT)
            code, stderr = w.wait_exit()
            assert code == 0 and "Traceback" not in stderr, stderr
        assert a.error is None and b.error is None, (a.error, b.error)
    finally:
        a.release()
        a.close()
        if b is not None:
            b.close()
