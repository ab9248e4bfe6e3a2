"""close() is bounded by its timeout, whatever is gone, and says at WARNING what it waits for."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from groupclient.testing import GroupSimulation

from .polling import poll_until

Sim = Callable[..., GroupSimulation]


def member_with_offsets_to_commit(make_sim: Sim) -> tuple[GroupSimulation, Any]:
    """A member of a simulated group that owns both partitions of ``t`` and has consumed records
    it has not committed (auto-commit on: close() will commit them)."""
    sim = make_sim(topics={"t": 2})
    sim.produce("t", 10)
    consumer = sim.consumer("c", enable_auto_commit=True)
    consumer.subscribe(["t"])
    assert poll_until(consumer, lambda: len(consumer.assignment()) == 2, polls=20)
    assert poll_until(consumer, lambda: bool(consumer._subscription.consumed_offsets()), polls=10)
    return sim, consumer


@pytest.mark.parametrize("timeout_ms, bound_ms", [(5_000, 5_000), (None, 30_000)], ids=["given", "default"])
def test_close_with_the_cluster_gone_returns_within_its_timeout_and_warns(
        make_sim: Sim, caplog: pytest.LogCaptureFixture, timeout_ms: int | None, bound_ms: int) -> None:
    """Before: close() spent its timeout on the auto-commit, then up to request_timeout_ms more on
    the LeaveGroup and 5 s on the heartbeat thread, and said nothing until the commit failed."""
    sim, consumer = member_with_offsets_to_commit(make_sim)
    sim.stop_node(0)  # the only node: no coordinator, no broker
    started = sim.now
    with caplog.at_level(logging.WARNING):
        consumer.close(timeout_ms=timeout_ms)
    took = sim.now - started
    assert took <= bound_ms + 100, f"close() took {took} ms, its timeout is {bound_ms} ms"
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "close" in r.getMessage()]
    assert any("coordinator" in m and str(bound_ms) in m for m in warned), warned


def test_close_with_a_coordinator_that_does_not_answer_returns_within_its_timeout(make_sim: Sim) -> None:
    """Before: the commit used close()'s timeout, then the LeaveGroup waited request_timeout_ms
    (30 s) more on a coordinator that held every request."""
    from groupclient.coordinator.faults import FaultKind, FaultRule
    from groupclient.protocol.apis import ApiKey

    sim, consumer = member_with_offsets_to_commit(make_sim)
    for api in (ApiKey.OFFSET_COMMIT, ApiKey.LEAVE_GROUP):
        sim.inject_fault(FaultRule(int(api), FaultKind.DELAY, count=100, delay_ms=120_000))
    started = sim.now
    consumer.close(timeout_ms=5_000)
    assert sim.now - started <= 5_100, f"close() took {sim.now - started} ms, its timeout is 5000 ms"
