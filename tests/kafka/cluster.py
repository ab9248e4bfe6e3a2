"""Three Apache Kafka nodes (KRaft, each broker and controller) on 127.0.0.1, each behind a FaultProxy.

One broker (tests/kafka/broker.py) cannot show what a chaos run must: a group coordinator that
moves when its node dies, partition leaders that fail over, a member cut off from one broker
while the rest of the cluster still serves it.  Here every node has three listeners: INTERNAL
(replication), CONTROLLER (the KRaft quorum) and EXTERNAL (clients), and EXTERNAL is advertised
at the node's proxy (tests/kafka/fault_proxy.py).  A broker answers Metadata and FindCoordinator
with the addresses of the listener the request came in on, so clients that bootstrap at the
proxies reach every broker through its proxy, while the brokers replicate and vote past them: a
fault cuts a client off, never a replica.

Node index ``i`` (``proxies[i]``, ``kill(i)``...) is ``node.id`` ``i + 1``.  Internal topics are
replicated 3 times with min.insync.replicas 2, so one node down loses nothing and blocks nothing;
``start()`` makes __consumer_offsets while every node is up (later, with one down, it could not be
placed).  The cluster's own lookups (leaders, coordinator, end offsets) go straight to a node's
EXTERNAL port, past the proxies' rules; ``admin()`` (client_id kafka-cluster-admin) goes through
them.  ``python -m tests.kafka.cluster`` runs one until interrupted.
"""

from __future__ import annotations

import functools
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from benchmarks.brokers import free_port
from tests.kafka.broker import _random_cluster_id, fetch, home, missing_tools
from tests.kafka.fault_proxy import FaultProxy

T = TypeVar("T")
VERSION = "4.4.0"
PROBE_CLIENT_ID = "kafka-cluster-probe"  # the client_id of this module's own requests
_NOT_YET = (OSError, EOFError, ValueError, struct.error)  # a node not (or no longer) answering

SETTINGS = {
    "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "10",
    "transaction.state.log.replication.factor": "3", "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "10",
    "share.coordinator.state.topic.replication.factor": "3", "share.coordinator.state.topic.min.isr": "2",
    "default.replication.factor": "3", "min.insync.replicas": "2", "num.partitions": "1",
    "unclean.leader.election.enable": "false", "auto.create.topics.enable": "false",
    "group.initial.rebalance.delay.ms": "0",
    # the consumer group protocol (KIP-848) at test speed, as tests/kafka/broker.py sets it; and
    # classic sessions as short as 1 s, so that a member cut off is given up soon
    "group.consumer.min.heartbeat.interval.ms": "500", "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.session.timeout.ms": "6000", "group.consumer.session.timeout.ms": "10000",
    "group.min.session.timeout.ms": "1000",
    # A node killed is fenced when its heartbeats stop for broker.session.timeout.ms (9 s by default),
    # and only then do its partitions get new leaders.  The quorum's timeouts are longer than
    # Kafka's (1 s election, 2 s fetch) so that a starved machine (three JVMs and the members on
    # two cores) does not move the controller about, yet short enough that losing the active
    # controller costs seconds, not the half-minute of broker.py's single voter.
    "broker.session.timeout.ms": "6000", "broker.heartbeat.interval.ms": "1000",
    "controller.quorum.election.timeout.ms": "2500", "controller.quorum.fetch.timeout.ms": "5000",
}


