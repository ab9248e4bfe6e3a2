"""Two members rebalancing with coroutine listeners: the listener's commit in
on_partitions_revoked and its seek in on_partitions_assigned take effect inside the rebalance,
so the records are consumed once across it; stop() and the listener."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from groupclient.coordinator import EmbeddedCluster
from tests.aio_compat.conftest import AK, Api, new_topic, unique

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

PARTITIONS = 4


def recording_listener(api: Api, consumer: Any, events: list[tuple[str, frozenset[int]]],
                       store: dict[Any, int] | None = None) -> Any:
    """A listener (a subclass of the library's base) whose methods are coroutines that await the
    consumer: commit() when revoked, or with ``store``: positions kept there and seeked back."""

    class Listener(api.listener_base):  # type: ignore[misc,name-defined]
        async def on_partitions_revoked(self, revoked: Any) -> None:
            events.append(("revoked", frozenset(tp.partition for tp in revoked)))
            if store is None:
                await consumer.commit()
            else:
                for tp in revoked:
                    store[tp] = await consumer.position(tp)

        async def on_partitions_assigned(self, assigned: Any) -> None:
            events.append(("assigned", frozenset(tp.partition for tp in assigned)))
            if store is not None:
                for tp in assigned:
                    consumer.seek(tp, store.get(tp, 0))
    return Listener()


async def consume_together(members: list[Any], got: list[list[Any]], until: Any, timeout_s: float = 30) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline:
        batches = await asyncio.gather(*(m.getmany(timeout_ms=100) for m in members))
        for mine, batch in zip(got, batches):
            mine += [r for records in batch.values() for r in records]
        if until():
            return True
    return until()


@pytest.mark.parametrize("store", [False, True], ids=["commit-when-revoked", "own-offset-store"])
async def test_a_second_member_takes_half_and_no_record_comes_twice(
        api: Api, cluster: EmbeddedCluster, make_consumer: Any, store: bool) -> None:
    topic = new_topic(cluster, PARTITIONS, 40)
    group = unique("g")
    offsets: dict[Any, int] | None = {} if store else None
    a = make_consumer(group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
    b = make_consumer(group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
    a_events: list[tuple[str, frozenset[int]]] = []
    b_events: list[tuple[str, frozenset[int]]] = []
    await a.start()
    a.subscribe([topic], listener=recording_listener(api, a, a_events, offsets))
    got: list[list[Any]] = [[], []]
    assert await consume_together([a], got[:1], lambda: len(got[0]) >= 40)
    cluster.produce(topic, [str(i).encode() for i in range(40, 80)])
    await b.start()
    b.subscribe([topic], listener=recording_listener(api, b, b_events, offsets))

    def split() -> bool:
        owned = [{tp.partition for tp in m.assignment()} for m in (a, b)]
        return all(owned) and not owned[0] & owned[1] and len(owned[0] | owned[1]) == PARTITIONS
    assert await consume_together([a, b], got, lambda: split() and len(got[0]) + len(got[1]) >= 80)
    everything = [(r.partition, r.offset) for r in got[0] + got[1]]
    assert len(everything) == 80 and len(set(everything)) == 80
    assert ("revoked", frozenset(range(PARTITIONS))) in a_events
    assert a_events[-1][0] == "assigned" and b_events[-1][0] == "assigned"
    assert a_events[-1][1] | b_events[-1][1] == set(range(PARTITIONS))


async def test_difference_stop_revokes_through_the_listener(api: Api, cluster: EmbeddedCluster,
                                                           make_consumer: Any) -> None:
    """groupclient's stop() revokes the partitions through the listener before leaving (as
    kafka-python and Java close()); aiokafka's stop() calls no listener."""
    topic = new_topic(cluster, 2, 10)
    consumer = make_consumer(group_id=unique("g"), auto_offset_reset="earliest", enable_auto_commit=False)
    events: list[tuple[str, frozenset[int]]] = []
    await consumer.start()
    consumer.subscribe([topic], listener=recording_listener(api, consumer, events))
    got: list[list[Any]] = [[]]
    assert await consume_together([consumer], got, lambda: len(got[0]) >= 10)
    await consumer.stop()
    revoked_on_stop = events[-1] == ("revoked", frozenset({0, 1}))
    assert revoked_on_stop is (api.lib != AK), events
