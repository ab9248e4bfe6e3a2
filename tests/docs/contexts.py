"""What documentation blocks run against: real embedded clusters, files and consumers.

Each context prepares the names a block takes as given (``handle``, ``cluster``, ``MyListener``)
and checks, after the block, that it did what the docs say it does.  The scenarios are the
situations the CLI examples were taken in (docs/cli.md: group ``billing`` on topic ``orders``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka.structs import OffsetAndMetadata, TopicPartition

from groupclient import ConsumerRebalanceListener, GroupConsumer
from groupclient.coordinator import EmbeddedCluster
from groupclient.coordinator.security import ListenerSecurity
from groupclient.testing import GroupclientCluster
from groupclient.testing.certificates import make_certificates
from tests.docs.runners import Enough, Prepared
from tests.integration.peers import PollGate, wait_until

RECORDS = 30


def docs_cluster(**settings: Any) -> EmbeddedCluster:
    return EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0, **settings)


@contextmanager
def nothing(tmp_path: Path) -> Iterator[Prepared]:
    """A block that needs nothing: it runs as it is."""
    yield Prepared()


def consuming(stand_in: str) -> Any:
    """A cluster whose ``orders`` holds 30 records; the block's consumer loop calls ``stand_in``
    (``print`` or ``handle``) per record, which ends the loop once all 30 came; each must have
    come exactly once."""

    @contextmanager
    def context(tmp_path: Path) -> Iterator[Prepared]:
        seen: list[Any] = []

        def record_seen(*args: Any) -> None:
            seen.append(args)
            if len(seen) == RECORDS:
                raise Enough

        def watchdog(namespace: dict[str, Any]) -> None:
            consumer = namespace.get("consumer")
            if consumer is not None:
                consumer.wakeup()  # the loop raises WakeupError: the block did not get its records

        def after(namespace: dict[str, Any]) -> None:
            namespace["consumer"].close()  # a second close() is a no-op
            if stand_in == "print":  # print(record.partition, record.offset, record.value)
                got = sorted((p, o, v) for p, o, v in seen)
            else:  # handle(record)
                got = sorted((r.partition, r.offset, r.value) for (r,) in seen)
            assert sorted(value for _, _, value in got) == sorted(f"order-{i}".encode() for i in range(RECORDS))
            assert len({(p, o) for p, o, _ in got}) == RECORDS

        with docs_cluster() as cluster:
            cluster.create_topic("orders", 3)
            cluster.produce("orders", [f"order-{i}".encode() for i in range(RECORDS)])
            yield Prepared({stand_in: record_seen}, cluster.bootstrap_servers, after, watchdog)

    return context


@contextmanager
def sasl_ssl(tmp_path: Path) -> Iterator[Prepared]:
    """docs/consumer.md's secured consumer: a SASL_SSL cluster whose CA is ``ca.pem`` in the
    working directory and which knows user ``billing``; the password in ``KAFKA_PASSWORD``.  The
    consumer must then join and get the partitions."""
    certificates = make_certificates(tmp_path)
    security = ListenerSecurity("SASL_SSL", ssl_certfile=str(certificates.server), users={"billing": "b-secret"})
    previous = Path.cwd()
    os.chdir(tmp_path)
    os.environ["KAFKA_PASSWORD"] = "b-secret"

    def after(namespace: dict[str, Any]) -> None:
        consumer = namespace["consumer"]
        try:
            assert wait_until(lambda: bool(consumer.poll(timeout_ms=100) or True) and len(consumer.assignment()) == 3,
                              30), consumer
        finally:
            consumer.close()

    try:
        with docs_cluster(security=security) as cluster:
            cluster.create_topic("orders", 3)
            yield Prepared({"GroupConsumer": GroupConsumer, "os": os}, cluster.bootstrap_servers, after)
    finally:
        os.environ.pop("KAFKA_PASSWORD", None)
        os.chdir(previous)


@contextmanager
def server_pem(tmp_path: Path) -> Iterator[Prepared]:
    """docs/coordinator.md's secured cluster: ``server.pem`` in the working directory."""
    make_certificates(tmp_path)
    previous = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield Prepared()
    finally:
        os.chdir(previous)


@contextmanager
def a_cluster(tmp_path: Path) -> Iterator[Prepared]:
    """``cluster``, a running embedded cluster; the faults the block adds must then fire on a
    member's requests (the member survives them and gets its partitions)."""
    with docs_cluster() as cluster:
        cluster.create_topic("orders", 3)

        def after(namespace: dict[str, Any]) -> None:
            consumer = GroupConsumer("orders", bootstrap_servers=cluster.bootstrap_servers, group_id="faults",
                                     heartbeat_interval_ms=100, session_timeout_ms=6000)
            try:
                assert wait_until(lambda: consumer.poll(timeout_ms=50) is not None and len(consumer.assignment()) == 3
                                  and len(cluster.faults_fired()) >= 4, 60), cluster.faults_fired()
            finally:
                consumer.close()
            assert sorted({kind for _, _, kind in cluster.faults_fired()}) == ["delay", "drop", "error"]

        yield Prepared({"cluster": cluster}, None, after)


