"""pytest plugin: a Kafka-wire cluster on 127.0.0.1 per test, without Docker or a JVM.

Installed with groupclient (entry point ``pytest11``), so no ``conftest.py`` is needed:

    def test_app(groupclient_cluster):
        groupclient_cluster.create_topic("orders", 3)
        run_my_app(bootstrap_servers=groupclient_cluster.bootstrap_servers)

Fixtures give a :class:`groupclient.testing.GroupclientCluster` (an ``EmbeddedCluster``).  Importing
this module starts nothing and does not import the coordinator; see docs/pytest-plugin.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .cluster import GroupclientCluster

MARKER = "groupclient_cluster"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(nodes=1, topics=None, initial_rebalance_delay_ms=0, consumer_heartbeat_interval_ms=500, "
        "**settings): options of the groupclient_cluster fixture; topics is {name: partitions} or a list of "
        "names (1 partition), settings are EmbeddedCluster/CoordinatorConfig fields (groupclient pytest plugin)")


def start_cluster(nodes: int = 1, topics: Mapping[str, int] | Iterable[str] | None = None,
                  initial_rebalance_delay_ms: int = 0, consumer_heartbeat_interval_ms: int = 500,
                  **settings: Any) -> GroupclientCluster:
    """Start a cluster as the marker options describe, with its topics created.

    ``consumer_heartbeat_interval_ms``: the interval KIP-848 members are told (Kafka's
    ``group.consumer.heartbeat.interval.ms``, 5000 by default, which makes each rebalance of a
    ``group_protocol="consumer"`` member take seconds); its minimum is lowered to match."""
    from .cluster import GroupclientCluster

    delay = settings.pop("group_initial_rebalance_delay_ms", initial_rebalance_delay_ms)
    interval = settings.setdefault("group_consumer_heartbeat_interval_ms", consumer_heartbeat_interval_ms)
    settings.setdefault("group_consumer_min_heartbeat_interval_ms", min(interval, 5000))
    if isinstance(topics, str):
        topics = [topics]
    wanted = dict(topics) if isinstance(topics, Mapping) else {name: 1 for name in topics or ()}
    cluster = GroupclientCluster(nodes=nodes, group_initial_rebalance_delay_ms=delay, **settings)
    cluster.start()
    try:
        for name, partitions in wanted.items():
            cluster.create_topic(name, partitions)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def marker_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Keyword arguments of every ``groupclient_cluster`` marker on the test; the closest wins per key."""
    options: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers(MARKER))):
        if marker.args:
            raise TypeError(f"@pytest.mark.{MARKER} takes keyword arguments only, got {marker.args!r}")
        options.update(marker.kwargs)
    return options


@pytest.fixture
def groupclient_cluster(request: pytest.FixtureRequest) -> Iterator[GroupclientCluster]:
    """A cluster for this test alone, configured by ``@pytest.mark.groupclient_cluster(...)``; stopped after it."""
    cluster = start_cluster(**marker_options(request))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def _groupclient_shared_cluster() -> Iterator[GroupclientCluster]:
    cluster = start_cluster()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def groupclient_cluster_session(_groupclient_shared_cluster: GroupclientCluster) -> Iterator[GroupclientCluster]:
    """One 1-node cluster for the whole session: topics, records, groups and offsets are shared between
    tests (use names unique to each test); markers do not apply; faults are cleared after each test."""
    yield _groupclient_shared_cluster
    _groupclient_shared_cluster.clear_faults()
