"""Helpers of benchmarks/spark_read.py: Spark's Kafka connector from Maven Central, the session,
the brokers and the benchmark's data.

``fetch_connector()`` resolves ``org.apache.spark:spark-sql-kafka-0-10_2.13:<pyspark version>`` and its
runtime dependencies with ``mvn dependency:copy-dependencies`` into
``~/.cache/groupclient/spark-kafka-<version>/libs`` once (a ``.complete`` marker, like
tests/kafka/broker.py's ``fetch()``), then drops the jars pyspark ships itself (same artifact, any
version), so the session's classpath has one copy of each.  ``python -m benchmarks.spark_setup``
fetches and prints the jars.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CACHE = Path(os.environ.get("GROUPCLIENT_CACHE", Path.home() / ".cache" / "groupclient"))
CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10_2.13:{version}"

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>groupclient.benchmarks</groupId>
  <artifactId>spark-kafka</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.spark</groupId><artifactId>spark-sql-kafka-0-10_2.13</artifactId><version>{version}</version></dependency>
  </dependencies>
</project>
"""


class ConnectorMissing(RuntimeError):
    """Maven could not resolve Spark's Kafka connector for this pyspark version."""


def pyspark_version() -> str:
    import pyspark
    return str(pyspark.__version__)


def _artifact(jar: str) -> str:
    """``kafka-clients-3.9.1.jar`` -> ``kafka-clients``: the name without its version."""
    match = re.match(r"(.+?)-\d[\w.+-]*\.jar$", jar)
    return match.group(1) if match else jar.removesuffix(".jar")


def shipped_jars() -> dict[str, str]:
    """The jars pyspark ships (pyspark/jars), by artifact name."""
    import pyspark
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    return {_artifact(j.name): j.name for j in jars.glob("*.jar")}


def fetch_connector(version: str | None = None) -> list[Path]:
    """The connector's jars and its runtime dependencies that pyspark does not ship; downloaded
    into the cache the first time.  Raises ConnectorMissing naming the artifact if Maven has none."""
    version = version or pyspark_version()
    target = CACHE / f"spark-kafka-{version}"
    libs, done = target / "libs", target / ".complete"
    if not done.exists():
        target.mkdir(parents=True, exist_ok=True)
        (target / "pom.xml").write_text(POM.format(version=version))
        started = time.monotonic()
        result = subprocess.run(["mvn", "-q", "-B", "-f", str(target / "pom.xml"), "dependency:copy-dependencies",
                                 f"-DoutputDirectory={libs}", "-DincludeScope=runtime"],
                                capture_output=True, text=True, timeout=900)
        if result.returncode != 0:
            output = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr).strip()
            why = next((line.removeprefix("[ERROR] ") for line in output.splitlines()
                        if "Could not" in line or "Failed to" in line), output[-600:])
            raise ConnectorMissing(f"cannot fetch {CONNECTOR.format(version=version)} from Maven Central "
                                   f"(pyspark {version}): {why[:600]}")
        done.write_text(f"fetched in {time.monotonic() - started:.1f} s\n")
    shipped = shipped_jars()
    return sorted(j for j in libs.glob("*.jar") if _artifact(j.name) not in shipped)


def skipped_jars(version: str | None = None) -> list[str]:
    """The fetched jars left out because pyspark ships the same artifact (for the report)."""
    libs = CACHE / f"spark-kafka-{version or pyspark_version()}" / "libs"
    shipped = shipped_jars()
    return sorted(j.name for j in libs.glob("*.jar") if _artifact(j.name) in shipped)


def spark_session(jars: list[Path] | None = None, master: str = "local[2]", log_level: str = "ERROR") -> Any:
    """A session like tests/spark/conftest.py's, with ``jars`` on its classpath (``spark.jars``)."""
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # the JVM's own address lookups: loopback only
    builder = (SparkSession.builder.master(master).appName("groupclient-spark-read-bench")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1"))
    if jars:
        builder = builder.config("spark.jars", ",".join(str(j) for j in jars))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(log_level)
    return session


@contextlib.contextmanager
def broker(name: str) -> Iterator[str]:
    """The bootstrap address of a running broker: ``embedded`` (the embedded coordinator, one node)
    or ``kafka`` (Apache Kafka 4.1, tests/kafka/broker.py)."""
    if name == "embedded":
        from groupclient.coordinator import EmbeddedCluster
        with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0) as cluster:
            yield cluster.bootstrap_servers
    elif name == "kafka":
        from tests.kafka.broker import KafkaBroker, missing_tools
        if missing_tools():
            raise RuntimeError(f"Apache Kafka needs {', '.join(missing_tools())} (Java 17 and Maven)")
        with KafkaBroker() as kafka:
            yield kafka.bootstrap
    else:
        raise ValueError(f"unknown broker {name!r}: embedded or kafka")


def produce(bootstrap: str, topic: str, records: int, partitions: int, value_size: int) -> float:
    """Create ``topic`` and fill it with ``records`` records (keys ``k<i>``, ``value_size``-byte
    values), a full batch per partition in turn; the seconds it took.  Raises unless every record
    is on the broker.  benchmarks/throughput.py's producer (confluent-kafka's, batch 64 KiB,
    linger 10 ms; kafka-python's if it is absent)."""
    from benchmarks.throughput_topics import produce as fill

    body = (b"0123456789abcdef" * (value_size // 16 + 1))[:value_size]
    return fill(bootstrap, topic, partitions, "none", value_size, records, payloads=itertools.repeat(body),
                key=lambda i: b"k%d" % i)


if __name__ == "__main__":
    try:
        for jar in fetch_connector():
            print(jar)
    except ConnectorMissing as exc:
        sys.exit(str(exc))
    print("left out (pyspark ships them):", ", ".join(skipped_jars()) or "none")
