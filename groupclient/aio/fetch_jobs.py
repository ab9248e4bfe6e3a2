"""The fetch jobs of an AsyncGroupConsumer: the consumer thread polls, the records land in the
RecordBuffer on the loop (used from the loop thread only).

A fetch job polls in slices of POLL_SLICE_MS until records come (or its time is up, the consumer
stops, or another job waits for the thread), then goes on draining what is already fetched, one
``max_poll_records`` batch per poll, up to FETCH_BATCHES batches or ``fetch_max_bytes`` of keys
and values: each hand-off to the loop costs thread switches, so fewer, larger ones are faster
(500 records a job ran at 0.72x the sync consumer's rate, 2000 to 4000 at 0.8-0.9x: the same
run, 100 B records; the rest is two threads sharing the interpreter lock).
One job at a time; after handing records out the consumer starts the next (a prefetch) while
the application handles them, unless the buffer holds a job's records or half a job's bytes
already (a prefetch held back until the buffer was half empty left the consumer thread idle
while the application worked through the other half).  Whoever awaits a job
(a caller that is then cancelled, or nobody for a prefetch), its records land in the buffer,
followed by its error if it failed.  A partition of which the buffer holds a whole job's worth is
held (not fetched) meanwhile: a ``getmany()`` of other partitions cannot fill memory with it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from ..consumer import record_path
from ..consumer.group_consumer import GroupConsumer
from ..consumer.subscription import DeliveryTag
from ..structs import ConsumerRecord, TopicPartition
from .consumer_thread import ConsumerThread
from .record_buffer import RecordBuffer, Records

POLL_SLICE_MS = 100  # so stop(), a cancellation or a waiting commit end a fetch soon
FETCH_BATCHES = 8  # max_poll_records batches a job decodes at most (see the module doc)
# how long a job decodes before it lets the loop in (time.sleep(0) gives up the interpreter lock
# to a thread waiting for it): without it the loop waits out the interpreter's 5 ms switch
# interval.  Each hand-over costs the consumer thread a wait of its own for the lock back.
# Measured (docs/asyncio.md, 100 B records, the same runs): on the compiled record path, whose
# records cost the garbage collector nothing, every 2 ms gave loop lag p50 0.9-1.2 ms, p99 2-3 ms,
# max under 5 ms, at 0.9-1.07x the sync consumer's rate (every poll, ~0.5 ms: 0.61-0.83x).  On
# the Python path every poll (0): its records bring full collections of 13-15 ms, and letting
# the loop in every 2 ms left fewer lag samples around the same pauses (p99 12-15 ms, against
# 2-4 ms): the loop's latency is what an asyncio consumer is chosen for
LET_THE_LOOP_IN_S = 0.002 if record_path.active() == "native" else 0.0

Chunk = tuple[Records, dict[TopicPartition, DeliveryTag], int]  # records, their tags, key+value bytes


class FetchJobs:
    """Starts fetch jobs on the consumer thread and lands their records in the buffer."""

    def __init__(self, consumer: GroupConsumer, thread: ConsumerThread, buffer: RecordBuffer,
                 running: Callable[[], bool]) -> None:
        self._consumer = consumer
        self._thread = thread
        self._buffer = buffer
        self._running = running  # read by the consumer thread too: a bool read
        self._poll_records = int(consumer.config["max_poll_records"])
        self._max_records = FETCH_BATCHES * self._poll_records
        self._max_bytes = int(consumer.config["fetch_max_bytes"])
        self._in_flight: asyncio.Future[Any] | None = None

    def prefetch(self) -> None:
        """Start the next fetch while the application handles what it got, if the buffer holds
        less than a job's records and half a job's bytes (the consumer thread must not wait for
        the application while records are few; memory stays bounded by bytes)."""
        if (self._running() and len(self._buffer) < self._max_records
                and self._buffer.bytes() < self._max_bytes // 2):
            self.fetch(POLL_SLICE_MS)

    def fetch(self, timeout_ms: int) -> asyncio.Future[Any]:
        """The job in flight, else a new one waiting up to ``timeout_ms`` for records.  Await it
        through ``asyncio.shield``: it is shared."""
        if self._in_flight is not None and not self._in_flight.done():
            return self._in_flight
        full = {tp for tp, count in self._buffer.counts().items() if count >= self._max_records}
        self._consumer._any_thread.hold(full)
        self._in_flight = self._thread.submit(lambda: self._poll(timeout_ms), on_result=self._landed)
        return self._in_flight

    # -- the consumer thread ---------------------------------------------------------------
    def _poll(self, timeout_ms: int) -> tuple[list[Chunk], BaseException | None]:
        chunks: list[Chunk] = []
        try:
            deadline = time.monotonic() + timeout_ms / 1000
            while True:
                remaining = max(0, int((deadline - time.monotonic()) * 1000))
                chunk = self._poll_once(min(remaining, POLL_SLICE_MS))
                if chunk is not None:
                    chunks.append(chunk)
                    break
                if remaining <= POLL_SLICE_MS or self._should_yield():
                    return chunks, None
            count, size = _count(chunk), chunk[2]
            let_in_at = time.perf_counter() + LET_THE_LOOP_IN_S
            while count < self._max_records and size < self._max_bytes and not self._should_yield():
                if time.perf_counter() >= let_in_at:
                    # let the loop in (see LET_THE_LOOP_IN_S)
                    time.sleep(0)
                    let_in_at = time.perf_counter() + LET_THE_LOOP_IN_S
                chunk = self._poll_once(0)
                if chunk is None:
                    break
                chunks.append(chunk)
                count, size = count + _count(chunk), size + chunk[2]
        except Exception as exc:  # for the next call to raise, after the records before it
            return chunks, exc
        return chunks, None

    def _poll_once(self, timeout_ms: int) -> Chunk | None:
        records, tags = self._consumer._poll_undelivered(timeout_ms, self._poll_records)
        if not records:
            return None
        # the bound is a guard against records of megabytes, not an account: the largest of each
        # batch's first and last records stands for the batch (no pass over every record)
        size = sum(len(batch) * max(_size(batch[0]), _size(batch[-1])) for batch in records.values())
        return records, tags, size

    def _should_yield(self) -> bool:
        """Stopping, or another job (a commit...) waits: the caller polls again after it."""
        return not self._running() or self._thread.has_waiting_jobs()

    # -- the loop ----------------------------------------------------------------------------
    def _landed(self, found: tuple[list[Chunk], BaseException | None]) -> None:
        chunks, error = found
        for records, tags, size in chunks:
            self._buffer.add(records, tags, size)
        if error is not None:
            self._buffer.add_error(error)


def _size(record: ConsumerRecord) -> int:
    return max(record.serialized_key_size, 0) + max(record.serialized_value_size, 0)


def _count(chunk: Chunk) -> int:
    return sum(len(batch) for batch in chunk[0].values())