class KafkaCluster:
    """Context manager: ``nodes`` formatted KRaft nodes, running, each reached through its proxy."""

    def __init__(self, nodes: int = 3, version: str = VERSION, properties: dict[str, str] | None = None,
                 start_timeout_s: float = 120.0) -> None:
        """``properties`` are added to (and override) every node's server.properties."""
        self.nodes = nodes
        self.version = version
        self.properties = {**SETTINGS, **(properties or {})}
        self.start_timeout_s = start_timeout_s
        self.libs = fetch(version)
        self.cluster_id = _random_cluster_id()
        # ports below the ephemeral range (free_port): a controller binds seconds after start
        ports: list[int] = []
        while len(ports) < 3 * nodes:  # free_port() may draw one twice: nothing holds it meanwhile
            if (port := free_port()) not in ports:
                ports.append(port)
        self.internal_ports, self.controller_ports = ports[:nodes], ports[nodes:2 * nodes]
        self.external_ports = ports[2 * nodes:]
        self.workdir = Path(tempfile.mkdtemp(prefix="groupclient-kafka-cluster-"))
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * nodes
        self._turn = 0
        self.proxies: list[FaultProxy] = []
        try:  # the proxies listen from now on: their ports are in every node's configuration
            for i in range(nodes):
                self.proxies.append(FaultProxy(self.external_ports[i], f"node{i}"))
        except BaseException:
            self.close()
            raise

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(p.address for p in self.proxies)

    def node_id(self, i: int) -> int:
        return i + 1

    def index_of(self, node_id: int) -> int:
        return node_id - 1

    def log_path(self, i: int) -> Path:
        return self.workdir / f"node-{i}" / "broker.log"

    def alive(self, i: int) -> bool:
        proc = self.procs[i]
        return proc is not None and proc.poll() is None

    def _java(self, *args: str) -> list[str]:
        return ["java", "-Xms256m", "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                f"-Dlog4j2.configurationFile={home(self.version) / 'log4j2.xml'}",
                "-cp", f"{self.libs}/*", *args]

    def _configure(self, i: int) -> Path:
        voters = ",".join(f"{self.node_id(n)}@127.0.0.1:{port}" for n, port in enumerate(self.controller_ports))
        lines = [
            "process.roles=broker,controller", f"node.id={self.node_id(i)}", f"controller.quorum.voters={voters}",
            f"listeners=INTERNAL://127.0.0.1:{self.internal_ports[i]},"
            f"CONTROLLER://127.0.0.1:{self.controller_ports[i]},EXTERNAL://127.0.0.1:{self.external_ports[i]}",
            f"advertised.listeners=INTERNAL://127.0.0.1:{self.internal_ports[i]},"
            f"EXTERNAL://127.0.0.1:{self.proxies[i].port}",
            "listener.security.protocol.map=INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "controller.listener.names=CONTROLLER", "inter.broker.listener.name=INTERNAL",
            f"log.dirs={self.workdir / f'node-{i}' / 'data'}",
            *(f"{key}={value}" for key, value in self.properties.items()), "",
        ]
        props = self.workdir / f"node-{i}" / "server.properties"
        props.parent.mkdir(parents=True, exist_ok=True)
        props.write_text("\n".join(lines))
        return props

    def _format(self, i: int) -> None:
        props = self._configure(i)
        # "--cluster-id=ID": a random id may start with "-", which would read as an option
        done = subprocess.run(self._java("kafka.tools.StorageTool", "format", f"--cluster-id={self.cluster_id}",
                                         "-c", str(props)), capture_output=True, timeout=120)
        if done.returncode:
            raise RuntimeError(f"formatting node {i} failed ({done.returncode}): "
                               f"{done.stdout.decode()}{done.stderr.decode()}")

    def _launch(self, i: int) -> None:
        props = self.workdir / f"node-{i}" / "server.properties"
        with self.log_path(i).open("ab") as log:  # appended to across restarts
            self.procs[i] = subprocess.Popen(self._java("kafka.Kafka", str(props)), stdout=log, stderr=subprocess.STDOUT)

    def start(self) -> KafkaCluster:
        """Format and start every node at once; return when each serves all of them, and the group
        coordinator's topic (__consumer_offsets, made on first use, with every node up) exists."""
        with ThreadPoolExecutor(self.nodes) as pool:
            list(pool.map(self._format, range(self.nodes)))
        for i in range(self.nodes):
            self._launch(i)
        self._wait_serving(range(self.nodes), self.start_timeout_s)
        self.coordinator_of("kafka-cluster-warm-up")
        return self

    def kill(self, i: int) -> None:
        """SIGKILL node ``i``: no controlled shutdown, as a crash."""
        proc, self.procs[i] = self.procs[i], None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)

    def start_node(self, i: int, timeout_s: float | None = None) -> None:
        """Start node ``i`` again (same ports, same data); return when it serves the whole cluster
        and every other live node lists it again (it is unfenced)."""
        if self.alive(i):
            raise RuntimeError(f"node {i} is running")
        self._launch(i)
        self._wait_serving([i], timeout_s or self.start_timeout_s)
        others = [n for n in range(self.nodes) if n != i and self.alive(n)]
        self._wait_serving(others, timeout_s or self.start_timeout_s)

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM every node at once, then SIGKILL what is left after ``timeout_s``: the last
        nodes of a cluster going down have no quorum left to acknowledge their controlled shutdown,
        and may wait for it.  ``timeout_s=0``: SIGKILL at once."""
        procs = [p for p in self.procs if p is not None]
        self.procs = [None] * self.nodes
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM if timeout_s > 0 else signal.SIGKILL)
        deadline = time.monotonic() + timeout_s
        for proc in procs:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)

    def close(self) -> None:
        """Stop every node (SIGKILL: their data goes too), close the proxies, remove the files."""
        self.stop(timeout_s=0)
        for proxy in self.proxies:
            proxy.close()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def save_logs(self, directory: Path, prefix: str = "kafka-cluster") -> list[Path]:
        """Copy every node's log to ``directory`` (a failed test's artifacts)."""
        directory.mkdir(parents=True, exist_ok=True)
        saved = []
        for i in range(self.nodes):
            if self.log_path(i).exists():
                saved.append(Path(shutil.copy(self.log_path(i), directory / f"{prefix}-node{i}.log")))
        return saved

    def __enter__(self) -> KafkaCluster:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- waiting ---------------------------------------------------------------------------------
    def _wait_serving(self, indexes: Iterable[int], timeout_s: float) -> None:
        """Until each node answers Metadata (on its own listener, past the proxy) listing every node."""
        waiting = set(indexes)
        deadline = time.monotonic() + timeout_s
        everyone = {self.node_id(n) for n in range(self.nodes)}
        while waiting:
            for i in sorted(waiting):
                proc = self.procs[i]
                if proc is None or proc.poll() is not None:
                    raise RuntimeError(f"node {i} (node.id {self.node_id(i)}) is not running"
                                       f"{'' if proc is None else f' (exit {proc.returncode})'}; log: {self.log_path(i)}")
                try:
                    if {b.node_id for b in self._metadata(i, []).brokers} == everyone:
                        waiting.discard(i)
                except _NOT_YET:
                    pass  # not listening yet, or closed on us while starting
            if waiting and time.monotonic() > deadline:
                raise TimeoutError("; ".join(f"node {i} (node.id {self.node_id(i)}) did not serve all {self.nodes}"
                                             f" nodes within {timeout_s} s; log: {self.log_path(i)}"
                                             for i in sorted(waiting)))
            if waiting:
                time.sleep(0.2)

    def _retry(self, what: str, attempt: Callable[[], T], timeout_s: float) -> T:
        """``attempt()`` until it returns, within ``timeout_s``: a node down (killed, not yet fenced)
        or a leader moving fails a request for a few seconds."""
        from kafka.errors import KafkaError

        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return attempt()
            except (*_NOT_YET, LookupError, RetryLater, KafkaError) as exc:
                if time.monotonic() > deadline:
                    logs = ", ".join(str(self.log_path(i)) for i in range(self.nodes))
                    raise TimeoutError(f"{what}: no answer within {timeout_s} s (last: {exc!r}); logs: {logs}") from exc
            time.sleep(0.2)

    def _any_live(self) -> int:
        """A running node, another each time (one still starting fails a request, the next may not)."""
        live = [i for i in range(self.nodes) if self.alive(i)]
        if not live:
            raise RetryLater("no node is running")
        self._turn += 1
        return live[self._turn % len(live)]

    # -- requests of our own, straight to a node's EXTERNAL listener (no proxy rule applies) ----
    def _ask(self, i: int, request: Any, response_cls: Any, version: int, timeout_s: float = 5.0) -> Any:
        request.with_header(correlation_id=1, client_id=PROBE_CLIENT_ID)
        with socket.create_connection(("127.0.0.1", self.external_ports[i]), timeout=timeout_s) as sock:
            sock.sendall(request.encode(version=version, header=True, framed=True))
            size = struct.unpack(">i", read_exactly(sock, 4))[0]
            return response_cls.decode(read_exactly(sock, size), version=version, header=True)

    def _metadata(self, i: int, topics: list[str]) -> Any:
        from kafka.protocol.metadata import MetadataRequest, MetadataResponse

        request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
                                  allow_auto_topic_creation=False)
        return self._ask(i, request, MetadataResponse, 12)

    def _partitions(self, i: int, topic: str) -> list[Any]:
        """The topic's partitions as node ``i`` knows them, each with a leader (or RetryLater)."""
        (found,) = self._metadata(i, [topic]).topics
        partitions = sorted(found.partitions, key=lambda p: p.partition_index)
        if found.error_code or not partitions or any(p.error_code or p.leader_id < 0 for p in partitions):
            raise RetryLater(f"{topic} on node {i}: error {found.error_code}, "
                             f"leaders {[(p.partition_index, p.leader_id, p.error_code) for p in partitions]}")
        return partitions

    # -- what tests ask ----------------------------------------------------------------------------
    def admin(self, **configs: Any) -> Any:
        """A kafka-python KafkaAdminClient bootstrapped at the proxies (the caller closes it)."""
        from kafka.admin import KafkaAdminClient

        return KafkaAdminClient(**{"bootstrap_servers": self.bootstrap_servers, "client_id": "kafka-cluster-admin",
                                   "request_timeout_ms": 10000, **configs})

    def create_topic(self, name: str, partitions: int, replication_factor: int = 3,
                     configs: dict[str, str] | None = None, timeout_s: float = 30.0) -> None:
        """Create the topic; return when every live node knows a leader for every partition."""
        admin = self.admin()
        try:
            admin.create_topics({name: {"num_partitions": partitions, "replication_factor": replication_factor,
                                        "configs": dict(configs or {})}})
        finally:
            admin.close()
        for i in range(self.nodes):
            if self.alive(i):
                self._retry(f"the leaders of {name} on node {i}", functools.partial(self._partitions, i, name), timeout_s)

    def leaders(self, topic: str, timeout_s: float = 30.0) -> dict[int, int]:
        """{partition: node index of its leader}, as a live node knows it (maybe a dead one, until
        the controller fences it)."""
        def attempt() -> dict[int, int]:
            return {p.partition_index: self.index_of(p.leader_id) for p in self._partitions(self._any_live(), topic)}
        return self._retry(f"the leaders of {topic}", attempt, timeout_s)

    def in_sync(self, topic: str) -> bool:
        """Whether every partition has every replica in sync, as a live node knows it (False while
        no node answers, or a partition has no leader)."""
        try:
            partitions = self._partitions(self._any_live(), topic)
        except (*_NOT_YET, RetryLater):
            return False
        return all(len(p.isr_nodes) == len(p.replica_nodes) for p in partitions)

    def active_controller(self, timeout_s: float = 30.0) -> int:
        """The node index of the KRaft quorum's leader (DescribeQuorum, forwarded by a broker).
        Killing it costs more: the quorum elects another (controller.quorum.fetch.timeout.ms), which
        then waits broker.session.timeout.ms before it fences the dead node and moves its leaders."""
        def attempt() -> int:
            admin = self.admin()
            try:
                quorum = admin.describe_metadata_quorum()
            finally:
                admin.close()
            return self.index_of(quorum["topics"][0]["partitions"][0]["leader_id"])
        return self._retry("the active controller", attempt, timeout_s)

    def coordinator_of(self, group_id: str, timeout_s: float = 60.0, key_type: int = 0) -> int:
        """The node index of ``group_id``'s coordinator (FindCoordinator, retried while the
        coordinator is not available, as while __consumer_offsets is made or moves); with
        ``key_type=1``, of a transactional id's transaction coordinator."""
        from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse

        def attempt() -> int:
            request = FindCoordinatorRequest(key_type=key_type, coordinator_keys=[group_id])
            (found,) = self._ask(self._any_live(), request, FindCoordinatorResponse, 4).coordinators
            if found.error_code or found.node_id < 0:
                raise RetryLater(f"FindCoordinator({group_id}): error {found.error_code}")
            return self.index_of(found.node_id)
        return self._retry(f"the coordinator of {group_id}", attempt, timeout_s)

    def end_offsets(self, topic: str, timeout_s: float = 30.0) -> dict[int, int]:
        """{partition: log end offset (high watermark)} for every partition, each from its leader."""
        from kafka.protocol.consumer import ListOffsetsRequest, ListOffsetsResponse

        def attempt() -> dict[int, int]:
            by_leader: dict[int, list[int]] = {}
            for p in self._partitions(self._any_live(), topic):
                by_leader.setdefault(self.index_of(p.leader_id), []).append(p.partition_index)
            offsets: dict[int, int] = {}
            for leader, indexes in by_leader.items():
                asked = ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
                    ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(partition_index=p, timestamp=-1)
                    for p in indexes])
                answer = self._ask(leader, ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[asked]),
                                   ListOffsetsResponse, 7)
                for p in answer.topics[0].partitions:
                    if p.error_code:  # NOT_LEADER_OR_FOLLOWER while a leader moves
                        raise RetryLater(f"ListOffsets {topic}[{p.partition_index}] on node {leader}: error {p.error_code}")
                    offsets[p.partition_index] = p.offset
            return offsets
        return self._retry(f"the end offsets of {topic}", attempt, timeout_s)


class RetryLater(Exception):
    """An answer that will change: no leader yet, a coordinator loading, a leader moved."""


def read_exactly(sock: socket.socket, n: int) -> bytes:
    """``n`` bytes from the socket (EOFError if it closes first)."""
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError(f"connection closed after {len(data)} of {n} bytes")
        data += chunk
    return bytes(data)


def main() -> int:
    if missing_tools():
        print(f"missing: {', '.join(missing_tools())}", file=sys.stderr)
        return 2
    started = time.monotonic()
    with KafkaCluster() as cluster:
        print(f"bootstrap_servers={cluster.bootstrap_servers} started in {time.monotonic() - started:.1f} s; "
              f"logs: {cluster.workdir}", flush=True)
        try:
            signal.sigwait({signal.SIGINT, signal.SIGTERM})
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    sys.exit(main())
