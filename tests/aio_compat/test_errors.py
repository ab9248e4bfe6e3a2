"""Errors: the same class (by aiokafka's name, imported from each library) for the same mistake,
and the deliberate differences, each asserting both libraries' behaviour."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from groupclient.coordinator import EmbeddedCluster
from tests.aio_compat.conftest import AK, Api, drain, new_topic, unique

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def test_usage_mistakes_raise_aiokafkas_classes(api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    topic = new_topic(cluster, 1, 3)
    tp = api.structs.TopicPartition(topic, 0)
    groupless = make_consumer(auto_offset_reset="earliest")
    await groupless.start()
    groupless.assign([tp])
    with pytest.raises(ValueError):
        groupless.seek(tp, -1)
    with pytest.raises(api.errors.IllegalStateError):
        groupless.subscribe([topic])
    with pytest.raises(api.errors.IllegalStateError):
        await groupless.position(api.structs.TopicPartition(topic, 5))
    illegal_operation = getattr(api.errors, "IllegalOperation")
    with pytest.raises(illegal_operation):
        await groupless.commit()
    with pytest.raises(illegal_operation):
        await groupless.committed(tp)
    member = make_consumer(group_id=unique("g"), auto_offset_reset="earliest")
    await member.start()
    with pytest.raises(TypeError):
        member.subscribe([topic], pattern="x.*")
    with pytest.raises(TypeError):
        member.subscribe()
    with pytest.raises(TypeError):
        member.subscribe([topic], listener=object())
    member.subscribe([topic])
    assert len(await drain(member, 3)) == 3
    with pytest.raises(api.errors.IllegalStateError):
        member.assign([tp])
    with pytest.raises(ValueError):
        await member.commit({tp: "x"})
    with pytest.raises(ValueError):
        await member.commit([1])  # type: ignore[arg-type]
    with pytest.raises(api.errors.IllegalStateError):
        await member.commit({api.structs.TopicPartition(topic, 9): 1})


async def test_a_stopped_consumer(api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    topic = new_topic(cluster, 1, 3)
    consumer = make_consumer(topic, group_id=unique("g"), auto_offset_reset="earliest")
    await consumer.start()
    assert len(await drain(consumer, 3)) == 3
    await consumer.stop()
    await consumer.stop()  # idempotent
    with pytest.raises(api.errors.ConsumerStoppedError):
        await consumer.getone()
    with pytest.raises(api.errors.ConsumerStoppedError):
        await consumer.getmany()
    with pytest.raises(api.errors.ConsumerStoppedError):
        [r async for r in consumer]


async def test_an_async_for_loop_ends_when_the_consumer_stops(api: Api, cluster: EmbeddedCluster,
                                                             make_consumer: Any) -> None:
    topic = new_topic(cluster, 1, 3)
    consumer = make_consumer(topic, group_id=unique("g"), auto_offset_reset="earliest")
    await consumer.start()

    seen: list[Any] = []

    async def consume() -> list[Any]:
        async for record in consumer:
            seen.append(record)
        return seen
    loop = asyncio.ensure_future(consume())
    # stopped once the three records are in (a fixed sleep raced the join on a loaded machine)
    for _ in range(300):  # 30 s at most
        if len(seen) == 3:
            break
        await asyncio.sleep(0.1)
    await consumer.stop()
    assert [r.offset for r in await asyncio.wait_for(loop, 10)] == [0, 1, 2]


async def test_stop_during_getmany_returns_at_once(api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    topic = new_topic(cluster, 1)
    consumer = make_consumer(topic, group_id=unique("g"), auto_offset_reset="earliest")
    await consumer.start()
    await consumer.getmany(timeout_ms=500)  # joined
    waiting = asyncio.ensure_future(consumer.getmany(timeout_ms=20_000))
    await asyncio.sleep(0.3)
    started = time.monotonic()
    await asyncio.wait_for(consumer.stop(), 10)
    assert await asyncio.wait_for(waiting, 5) == {}
    assert time.monotonic() - started < 5
    with pytest.raises(api.errors.ConsumerStoppedError):
        await consumer.getmany(timeout_ms=10)


async def test_difference_getmany_without_subscription_raises(api: Api, cluster: EmbeddedCluster,
                                                             make_consumer: Any) -> None:
    """aiokafka 0.14 waits past timeout_ms (for ever) in getmany() of a consumer that is neither
    subscribed nor assigned; groupclient says what is missing, as GroupConsumer.poll() does."""
    consumer = make_consumer()
    await consumer.start()
    if api.lib == AK:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(consumer.getmany(timeout_ms=10), 2)
    else:
        with pytest.raises(api.errors.IllegalStateError, match="not subscribed"):
            await consumer.getmany(timeout_ms=10)


async def test_difference_seeking_a_partition_not_assigned(api: Api, cluster: EmbeddedCluster,
                                                          make_consumer: Any) -> None:
    """aiokafka asserts (AssertionError); groupclient raises UnassignedPartitionError, an
    IllegalStateError (aiokafka's class for an unassigned partition in position() and commit())."""
    consumer = make_consumer()
    await consumer.start()
    tp = api.structs.TopicPartition(new_topic(cluster, 1), 0)
    expected = AssertionError if api.lib == AK else api.errors.IllegalStateError
    with pytest.raises(expected):
        consumer.seek(tp, 1)
    with pytest.raises(AssertionError if api.lib == AK else TypeError):
        await consumer.getmany("not a partition")


class Failing:
    def __init__(self) -> None:
        self.calls = 0

    async def on_partitions_revoked(self, revoked: Any) -> None:
        pass

    async def on_partitions_assigned(self, assigned: Any) -> None:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("the listener failed")


async def test_difference_a_listener_error_is_raised_not_only_logged(api: Api, cluster: EmbeddedCluster,
                                                                    make_consumer: Any) -> None:
    """aiokafka logs a listener's exception and goes on; groupclient raises it from the next
    getmany() (RebalanceListenerError, with the listener's error as its cause), after the
    rebalance finished: the consumer still owns its partitions and goes on after it."""
    topic = new_topic(cluster, 1, 5)
    consumer = make_consumer(group_id=unique("g"), auto_offset_reset="earliest")
    await consumer.start()
    listener = Failing()
    base = api.listener_base
    consumer.subscribe([topic], listener=type("L", (base,), dict(vars(Failing)))() if api.lib == AK else listener)
    if api.lib == AK:
        assert len(await drain(consumer, 5)) == 5
        return
    from groupclient import RebalanceListenerError
    with pytest.raises(RebalanceListenerError) as raised:
        await drain(consumer, 5)
    assert isinstance(raised.value.__cause__, RuntimeError)
    assert consumer.assignment() == {api.structs.TopicPartition(topic, 0)}
    assert len(await drain(consumer, 5)) == 5
