"""A real Apache Kafka broker (KRaft, single node) for tests, from Maven Central jars.

``fetch()`` resolves the broker and its dependencies with ``mvn dependency:copy-dependencies``
into ``~/.cache/groupclient/kafka-<version>/libs`` (nothing is committed); ``KafkaBroker`` formats
a KRaft log directory and runs the broker on 127.0.0.1 with ephemeral ports and
``group.initial.rebalance.delay.ms=0``.  ``python -m tests.kafka.broker fetch|run`` does the same
from the command line.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from types import TracebackType

from benchmarks.brokers import free_port, stop_process
from groupclient.testing.certificates import Certificates, make_certificates
from tests.locks import file_lock

# SASL users of the broker's SASL listeners (PLAIN from the JAAS line, SCRAM made at format time)
USERS = {"alice": "alice-secret", "bob": "bob-secret"}

KAFKA_VERSION = os.environ.get("GROUPCLIENT_KAFKA_VERSION", "4.4.0")
OLDEST_VERSION = "4.1.1"  # the oldest Kafka the client is tested against (a smoke test per protocol)
LOG4J_VERSION = "2.24.3"
CACHE = Path(os.environ.get("GROUPCLIENT_CACHE", Path.home() / ".cache" / "groupclient"))

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>groupclient.tests</groupId>
  <artifactId>kafka-broker</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>{kafka}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>{log4j}</version></dependency>
  </dependencies>
</project>
"""

LOG4J2 = """<Configuration status="WARN">
  <Appenders><Console name="out" target="SYSTEM_OUT"><PatternLayout pattern="[%d] %p %m (%c)%n"/></Console></Appenders>
  <Loggers>
    <Logger name="kafka.coordinator.group" level="INFO"/>
    <Logger name="org.apache.kafka.coordinator.group" level="INFO"/>
    <Root level="WARN"><AppenderRef ref="out"/></Root>
  </Loggers>
</Configuration>
"""


def missing_tools() -> list[str]:
    return [tool for tool in ("java", "javac", "mvn") if shutil.which(tool) is None]


def home(version: str = KAFKA_VERSION) -> Path:
    return CACHE / f"kafka-{version}"


def fetch(version: str = KAFKA_VERSION) -> Path:
    """The directory of the broker's jars, downloading them first if needed."""
    target = home(version)
    libs = target / "libs"
    done = target / ".complete"
    if done.exists():
        return libs
    with file_lock(CACHE / f"kafka-{version}.lock"):  # another pytest-xdist worker may be fetching it
        if done.exists():
            return libs
        target.mkdir(parents=True, exist_ok=True)
        (target / "pom.xml").write_text(POM.format(kafka=version, log4j=LOG4J_VERSION))
        started = time.monotonic()
        subprocess.run(["mvn", "-q", "-B", "-f", str(target / "pom.xml"), "dependency:copy-dependencies",
                        f"-DoutputDirectory={libs}", "-DincludeScope=runtime"], check=True, timeout=900)
        (target / "log4j2.xml").write_text(LOG4J2)
        done.write_text(f"fetched in {time.monotonic() - started:.1f} s\n")
    return libs


