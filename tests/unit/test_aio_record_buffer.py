"""groupclient.aio's RecordBuffer with the real SubscriptionState: records drained from the
fetcher are handed out once, in order, and only while their partition is the same one (not lost,
reassigned or seeked by the application since they were drained); commits cover exactly what was
handed out."""

from __future__ import annotations

from typing import Any

from groupclient.aio.record_buffer import RecordBuffer
from groupclient.consumer.any_thread import AnyThreadAccess
from groupclient.consumer.subscription import DeliveryTag, SubscriptionState
from groupclient.structs import ConsumerRecord, TopicPartition

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def record(tp: TopicPartition, offset: int) -> ConsumerRecord:
    return ConsumerRecord(tp.topic, tp.partition, 3, offset, 1_700_000_000_000, 0, None, b"v", [], None, -1, 1, 0)


class Drained:
    """Owns T0 and T1 from offset 0, and drains records as the fetcher does (advance())."""

    def __init__(self) -> None:
        self.subscription = SubscriptionState("earliest")
        self.subscription.subscribe({"t"}, None)
        self.subscription.set_group_assignment({T0, T1})
        for tp in (T0, T1):
            self.subscription.seek_to_committed(tp, 0, None)
        self.access = AnyThreadAccess(self.subscription, None, None)  # type: ignore[arg-type]
        self.buffer = RecordBuffer()

    def drain(self, tp: TopicPartition, count: int) -> None:
        start = self.subscription.position(tp)
        assert start is not None
        tag = self.subscription.advance(tp, start, start + count, delivered=False, epoch=3)
        assert tag is not None
        records = {tp: [record(tp, start + i) for i in range(count)]}
        tags: dict[TopicPartition, DeliveryTag] = {tp: tag}
        self.buffer.add(records, tags, count)

    def take(self, limit: int | None = None, only: Any = ()) -> dict[TopicPartition, list[int]]:
        return {tp: [r.offset for r in batch] for tp, batch in self.buffer.take(self.access, limit, only).items()}

    def committable(self) -> dict[TopicPartition, int]:
        return {tp: om.offset for tp, om in self.subscription.consumed_offsets().items()}


def test_records_are_handed_out_once_in_order_and_commits_cover_exactly_them() -> None:
    d = Drained()
    d.drain(T0, 5)
    d.drain(T1, 3)
    d.drain(T0, 2)
    assert d.committable() == {T0: 0, T1: 0}  # drained, not handed out
    assert d.take(limit=4) == {T0: [0, 1, 2, 3]}
    assert d.committable() == {T0: 4, T1: 0}
    assert d.take(limit=5) == {T0: [4, 5], T1: [0, 1, 2]}
    assert d.committable() == {T0: 6, T1: 3}
    assert d.take() == {T0: [6]} and d.take() == {}
    assert d.committable() == {T0: 7, T1: 3}
    assert len(d.buffer) == 0


def test_records_drained_before_the_applications_seek_are_not_handed_out() -> None:
    d = Drained()
    d.drain(T0, 5)
    d.subscription.seek(T0, 2)  # the application's seek, after the records were drained
    assert d.take() == {}
    d.drain(T0, 3)
    assert d.take() == {T0: [2, 3, 4]}
    assert d.committable()[T0] == 5


def test_records_of_a_partition_lost_or_reassigned_since_are_not_handed_out() -> None:
    d = Drained()
    d.drain(T0, 4)
    d.drain(T1, 4)
    d.subscription.mark_lost()  # the heartbeat thread: the lease ran out
    d.subscription.take_lost()
    d.subscription.set_group_assignment({T0, T1})  # assigned again: new partition states
    d.subscription.seek_to_committed(T0, 0, None)
    assert d.take() == {}
    assert d.committable() == {T0: 0}


def test_a_paused_partition_keeps_its_records_until_resumed_and_others_pass_it() -> None:
    d = Drained()
    d.drain(T0, 2)
    d.drain(T1, 2)
    d.access.pause((T0,))
    assert d.take() == {T1: [0, 1]}
    d.access.resume((T0,))
    assert d.take() == {T0: [0, 1]}


def test_only_the_partitions_asked_for_and_the_rest_stay_in_order() -> None:
    d = Drained()
    d.drain(T0, 2)
    d.drain(T1, 2)
    d.drain(T0, 1)
    assert d.take(only={T1}) == {T1: [0, 1]}
    assert d.buffer.counts() == {T0: 3}
    assert d.take(limit=2, only={T0}) == {T0: [0, 1]}
    assert d.take() == {T0: [2]}


def test_the_buffers_size_in_records_and_bytes() -> None:
    d = Drained()
    d.drain(T0, 10)  # 10 "bytes"
    assert len(d.buffer) == 10 and d.buffer.bytes() == 10
    d.take(limit=4)
    assert len(d.buffer) == 6 and d.buffer.bytes() == 6
    d.buffer.drop({T0})
    assert len(d.buffer) == 0 and d.buffer.bytes() == 0
