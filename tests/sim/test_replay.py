"""A seed replays exactly: the same seed, run twice in one process, gives the same trace byte for
byte: every frame each member sent and each answer it got (with their times: member ids,
generations, assignments and commits are in them), every listener call of every member, and what
each member was delivered.  Every random draw comes from the seed (the scheduler's choices,
latencies, each member's random source: backoff jitter, the least loaded node; the cluster's:
member ids, topic ids) and every time from the simulated clock."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from groupclient.protocol.apis import ApiKey
from groupclient.testing.schedules import random_schedule, run_schedule

SEEDS = [3, 11, 42, 97, 1234, 31337]  # 42 draws consumer-protocol members, 1234 a mixed group


def replay(seed: int) -> tuple[list[Any], dict[str, Any]]:
    sim = run_schedule(random_schedule(seed, faults=6), record_trace=True)
    try:
        assert sim.network.trace is not None
        members = {name: ([(e.at_ms, e.kind, sorted(e.partitions)) for e in m.events],
                          {tp: list(offsets) for tp, offsets in sorted(m.delivered.items())}, m.state)
                   for name, m in sorted(sim.members.items())}
        return list(sim.network.trace), members
    finally:
        sim.close()


def describe(entry: tuple[int, str, str, int, bytes]) -> str:
    at, kind, member, node, payload = entry
    if kind == "request" and len(payload) >= 12:
        key, version, correlation = struct.unpack_from(">hhi", payload, 4)
        name = ApiKey(key).name if key in ApiKey._value2member_map_ else str(key)
        return f"t={at} {member} -> node {node}: {name} v{version} #{correlation} ({len(payload)} bytes)"
    correlation = struct.unpack_from(">i", payload, 4)[0] if len(payload) >= 8 else -1
    return f"t={at} node {node} -> {member}: answer #{correlation} ({len(payload)} bytes)"


@pytest.mark.parametrize("seed", SEEDS)
def test_a_seed_replays_byte_for_byte(seed: int) -> None:
    first_trace, first_members = replay(seed)
    second_trace, second_members = replay(seed)
    assert len(first_trace) > 200, f"only {len(first_trace)} frames: the schedule did too little"
    for i, (a, b) in enumerate(zip(first_trace, second_trace)):
        assert a == b, (f"seed {seed}: frame {i} of {len(first_trace)} differs:\n  first:  {describe(a)}\n"
                        f"  second: {describe(b)}\nbefore it: {[describe(e) for e in first_trace[max(0, i - 3):i]]}")
    assert len(first_trace) == len(second_trace)
    assert first_members == second_members
