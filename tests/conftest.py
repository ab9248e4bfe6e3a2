from __future__ import annotations

from collections.abc import Iterator

import pytest

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
