"""A rebalance listener that raises: GroupConsumer raises RebalanceListenerError from poll() and
loses no record over it (records drained in the poll that raised were lost: their positions and
commit offsets had moved), nor hands out records of partitions it is giving up while a listener
runs (groupclient.aio)."""

from __future__ import annotations

import time
from typing import Any

from groupclient import GroupConsumer, RebalanceListenerError, TopicPartition
from groupclient.coordinator import EmbeddedCluster

import pytest

pytestmark = pytest.mark.integration


class RaisingOnce:
    """Raises once, from on_partitions_assigned of a cooperative rebalance that revoked nothing
    (the follow-up one after a join): nothing was dropped, so fetched records wait in the
    fetcher while it runs."""

    def __init__(self) -> None:
        self.revoked_before = False
        self.raised = False

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.revoked_before = bool(revoked)

    def on_partitions_assigned(self, assigned: Any) -> None:
        revoked_before, self.revoked_before = self.revoked_before, False
        if not revoked_before and not self.raised:
            self.raised = True
            raise RuntimeError("the listener failed")


def test_a_listener_error_in_a_cooperative_rebalance_loses_no_record(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("raising", 2)
    for _ in range(4):
        cluster.produce("raising", [b"x" * 100] * 5000)
    settings: dict[str, Any] = dict(bootstrap_servers=cluster.bootstrap_servers, group_id="raising",
                                    auto_offset_reset="earliest", enable_auto_commit=False, max_poll_records=50,
                                    partition_assignment_strategy=["cooperative-sticky"], fetch_max_wait_ms=100)
    a = GroupConsumer("raising", **settings)
    b = GroupConsumer("raising", **settings)
    got: dict[int, list[int]] = {0: [], 1: []}
    raised = 0
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(got[0]) + len(got[1]) < 200:
            for tp, records in a.poll(timeout_ms=100).items():
                got[tp.partition] += [r.offset for r in records]
        a.subscribe(["raising"], listener=RaisingOnce())  # the same topics: the next rebalances call it
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (raised == 0 or len(a.assignment()) != 1 or len(b.assignment()) != 1):
            try:
                for tp, records in a.poll(timeout_ms=50).items():
                    got[tp.partition] += [r.offset for r in records]
            except RebalanceListenerError:
                raised += 1
            b.poll(timeout_ms=50)
        assert raised == 1 and len(a.assignment()) == 1
        kept = next(iter(a.assignment())).partition
        for _ in range(20):
            for tp, records in a.poll(timeout_ms=50).items():
                got[tp.partition] += [r.offset for r in records]
        offsets = got[kept]
        assert offsets == list(range(len(offsets))), f"a gap in partition {kept}"
        assert len(offsets) > 200
    finally:
        a.close()
        b.close()
