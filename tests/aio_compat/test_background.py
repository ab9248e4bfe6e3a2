"""The group in the background, as aiokafka's coordinator task keeps it: start() returns with the
first assignment, and rebalances, listener calls, auto-commit and pattern matching go on without
a single getmany() (``no_fetching``: a fetch fails the test); calls made right after start()."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from groupclient.coordinator import EmbeddedCluster
from tests.aio_compat.conftest import AK, Api, drain, new_topic, settle, unique

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


def listener(api: Api, calls: list[tuple[str, frozenset[int]]]) -> Any:
    class Recording(api.listener_base):  # type: ignore[misc,name-defined]
        async def on_partitions_revoked(self, revoked: Any) -> None:
            calls.append(("revoked", frozenset(tp.partition for tp in revoked)))

        async def on_partitions_assigned(self, assigned: Any) -> None:
            calls.append(("assigned", frozenset(tp.partition for tp in assigned)))
    return Recording()


def partitions(consumer: Any) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


def split_between(members: list[Any], count: int) -> bool:
    """Every partition owned by exactly one member, and each member owns one at least."""
    owned = [partitions(m) for m in members]
    return all(owned) and sum(map(len, owned)) == count and set().union(*owned) == set(range(count))


@pytest.mark.no_fetching
async def test_start_returns_with_the_first_assignment_and_the_group_stable(
        api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    topic, group = new_topic(cluster, 2), unique("g")
    consumer = make_consumer(topic, group_id=group)
    await consumer.start()
    assert consumer.assignment() == {api.structs.TopicPartition(topic, p) for p in (0, 1)}
    assert isinstance(consumer.assignment(), frozenset)
    described = cluster.describe_group(group)
    assert described is not None and described["state"] == "Stable" and len(described["members"]) == 1


@pytest.mark.no_fetching
async def test_the_listener_hears_the_first_assignment_before_start_returns(
        api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    topic = new_topic(cluster, 2)
    calls: list[tuple[str, frozenset[int]]] = []
    consumer = make_consumer(group_id=unique("g"))
    consumer.subscribe([topic], listener=listener(api, calls))
    await consumer.start()
    assert ("assigned", frozenset({0, 1})) in calls, calls


@pytest.mark.no_fetching
async def test_an_empty_first_assignment_ends_start_too(api: Api, cluster: EmbeddedCluster,
                                                        make_consumer: Any) -> None:
    topic, group = new_topic(cluster, 1), unique("g")
    first = make_consumer(topic, group_id=group, heartbeat_interval_ms=100)
    await first.start()
    second = make_consumer(topic, group_id=group, heartbeat_interval_ms=100)
    await asyncio.wait_for(second.start(), 20)
    assert await settle(lambda: split_between([first], 1) and not second.assignment() or
                        split_between([second], 1) and not first.assignment())


@pytest.mark.no_fetching
async def test_members_that_never_fetch_follow_rebalances_and_hear_them(
        api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    topic, group = new_topic(cluster, 4), unique("g")
    first_calls: list[tuple[str, frozenset[int]]] = []
    first = make_consumer(group_id=group, heartbeat_interval_ms=100)
    first.subscribe([topic], listener=listener(api, first_calls))
    await first.start()
    assert partitions(first) == {0, 1, 2, 3}
    second = make_consumer(topic, group_id=group, heartbeat_interval_ms=100)
    await second.start()
    assert await settle(lambda: split_between([first, second], 4)), (first.assignment(), second.assignment())
    assert await settle(lambda: first_calls[-1] == ("assigned", frozenset(partitions(first)))), first_calls
    assert any(kind == "revoked" and owned == {0, 1, 2, 3} for kind, owned in first_calls), first_calls
    await second.stop()  # leaves: the first takes everything back, still without fetching
    assert await settle(lambda: partitions(first) == {0, 1, 2, 3})


@pytest.mark.no_fetching
async def test_unsubscribe_empties_the_assignment_at_once_and_the_others_take_over(
        api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    topic, group = new_topic(cluster, 2), unique("g")
    first = make_consumer(topic, group_id=group, heartbeat_interval_ms=100)
    second = make_consumer(topic, group_id=group, heartbeat_interval_ms=100)
    await first.start()
    await second.start()
    assert await settle(lambda: split_between([first, second], 2))
    second.unsubscribe()
    assert second.assignment() == set() and second.subscription() == set()
    assert await settle(lambda: partitions(first) == {0, 1})
    if api.lib == AK:
        # aiokafka 0.14's bug: once unsubscribed, its fetcher task dies on the missing assignment
        # (AttributeError) and stop() raises that as KafkaError("Unexpected error during data retrieval")
        with contextlib.suppress(api.errors.KafkaError):
            await second.stop()


@pytest.mark.no_fetching
async def test_auto_commit_commits_the_positions_without_fetching(
        api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    topic, group = new_topic(cluster, 2, 6), unique("g")
    consumer = make_consumer(topic, group_id=group, auto_offset_reset="latest", auto_commit_interval_ms=200)
    await consumer.start()
    ends = {(topic, p): offset for p, offset in cluster.end_offsets(topic).items()}
    assert await settle(lambda: cluster.committed_offsets(group) == ends), cluster.committed_offsets(group)


@pytest.mark.no_fetching
async def test_offsets_work_right_after_start(api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    topic = new_topic(cluster, 2, 6)
    tp0, tp1 = (api.structs.TopicPartition(topic, p) for p in (0, 1))
    consumer = make_consumer(topic, group_id=unique("g"), auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    assert await consumer.position(tp0) == 0
    await consumer.commit({tp0: 2})
    assert await consumer.committed(tp0) == 2
    consumer.seek(tp1, 1)
    assert await consumer.position(tp1) == 1
    assert await consumer.seek_to_end(tp0) is True
    assert await consumer.position(tp0) == 3
    assert await consumer.seek_to_beginning() is True
    assert [await consumer.position(tp) for tp in (tp0, tp1)] == [0, 0]


@pytest.mark.no_fetching
async def test_a_pattern_picks_up_a_new_topic_without_fetching(
        api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    prefix = unique("pfx")
    calls: list[tuple[str, frozenset[int]]] = []
    consumer = make_consumer(group_id=unique("g"), metadata_max_age_ms=300, heartbeat_interval_ms=100)
    consumer.subscribe(pattern=f"^{prefix}-.*", listener=listener(api, calls))
    await consumer.start()
    assert consumer.assignment() == set()
    cluster.create_topic(f"{prefix}-1", 2)
    assert await settle(lambda: consumer.assignment() == {api.structs.TopicPartition(f"{prefix}-1", p)
                                                          for p in (0, 1)}), consumer.assignment()
    assert consumer.subscription() == {f"{prefix}-1"}
    assert await settle(lambda: ("assigned", frozenset({0, 1})) in calls), calls


async def test_a_session_timeout_the_coordinator_refuses_is_raised_by_start(
        api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    """Below the coordinator's group.min.session.timeout.ms (6 s): the JoinGroup is refused, and
    start() raises it; later calls raise it again."""
    consumer = make_consumer(new_topic(cluster), group_id=unique("g"), session_timeout_ms=5000)
    with pytest.raises(api.errors.InvalidSessionTimeoutError):
        await asyncio.wait_for(consumer.start(), 20)
    with pytest.raises(api.errors.InvalidSessionTimeoutError):
        await asyncio.wait_for(consumer.getmany(timeout_ms=100), 20)
    await consumer.stop()


async def test_a_record_seeked_to_end_before_it_is_produced_is_read(
        api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    """seek_to_end() looks the end up before it returns: records produced after are read."""
    topic = new_topic(cluster, 1, 5)
    tp = api.structs.TopicPartition(topic, 0)
    consumer = make_consumer(topic, group_id=unique("g"), auto_offset_reset="earliest")
    await consumer.start()
    assert await consumer.seek_to_end(tp) is True
    cluster.produce(topic, [b"new-1", b"new-2"])
    assert [r.value for r in await drain(consumer, 2)] == [b"new-1", b"new-2"]


async def test_deserializers_are_called_for_a_missing_key(api: Api, cluster: EmbeddedCluster,
                                                          make_consumer: Any) -> None:
    topic = new_topic(cluster, 1, 2)
    consumer = make_consumer(topic, group_id=unique("g"), auto_offset_reset="earliest",
                             key_deserializer=lambda key: ("key", key), value_deserializer=lambda v: v.decode())
    await consumer.start()
    records = await drain(consumer, 2)
    assert [(r.key, r.value) for r in records] == [(("key", None), "0"), (("key", None), "1")]


async def test_offsets_for_times_gives_offset_and_timestamp_pairs(api: Api, cluster: EmbeddedCluster,
                                                                  make_consumer: Any) -> None:
    topic = new_topic(cluster, 1)
    cluster.produce(topic, [b"a"], timestamp_ms=1_000)
    cluster.produce(topic, [b"b"], timestamp_ms=2_000)
    tp = api.structs.TopicPartition(topic, 0)
    consumer = make_consumer(auto_offset_reset="earliest")
    await consumer.start()
    found = await consumer.offsets_for_times({tp: 1_500.7})
    offset, timestamp = found[tp]
    assert (offset, timestamp) == (1, 2_000) and found[tp] == api.structs.OffsetAndTimestamp(1, 2_000)
    assert (await consumer.offsets_for_times({tp: 3_000})) == {tp: None}
    with pytest.raises(ValueError):
        await consumer.offsets_for_times({tp: -1})


@pytest.mark.no_fetching
async def test_mistakes_are_raised_at_the_call(api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    topic = new_topic(cluster, 2)
    tp0, elsewhere = api.structs.TopicPartition(topic, 0), api.structs.TopicPartition(topic, 7)
    consumer = make_consumer(topic, group_id=unique("g"), enable_auto_commit=False)
    await consumer.start()
    with pytest.raises(TypeError):
        consumer.subscribe(topic)  # one string, not a list of them
    with pytest.raises(ValueError):
        consumer.subscribe(pattern="^(broken")
    with pytest.raises(api.errors.IllegalStateError):
        consumer.assign([tp0])
    with pytest.raises(api.errors.IllegalStateError):
        await consumer.position(elsewhere)
    with pytest.raises(api.errors.IllegalStateError):
        await consumer.seek_to_beginning(elsewhere)
    with pytest.raises(api.errors.IllegalStateError):
        await consumer.commit({elsewhere: 1})
    with pytest.raises(ValueError):
        await consumer.commit({})
    with pytest.raises(TypeError):
        await consumer.commit({tp0: (1, 2)})  # metadata must be a string
    with pytest.raises(TypeError):
        await consumer.commit({"not a partition": 1})
    with pytest.raises(TypeError):
        await consumer.seek_to_end(1)
    consumer.unsubscribe()
    with pytest.raises(api.errors.IllegalStateError):
        await consumer.commit()
    consumer.assign([tp0])
    with pytest.raises(api.errors.IllegalStateError):
        consumer.subscribe([topic])


async def test_difference_start_twice(api: Api, cluster: EmbeddedCluster, make_consumer: Any) -> None:
    """A second start(): aiokafka fails an assertion; groupclient raises IllegalStateError."""
    consumer = make_consumer()
    await consumer.start()
    with pytest.raises(AssertionError if api.lib == AK else api.errors.IllegalStateError):
        await consumer.start()