@contextmanager
def plugin_faults(tmp_path: Path) -> Iterator[Prepared]:
    """docs/pytest-plugin.md's fault hooks: ``cluster`` a GroupclientCluster (what the fixture
    gives), ``run_my_consumer(bootstrap)`` an application consuming ``orders`` until it has every
    record, then polling on for a second (heartbeats every 100 ms)."""
    with GroupclientCluster(nodes=1, group_initial_rebalance_delay_ms=0) as cluster:
        cluster.create_topic("orders", 3)
        cluster.produce("orders", [f"order-{i}".encode() for i in range(RECORDS)])

        def run_my_consumer(bootstrap: str) -> None:
            consumer = GroupConsumer("orders", bootstrap_servers=bootstrap, group_id="app", auto_offset_reset="earliest",
                                     heartbeat_interval_ms=100, session_timeout_ms=6000)
            got: set[tuple[int, int]] = set()
            try:
                def consumed() -> bool:
                    for records in consumer.poll(timeout_ms=100).values():
                        got.update((r.partition, r.offset) for r in records)
                    return len(got) == RECORDS

                assert wait_until(consumed, 60), len(got)
                for _ in range(10):  # a second more: heartbeats go on
                    consumer.poll(timeout_ms=100)
            finally:
                consumer.close()

        yield Prepared({"cluster": cluster, "run_my_consumer": run_my_consumer})


@contextmanager
def own_assignor(tmp_path: Path) -> Iterator[Prepared]:
    """docs/assignors.md's assignor: defined by the block, then used by a group of two members
    on two topics, each of which must get one whole topic."""
    from groupclient.testing import GroupSimulation

    def after(namespace: dict[str, Any]) -> None:
        sim = GroupSimulation(seed=3, topics={"orders": 4, "payments": 2})
        try:
            for name in ("a", "b"):
                sim.add_member(name, topics=["orders", "payments"],
                               partition_assignment_strategy=[namespace["OneTopicPerMember"]])
            assert sim.run_until(sim.converged, max_ms=60_000)
            owned = sorted(sorted({tp.topic for tp in m.owned()}) for m in sim.live_members())
            assert owned == [["orders"], ["payments"]], owned
        finally:
            sim.close()

    yield Prepared(after=after)


class MyListener(ConsumerRebalanceListener):
    """docs/testing.md's ``MyListener``: a user's listener (it commits in on_partitions_revoked)."""

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.revoked = sorted(revoked)

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.assigned = sorted(assigned)


@contextmanager
def simulated_test(tmp_path: Path) -> Iterator[Prepared]:
    """docs/testing.md's test: defined by the block with the user's ``MyListener`` and
    ``MyAssignor`` (here: the range assignor), then run."""
    from groupclient.assignors import RangeAssignor

    def after(namespace: dict[str, Any]) -> None:
        namespace["test_my_listener_commits_before_losing_partitions"]()

    yield Prepared({"MyListener": MyListener, "MyAssignor": RangeAssignor}, None, after)


# -- the situations of docs/cli.md's examples ---------------------------------------------------

@dataclass
class Member:
    """A GroupConsumer polling in a thread of its own (it owns the consumer there)."""

    consumer_settings: dict[str, Any]
    stop: threading.Event = field(default_factory=threading.Event)
    gate: PollGate = field(default_factory=PollGate)
    thread: threading.Thread | None = None
    consumer: GroupConsumer | None = None
    commit: dict[TopicPartition, OffsetAndMetadata] | None = None

    def start(self) -> None:
        ready = threading.Event()

        def run() -> None:
            self.consumer = GroupConsumer("orders", **self.consumer_settings)
            ready.set()
            try:
                for _ in range(100_000):  # bounded; ends on stop()
                    if self.stop.is_set():
                        break
                    if not self.gate.may_poll():
                        self.stop.wait(0.05)
                        continue
                    self.consumer.poll(timeout_ms=50)
                    if self.commit is not None and self.consumer.assignment():
                        self.consumer.commit(self.commit)
                        self.commit = None
            finally:
                self.gate.ended()
                self.consumer.close()

        self.thread = threading.Thread(target=run, name=self.consumer_settings["client_id"], daemon=True)
        self.thread.start()
        assert ready.wait(30)

    def hold(self, seconds: float) -> None:
        """Stops calling poll() for ``seconds``, from the end of the poll() under way: returns
        once none is (a classic member sends its JoinGroup, and answers it, only from poll(), so
        a rebalance begun now waits for it until then)."""
        self.gate.hold(self.consumer_settings["client_id"])
        threading.Timer(seconds, self.gate.release).start()

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(30)
            assert not self.thread.is_alive()

    def assigned(self) -> list[int]:
        return sorted(tp.partition for tp in self.consumer.assignment()) if self.consumer is not None else []


