"""AsyncGroupConsumer's positions, seeks, pauses, commits and cluster queries (a mixin).

The methods that are not coroutines act at once from the loop through ``AnyThreadAccess`` (one
step under the subscription's lock); the coroutines are jobs of the consumer thread, each bounded
(``default_api_timeout_ms``, Java's default.api.timeout.ms, 60 s) so that no job holds the
thread for ever.  Every
call checks its arguments and the consumer's state first, with aiokafka's error classes:
TypeError for a partition that is not a TopicPartition, IllegalStateError for one not assigned,
ValueError for a bad offset, IllegalOperation without a group_id.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..consumer.any_thread import AnyThreadAccess
from ..consumer.group_consumer import GroupConsumer
from ..consumer.queries import check_partition
from ..errors import ArgumentTypeError, IllegalStateError, KafkaTimeoutError, UnassignedPartitionError
from ..structs import OffsetAndMetadata, TopicPartition
from .consumer_thread import ConsumerThread
from .errors import IllegalOperation
from .record_buffer import RecordBuffer
from .structs import OffsetAndTimestamp
from .subscribing import Mode

T = TypeVar("T")


class AsyncOffsets:
    """Positions, seeks, pauses, commits and look-ups of AsyncGroupConsumer."""

    _buffer: RecordBuffer
    _access: AnyThreadAccess | None
    _group_id: str | None
    _mode: Mode

    def _running(self) -> tuple[GroupConsumer, AnyThreadAccess, ConsumerThread]:
        raise NotImplementedError

    async def _job(self, run: Callable[[GroupConsumer], T]) -> T:
        raise NotImplementedError

    def _group(self, method: str) -> None:
        if self._group_id is None:
            raise IllegalOperation(f"{method}() needs a group_id: offsets are committed to a group")

    # -- positions -------------------------------------------------------------------------
    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Read ``partition`` from ``offset``: records fetched before are not returned."""
        _, access, _ = self._running()
        access.seek(partition, offset)
        self._buffer.drop({partition})

    def _owned(self, partitions: tuple[TopicPartition, ...]) -> tuple[AnyThreadAccess, list[TopicPartition]]:
        """The seek_to_*() calls' partitions (every one owned if none is given): TypeError for a
        partition that is not a TopicPartition, IllegalStateError for one not owned (or when
        none is)."""
        wanted = [check_partition(tp) for tp in partitions]
        _, access, _ = self._running()
        owned = access.assignment()
        if not owned:
            raise IllegalStateError("no partition is assigned to this consumer")
        foreign = set(wanted) - owned
        if foreign:
            raise UnassignedPartitionError(f"partitions not assigned to this consumer: {sorted(foreign)}")
        return access, wanted or sorted(owned)

    async def seek_to_beginning(self, *partitions: TopicPartition) -> bool:
        """Read the partitions (all owned if none is given) from their first offset, looked up
        now: True once every position is known, False if it could not be within
        request_timeout_ms or the partitions were taken away meanwhile (as aiokafka)."""
        _, wanted = self._owned(partitions)
        self._buffer.drop(set(wanted))  # before: what lands after the reset is good
        return await self._job(lambda c: _positions_after(c, wanted, c.seek_to_beginning))

    async def seek_to_end(self, *partitions: TopicPartition) -> bool:
        """Read the partitions (all owned if none is given) from their end, looked up now (records
        produced after this returns are read): True or False as for seek_to_beginning()."""
        _, wanted = self._owned(partitions)
        self._buffer.drop(set(wanted))
        return await self._job(lambda c: _positions_after(c, wanted, c.seek_to_end))

    async def seek_to_committed(self, *partitions: TopicPartition) -> dict[TopicPartition, int | None]:
        """Read the partitions (all owned if none is given) from their committed offsets; the
        offsets found (None where none is committed: that partition keeps its position)."""
        self._group("seek_to_committed")
        _, wanted = self._owned(partitions)
        found: dict[TopicPartition, int | None] = {}
        for tp in wanted:
            offset = await self.committed(tp)
            found[tp] = offset
            if isinstance(offset, int):
                self.seek(tp, offset)
        return found

    async def position(self, partition: TopicPartition) -> int:
        """The offset of the next record this consumer returns of ``partition`` (looked up,
        from the committed offset or auto_offset_reset, while unknown)."""
        partition = check_partition(partition)
        _, access, _ = self._running()
        delivered = access.delivered(partition)  # UnassignedPartitionError if not owned
        if delivered is not None:
            return delivered
        await self._job(lambda c: c.position(partition))
        found = access.delivered(partition)
        if found is None:
            raise IllegalStateError(f"{partition} was reset again while its position was looked up")
        return found

    def pause(self, *partitions: TopicPartition) -> None:
        """Return and fetch none of these partitions' records until resume(); kept in the group."""
        self._running()[1].pause(partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        """Fetch the paused partitions again."""
        self._running()[1].resume(partitions)

    def paused(self) -> set[TopicPartition]:
        """The owned partitions that are paused."""
        return set() if self._access is None else self._access.paused()

    def highwater(self, partition: TopicPartition) -> int | None:
        """The partition's high watermark from the last fetch answer (None before one)."""
        return None if self._access is None else self._access.highwater(partition)

    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        """The partition's last stable offset from the last fetch answer (None before one)."""
        return None if self._access is None else self._access.last_stable_offset(partition)

    def last_poll_timestamp(self, partition: TopicPartition) -> int | None:
        """When (epoch milliseconds) the last fetch answer for the partition came."""
        return None if self._access is None else self._access.last_fetch_ms(partition)

    # -- offsets and the cluster -------------------------------------------------------------
    async def commit(self, offsets: dict[TopicPartition, Any] | None = None) -> None:
        """Commit what was returned (default) or ``offsets``: ``{tp: offset}``, ``{tp: (offset,
        metadata)}`` or ``{tp: OffsetAndMetadata}``.  CommitFailedError if the group moved on;
        CallTimeoutError (a KafkaTimeoutError) after default_api_timeout_ms of retries."""
        self._group("commit")
        _, access, _ = self._running()
        if self._mode is Mode.NONE:
            raise IllegalStateError("commit() of a consumer neither subscribed nor assigned: nothing is its to commit")
        if offsets is None:
            await self._job(lambda c: c.commit())
            return
        if not isinstance(offsets, dict) or not offsets:
            raise ValueError(f"offsets must be a dict of TopicPartition to offsets, not {offsets!r}")
        converted = {check_partition(tp): _offset(value) for tp, value in offsets.items()}
        foreign = set(converted) - access.assignment()
        if foreign:  # as aiokafka
            raise IllegalStateError(f"commit() of partitions this consumer does not own: {sorted(foreign)}")
        await self._job(lambda c: c.commit(converted))

    async def committed(self, partition: TopicPartition) -> int | None:
        """The group's committed offset of ``partition`` (None if none)."""
        self._group("committed")
        partition = check_partition(partition)
        found = await self._job(lambda c: c.committed(partition))
        return found if isinstance(found, int) else None

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition."""
        wanted = list(partitions)
        return await self._job(lambda c: c.end_offsets(wanted))

    async def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The first offset of each partition."""
        wanted = list(partitions)
        return await self._job(lambda c: c.beginning_offsets(wanted))

    async def offsets_for_times(self, timestamps: dict[TopicPartition, int]) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The first offset at or after each timestamp (milliseconds; a float is cut to an int,
        as aiokafka), as aiokafka's ``OffsetAndTimestamp(offset, timestamp)``; None past the
        end.  ValueError for a negative timestamp."""
        wanted: dict[TopicPartition, int] = {}
        for tp, stamp in timestamps.items():
            if isinstance(stamp, bool) or not isinstance(stamp, (int, float)):
                raise ArgumentTypeError(f"the timestamp of {tp} must be a number of milliseconds, not {stamp!r}")
            if stamp < 0:
                raise ValueError(f"the target time for partition {tp} is {stamp}: it cannot be negative")
            wanted[check_partition(tp)] = int(stamp)
        found = await self._job(lambda c: c.offsets_for_times(wanted))
        return {tp: None if hit is None else OffsetAndTimestamp(hit.offset, hit.timestamp) for tp, hit in found.items()}

    async def topics(self) -> set[str]:
        """Every topic of the cluster (asked now; CallTimeoutError after default_api_timeout_ms)."""
        return await self._job(lambda c: c.topics())

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """The topic's partitions as the metadata known now has them (None if unknown)."""
        return None if self._access is None else self._access.partitions_for_topic(topic)


def _offset(value: Any) -> OffsetAndMetadata:
    """aiokafka's commit forms: an int, (offset, metadata) or an OffsetAndMetadata (aiokafka's
    two fields or groupclient's three); TypeError for metadata that is not a string, ValueError
    for anything else that is not a non-negative offset (aiokafka commits a negative one: the
    group would then start that partition over by auto_offset_reset)."""
    if isinstance(value, OffsetAndMetadata):
        offset, metadata, epoch = value
    elif isinstance(value, int) and not isinstance(value, bool):
        offset, metadata, epoch = value, "", -1
    elif isinstance(value, tuple) and len(value) == 2:
        (offset, metadata), epoch = value, -1
    else:
        raise ValueError(f"an offset to commit is an int, (offset, metadata) or OffsetAndMetadata, not {value!r}")
    if not isinstance(metadata, str):
        raise ArgumentTypeError(f"the metadata of an offset to commit is a string, not {metadata!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"an offset to commit is a non-negative integer, not {offset!r}")
    return OffsetAndMetadata(offset, metadata, epoch)


def _positions_after(consumer: GroupConsumer, partitions: list[TopicPartition],
                     seek: Callable[..., None]) -> bool:
    """On the consumer thread: ``seek(*partitions)`` (to the beginning or the end), then their
    positions looked up within request_timeout_ms; False if that ran out or they were taken away."""
    seek(*partitions)
    deadline = time.monotonic() + int(consumer.config["request_timeout_ms"]) / 1000
    try:
        for tp in partitions:
            consumer.position(tp, timeout_ms=max(0, int((deadline - time.monotonic()) * 1000)))
    except (KafkaTimeoutError, UnassignedPartitionError):
        return False
    return True
