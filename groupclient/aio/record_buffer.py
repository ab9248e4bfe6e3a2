"""Records the consumer thread fetched and the application has not been given yet (loop thread only).

A fetch job's records land here on the loop even when the ``getmany()`` that asked for them was
cancelled, so the next call returns them: cancelling loses nothing.  A fetch's error lands after
the records drained before it, and is raised when it is reached (a deserializer's error after the
records before the bad one).  They are handed out in
fetch order per partition, and only through :meth:`AnyThreadAccess.take_delivery`, which refuses
records whose partition was lost, reassigned or seeked since they were drained (and makes
commits cover the ones it lets through).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from dataclasses import dataclass

from ..consumer.any_thread import AnyThreadAccess
from ..consumer.subscription import DeliveryTag
from ..structs import ConsumerRecord, TopicPartition

Records = dict[TopicPartition, list[ConsumerRecord]]


@dataclass
class _Error:
    error: BaseException


@dataclass
class _Batch:
    tp: TopicPartition
    tag: DeliveryTag
    records: list[ConsumerRecord]
    size: int  # bytes of keys and values, all records
    start: int = 0  # records before it were handed out


class RecordBuffer:
    """Fetched, undelivered records, per partition in order (see the module doc)."""

    def __init__(self) -> None:
        self._batches: deque[_Batch | _Error] = deque()

    def add(self, records: Records, tags: dict[TopicPartition, DeliveryTag], size: int) -> None:
        """What one poll drained (a partition without a tag was not drained: left out), with
        the bytes of its keys and values."""
        total = sum(len(batch) for batch in records.values()) or 1
        for tp, batch in records.items():
            tag = tags.get(tp)
            if batch and tag is not None:
                self._batches.append(_Batch(tp, tag, batch, size * len(batch) // total))

    def add_error(self, error: BaseException) -> None:
        """A fetch's error, raised by take() once the records before it are handed out."""
        self._batches.append(_Error(error))

    def __len__(self) -> int:
        return sum(len(b.records) - b.start for b in self._batches if isinstance(b, _Batch))

    def bytes(self) -> int:
        """About how many bytes of keys and values it holds."""
        return sum(b.size * (len(b.records) - b.start) // len(b.records) for b in self._batches
                   if isinstance(b, _Batch))

    def counts(self) -> dict[TopicPartition, int]:
        """Records held per partition."""
        held: dict[TopicPartition, int] = {}
        for b in self._batches:
            if isinstance(b, _Batch):
                held[b.tp] = held.get(b.tp, 0) + len(b.records) - b.start
        return held

    def drop(self, partitions: Collection[TopicPartition] | None = None) -> None:
        """Forget the records of these partitions (all with None): seeked, or given up."""
        if partitions is None:
            self._batches = deque(b for b in self._batches if isinstance(b, _Error))
        else:
            self._batches = deque(b for b in self._batches if isinstance(b, _Error) or b.tp not in partitions)

    def take(self, access: AnyThreadAccess, limit: int | None, only: Collection[TopicPartition] = ()) -> Records:
        """Up to ``limit`` records (None: all), of the partitions in ``only`` (empty: any), none
        of a paused partition, each batch's part checked and delivered through ``access``.  A
        fetch error reached with nothing to return is raised (and forgotten)."""
        result: Records = {}
        if not self._batches:
            return result
        paused = access.paused()
        remaining = limit if limit is not None else -1
        kept: deque[_Batch | _Error] = deque()
        while self._batches and remaining != 0:
            batch = self._batches.popleft()
            if isinstance(batch, _Error):
                if result:  # the records before it first; the error with the next call
                    self._batches.appendleft(batch)
                    break
                kept.extend(self._batches)
                self._batches = kept
                raise batch.error
            if batch.tp in paused or (only and batch.tp not in only):
                kept.append(batch)
                continue
            end = len(batch.records) if remaining < 0 else min(len(batch.records), batch.start + remaining)
            # a whole batch is handed over as it is: no copy (and no reference count of each
            # record touched here, on another core than the one that decoded it)
            part = batch.records if batch.start == 0 and end == len(batch.records) else batch.records[batch.start:end]
            last = part[-1]
            if access.take_delivery(batch.tp, batch.tag, part[0].offset, last.offset, last.leader_epoch):
                if batch.tp in result:
                    result[batch.tp] += part
                else:
                    result[batch.tp] = part
                if remaining > 0:
                    remaining -= len(part)
                if end < len(batch.records):
                    batch.start = end
                    kept.append(batch)
            # else: lost, reassigned or seeked since: no longer this consumer's to give
        kept.extend(self._batches)
        self._batches = kept
        return result