@dataclass
class Billing:
    """Topic ``orders`` (3 partitions: 10, 5 and 7 records) and group ``billing``'s members."""

    address: str
    members: dict[str, Member]

    def member(self, client_id: str) -> Member:
        member = Member({"bootstrap_servers": self.address, "group_id": "billing", "client_id": client_id,
                         "enable_auto_commit": False, "heartbeat_interval_ms": 1000})
        self.members[client_id] = member
        member.start()
        return member


@contextmanager
def billing(tmp_path: Path, client_ids: tuple[str, ...] = ("billing-1", "billing-2")) -> Iterator[Billing]:
    """docs/cli.md's run: ``orders`` with 10, 5 and 7 records in partitions 0, 1 and 2; the
    members ``client_ids`` stable in group ``billing``; ``billing-1`` committed offset 4 of
    partition 0 and nothing else was committed."""
    with docs_cluster() as cluster:
        cluster.create_topic("orders", 3)
        for partition, count in enumerate((10, 5, 7)):
            cluster.produce("orders", [f"{partition}-{i}".encode() for i in range(count)], partition=partition)
        scene = Billing(cluster.bootstrap_servers, {})
        try:
            first = scene.member("billing-1")
            first.commit = {TopicPartition("orders", 0): OffsetAndMetadata(4, "", -1)}
            # billing-1 joins first, so that the group lists it first, as the docs show
            assert wait_until(lambda: bool(first.assigned()), 60), first.assigned()
            for client_id in client_ids[1:]:
                scene.member(client_id)
            shares = [[0, 1, 2]] if len(client_ids) == 1 else [[0, 1], [2]]
            assert wait_until(lambda: [m.assigned() for m in scene.members.values()] == shares
                              and first.commit is None, 60), [m.assigned() for m in scene.members.values()]
            yield scene
        finally:
            for member in scene.members.values():
                member.close()


@contextmanager
def shipping_cli(tmp_path: Path) -> Iterator[str]:
    """docs/cli.md's consumer-protocol run: ``orders`` as in ``billing``; ``shipping-1`` and
    ``shipping-2``, ``group_protocol="consumer"``, in group ``shipping`` (the first joins first and
    commits offset 4 of partition 0 before the second starts), the group Stable with each member at
    its target; its address."""
    from groupclient.admin import AdminConnection, GroupAdmin, GroupNotFoundError

    def settled(address: str) -> bool:
        with AdminConnection(address, timeout_ms=5000) as conn:
            try:
                d = GroupAdmin(conn).describe_group("shipping", conn.timer(), offsets=False)
            except GroupNotFoundError:
                return False
        return d.state == "Stable" and len(d.members) == 2 and not any(m.reconciling for m in d.members)

    # the suite's consumer-protocol timing (tests/conftest.py's KIP848_SETTINGS): a heartbeat a second
    with docs_cluster(group_consumer_heartbeat_interval_ms=1000, group_consumer_min_heartbeat_interval_ms=500) as cluster:
        cluster.create_topic("orders", 3)
        for partition, count in enumerate((10, 5, 7)):
            cluster.produce("orders", [f"{partition}-{i}".encode() for i in range(count)], partition=partition)
        members: list[Member] = []
        try:
            for client_id in ("shipping-1", "shipping-2"):
                member = Member({"bootstrap_servers": cluster.bootstrap_servers, "group_id": "shipping",
                                 "client_id": client_id, "group_protocol": "consumer", "enable_auto_commit": False})
                if not members:
                    member.commit = {TopicPartition("orders", 0): OffsetAndMetadata(4, "", -1)}
                members.append(member)
                member.start()
                # one at a time, the first committed before the second joins (its commit is at its
                # epoch, which the second one's joining moves)
                assert wait_until(lambda: bool(members[-1].assigned()) and members[0].commit is None, 60), \
                    [m.assigned() for m in members]
            assert wait_until(lambda: [m.assigned() for m in members] == [[0, 1], [2]]
                              and settled(cluster.bootstrap_servers), 60), [m.assigned() for m in members]
            yield cluster.bootstrap_servers
        finally:
            for member in members:
                member.close()


@contextmanager
def billing_cli(tmp_path: Path) -> Iterator[str]:
    """The ``billing`` run, for transcripts: its bootstrap address."""
    with billing(tmp_path) as scene:
        yield scene.address


@contextmanager
def billing_alone(tmp_path: Path) -> Iterator[Billing]:
    """The ``billing`` run with ``billing-1`` only (it has the whole topic)."""
    with billing(tmp_path, ("billing-1",)) as scene:
        yield scene


def billing_2_starts(scene: Billing) -> None:
    """``billing-2`` joins while ``billing-1`` holds off polling for 1.5 s, so the rebalance lasts
    long enough for a watch looking every 200 ms to see it."""
    scene.members["billing-1"].hold(1.5)
    scene.member("billing-2")


def billing_2_stops(scene: Billing) -> None:
    """``billing-2`` closes (it leaves the group), with ``billing-1`` holding off as above."""
    scene.members["billing-1"].hold(1.5)
    scene.members["billing-2"].close()
