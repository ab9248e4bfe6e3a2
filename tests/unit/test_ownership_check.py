"""The check the consumer-protocol tests rely on: two owners at one instant are found, a clean
handover is not, and a killed member owns nothing after its output ended."""

from __future__ import annotations

import threading
from typing import Any

from tests.integration.ownership import double_ownership
from tests.integration.peers import Peer


def peer(name: str, events: list[dict[str, Any]], ended_at: float | None = None) -> Peer:
    p = Peer.__new__(Peer)  # no process: only what the check reads
    p.name, p.events, p.ended_at, p._changed = name, events, ended_at, threading.Condition()
    return p


def test_a_clean_handover_passes_and_an_early_start_is_caught() -> None:
    a = peer("a", [{"event": "assigned", "partitions": [0, 1], "t": 1.0},
                   {"event": "revoked", "partitions": [1], "t": 2.0}])
    b = peer("b", [{"event": "assigned", "partitions": [1], "t": 2.5}])
    assert double_ownership([a, b], 10.0) == []
    early = peer("b", [{"event": "assigned", "partitions": [1], "t": 1.5}])
    [found] = double_ownership([a, early], 10.0)
    assert found.startswith("partition 1: a [1.000, 2.000] and b [1.500, 10.000]")


def test_a_killed_member_owns_nothing_after_its_output_ended() -> None:
    killed = peer("a", [{"event": "assigned", "partitions": [0], "t": 1.0}], ended_at=3.0)
    taker = peer("b", [{"event": "assigned", "partitions": [0], "t": 3.5}])
    assert double_ownership([killed, taker], 10.0) == []
    assert double_ownership([peer("a", killed.events, ended_at=4.0), taker], 10.0)