def _random_cluster_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class KafkaBroker:
    """Context manager: a formatted, running single-node KRaft broker on 127.0.0.1."""

    def __init__(self, version: str = KAFKA_VERSION, start_timeout_s: float = 90,
                 properties: dict[str, str] | None = None) -> None:
        """``properties`` are added to (and override) the broker's server.properties."""
        self.version = version
        self.properties = dict(properties or {})
        self.start_timeout_s = start_timeout_s
        self.port = free_port()
        self.controller_port = free_port()
        # SASL listeners beside the plain one: PLAIN and SCRAM-SHA-256/512 for USERS, and TLS
        # with certificates made at start (groupclient.testing.certificates)
        self.sasl_plaintext_port = free_port()
        self.sasl_ssl_port = free_port()
        self.workdir = Path(tempfile.mkdtemp(prefix="groupclient-kafka-"))
        self.certificates: Certificates | None = None
        self.log_path = self.workdir / "broker.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.libs = fetch(version)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_plaintext_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_plaintext_port}"

    @property
    def sasl_ssl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_ssl_port}"

    def _java(self, *args: str) -> list[str]:
        return ["java", "-Xms256m", "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                f"-Dlog4j2.configurationFile={home(self.version) / 'log4j2.xml'}",
                "-cp", f"{self.libs}/*", *args]

    def _configure(self) -> Path:
        props = self.workdir / "server.properties"
        self.certificates = make_certificates(self.workdir / "certs")
        plain_users = " ".join(f'user_{name}="{password}"' for name, password in USERS.items())
        jaas = []
        for listener in ("sasl_plaintext", "sasl_ssl"):
            jaas += [f"listener.name.{listener}.plain.sasl.jaas.config="
                     f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};"]
            jaas += [f"listener.name.{listener}.{m}.sasl.jaas.config="
                     f"org.apache.kafka.common.security.scram.ScramLoginModule required;"
                     for m in ("scram-sha-256", "scram-sha-512")]
        props.write_text("\n".join([
            "process.roles=broker,controller", "node.id=1",
            f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}",
            f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port},"
            f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_plaintext_port},SASL_SSL://127.0.0.1:{self.sasl_ssl_port}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port},"
            f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_plaintext_port},SASL_SSL://127.0.0.1:{self.sasl_ssl_port}",
            "controller.listener.names=CONTROLLER", "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
            "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
            "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", *jaas,
            "ssl.keystore.type=PEM", f"ssl.keystore.location={self.certificates.server}", "ssl.client.auth=none",
            f"log.dirs={self.workdir / 'data'}",
            "offsets.topic.replication.factor=1", "offsets.topic.num.partitions=10",
            "transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1",
            "share.coordinator.state.topic.replication.factor=1", "share.coordinator.state.topic.min.isr=1",
            "group.initial.rebalance.delay.ms=0", "auto.create.topics.enable=true", "num.partitions=1",
            # the consumer group protocol (KIP-848) at test speed: Kafka's defaults are a 5 s
            # heartbeat interval and a 45 s session (a group may set its own within the bounds)
            "group.consumer.min.heartbeat.interval.ms=500", "group.consumer.heartbeat.interval.ms=1000",
            "group.consumer.min.session.timeout.ms=6000", "group.consumer.session.timeout.ms=10000",
            # a new target at every change, as Kafka 4.1 computed it (4.3's default batches them a
            # second apart, KIP-1263): the hand-driven tests' answers do not depend on time
            # (KIP848_SETTINGS gives the embedded coordinator the same); the three-node cluster and
            # the embedded coordinator's own default batch, as test_consumer_protocol_batching.py
            # does on both
            "group.consumer.assignment.interval.ms=0",
            # a starved machine (the benchmarks, a busy CI host) must not cost the single voter its
            # leadership: a controller activated again fails to bind its port and stops for good
            "controller.quorum.election.timeout.ms=5000", "controller.quorum.fetch.timeout.ms=30000",
            *(f"{key}={value}" for key, value in self.properties.items()), "",
        ]))
        return props

    def start(self) -> KafkaBroker:
        if self.proc is not None and self.proc.poll() is None:
            # a second JVM on the same ports and data directory fails to bind the controller's
            # port ("Unable to start acceptor for CONTROLLER") and, on a loaded machine, takes
            # the running broker down with it: CreateTopics unanswered, then connections refused
            raise RuntimeError("this Kafka broker is running already: use `with KafkaBroker(...)` or start(), "
                               "not both")
        props = self.workdir / "server.properties"
        if not props.exists():
            props = self._configure()
            # "--cluster-id=ID": a random id may start with "-", which would read as an option
            scram = [arg for name, password in USERS.items() for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")
                     for arg in ("--add-scram", f"{m}=[name={name},password={password}]")]
            subprocess.run(self._java("kafka.tools.StorageTool", "format", f"--cluster-id={_random_cluster_id()}",
                                      "-c", str(props), *scram), check=True, capture_output=True, timeout=120)
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(self._java("kafka.Kafka", str(props)), stdout=log, stderr=subprocess.STDOUT)
        self._wait_until_serving()
        return self

    def _wait_until_serving(self) -> None:
        from kafka.admin import KafkaAdminClient

        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"Kafka exited with {self.proc.returncode}; log: {self.log_path}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    pass
                admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=5000)
                admin.describe_cluster()
                admin.close()
                return
            except Exception:
                time.sleep(0.3)
        raise TimeoutError(f"Kafka did not answer within {self.start_timeout_s} s; log: {self.log_path}")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            stop_process(proc, timeout_s=30)

    def restart(self) -> None:
        """Stop and start on the same ports and data: clients must find the coordinator again."""
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "run"
    if missing_tools():
        print(f"missing: {', '.join(missing_tools())}", file=sys.stderr)
        return 2
    if command == "fetch":
        print(fetch())
        return 0
    with KafkaBroker() as broker:
        print(f"bootstrap_servers={broker.bootstrap} log={broker.log_path}", flush=True)
        try:
            signal.sigwait({signal.SIGINT, signal.SIGTERM})
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    sys.exit(main(sys.argv[1:]))
