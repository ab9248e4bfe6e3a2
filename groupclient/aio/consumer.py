"""``AsyncGroupConsumer``: aiokafka's ``AIOKafkaConsumer`` API on GroupConsumer's group logic.

One GroupConsumer does the work, owned by a thread of this consumer's own
(:mod:`groupclient.aio.consumer_thread`); the coroutines here hand it jobs and await them, so the
event loop never blocks on a socket, a lock or a rebalance, and the GroupConsumer's heartbeat
thread keeps the member in its group while the application's code holds the loop.  The design
and the thread model: docs/design.md, "asyncio"; usage and the migration from aiokafka:
docs/asyncio.md.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any, TypeVar

from ..consumer.any_thread import AnyThreadAccess
from ..consumer.group_consumer import GroupConsumer, GroupMetadata
from ..consumer.queries import check_partition
from ..consumer.rebalance_events import RebalanceEvent
from ..errors import ArgumentTypeError, ConfigurationError, IllegalStateError
from ..structs import ConsumerRecord, OffsetAndMetadata, OffsetAndTimestamp, TopicPartition
from .config import translate
from .consumer_thread import ConsumerThread
from .fetch_jobs import POLL_SLICE_MS, FetchJobs
from .errors import ConsumerStoppedError, IllegalOperation
from .listener import LoopListener
from .record_buffer import RecordBuffer, Records

log = logging.getLogger("groupclient.aio")

T = TypeVar("T")

_NAMES = itertools.count(1)


class AsyncGroupConsumer:
    """A Kafka group consumer for asyncio: aiokafka's ``AIOKafkaConsumer`` (constructor, setting
    names, coroutines and methods) on groupclient's group logic, so switching is an import change.

        from groupclient.aio import AsyncGroupConsumer

        async with AsyncGroupConsumer("orders", bootstrap_servers="127.0.0.1:9092",
                                      group_id="billing", auto_offset_reset="earliest") as consumer:
            async for record in consumer:        # or: await consumer.getmany(timeout_ms=1000)
                print(record.partition, record.offset, record.value)

    The constructor checks every setting (ConfigurationError) and connects nothing; ``start()``
    connects, ``stop()`` commits (enable_auto_commit), leaves the group and returns within
    ``timeout_ms``.  Every GroupConsumer setting works here too (group_protocol='consumer',
    cooperative-sticky, static membership, TLS/SASL, interceptors...), with aiokafka's defaults
    where they differ (session_timeout_ms 10000, request_timeout_ms 40000, round robin).

    Threads: a consumer thread of its own runs the GroupConsumer (fetching, joining, committing,
    deserializers and interceptors); rebalance listeners (coroutines or plain methods) and
    rebalance event callbacks run on the loop.  The group is kept while your code holds the loop
    for less than max_poll_interval_ms.  Cancelling ``getmany()``/``getone()`` loses no record:
    the next call returns it.  Errors: as GroupConsumer's, under aiokafka's names in
    :mod:`groupclient.aio.errors` (ConsumerStoppedError after ``stop()``).
    """

    def __init__(self, *topics: str, **configs: Any) -> None:
        """aiokafka's AIOKafkaConsumer arguments (see :mod:`groupclient.aio.config`)."""
        self._settings = translate(configs)
        for topic in topics:
            if not isinstance(topic, str):
                raise ArgumentTypeError(f"topics are names, not {topic!r}")
        self._group_id = self._settings.get("group_id")
        self._getmany_limit: int | None = self._settings.get("max_poll_records")
        self._event_callback: Callable[[RebalanceEvent], Any] | None = self._settings.pop(
            "rebalance_event_callback", None)
        self._initial: tuple[tuple[str, ...], str | None, object | None] | None = (
            (tuple(topics), None, None) if topics else None)
        self._initial_assign: set[TopicPartition] | None = None
        self._consumer: GroupConsumer | None = None
        self._access: AnyThreadAccess | None = None
        self._thread: ConsumerThread | None = None
        self._buffer = RecordBuffer()
        self._state = "new"  # new -> starting -> running -> stopping -> stopped
        self._stopped: asyncio.Future[None] | None = None
        self._pending_error: BaseException | None = None  # a background job's, raised by the next call
        self._fetches: FetchJobs | None = None
        self._name = f"groupclient-aio-{next(_NAMES)}"

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        """Connect (NoBrokersAvailable when no bootstrap server answers in time) and subscribe
        to the constructor's topics.  The group is joined by the first getmany()/getone()."""
        if self._state != "new":
            if self._state in ("stopping", "stopped"):
                raise ConsumerStoppedError("the consumer is stopped: create a new one")
            return
        self._state = "starting"
        loop = asyncio.get_running_loop()
        self._thread = thread = ConsumerThread(loop, self._name)
        settings = dict(self._settings)
        if self._event_callback is not None:
            user_callback = self._event_callback
            settings["rebalance_event_callback"] = lambda event: self._on_loop(loop, user_callback, event)
        try:
            self._consumer = consumer = await thread.submit(lambda: GroupConsumer(**settings))
        except BaseException:
            self._state = "stopped"
            thread.close()
            raise
        self._access = consumer._any_thread
        self._fetches = FetchJobs(consumer, thread, self._buffer, lambda: self._state == "running", self._keep_error)
        self._state = "running"
        if self._initial is not None:
            topics, pattern, listener = self._initial
            self._initial = None
            self.subscribe(topics, pattern, listener)
        elif self._initial_assign is not None:
            partitions, self._initial_assign = self._initial_assign, None
            self.assign(partitions)

    @staticmethod
    def _on_loop(loop: asyncio.AbstractEventLoop, callback: Callable[[RebalanceEvent], Any],
                 event: RebalanceEvent) -> None:
        """A rebalance event callback, run on the loop (the consumer thread does not wait)."""
        def run() -> None:
            try:
                callback(event)
            except Exception as exc:
                log.warning("rebalance_event_callback failed: %r", exc)
        try:
            loop.call_soon_threadsafe(run)
        except RuntimeError:
            log.debug("rebalance event after the loop closed: %s", event)

    async def stop(self, timeout_ms: int | None = None) -> None:
        """Commit what was consumed (enable_auto_commit), leave the group and close, within
        ``timeout_ms`` (default 30 s).  Idempotent; waiting calls raise ConsumerStoppedError."""
        if self._state in ("new", "stopped"):
            self._state = "stopped"
            return
        if self._state == "stopping":
            assert self._stopped is not None
            await asyncio.shield(self._stopped)
            return
        self._state = "stopping"
        thread, consumer = self._thread, self._consumer
        assert thread is not None
        self._stopped = asyncio.get_running_loop().create_future()
        try:
            if consumer is not None:
                await asyncio.shield(thread.submit(lambda: consumer.close(timeout_ms=timeout_ms)))
        finally:
            thread.close()
            self._buffer.drop()
            self._state = "stopped"
            if not self._stopped.done():
                self._stopped.set_result(None)

    async def __aenter__(self) -> AsyncGroupConsumer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    def _running(self) -> tuple[GroupConsumer, AnyThreadAccess, ConsumerThread]:
        # a listener that stop() calls (it revokes the partitions, as Java) may still use the consumer
        inside_stop = (self._state == "stopping" and self._thread is not None
                       and asyncio.current_task() in self._thread.listener_tasks)
        if self._state in ("stopping", "stopped") and not inside_stop:
            raise ConsumerStoppedError("the consumer is stopped")
        if self._consumer is None or self._access is None or self._thread is None:
            raise IllegalStateError("the consumer is not started: await start() first")
        error, self._pending_error = self._pending_error, None
        if error is not None:
            raise error
        return self._consumer, self._access, self._thread

    def _fetch_jobs(self) -> FetchJobs:
        assert self._fetches is not None  # set by start(), which _running() checked
        return self._fetches

    def _not_in_listener(self, method: str) -> None:
        thread = self._thread
        if thread is not None and asyncio.current_task() in thread.listener_tasks:
            raise IllegalStateError(f"{method}() inside a rebalance listener: the rebalance waits for the "
                                    "listener, which would wait for the rebalance")

    def _group(self, method: str) -> None:
        if self._group_id is None:
            raise IllegalOperation(f"{method}() needs a group_id: offsets are committed to a group")

    async def _job(self, run: Callable[[GroupConsumer], T], nested: bool = True) -> T:
        consumer, _, thread = self._running()
        return await thread.submit(lambda: run(consumer), nested=nested)

    # -- records -------------------------------------------------------------------------
    async def getmany(self, *partitions: TopicPartition, timeout_ms: int = 0,
                      max_records: int | None = None) -> Records:
        """Records per partition (of ``partitions`` only, if given), at most ``max_records``
        (default max_poll_records; none set: every record fetched so far), waiting up to
        ``timeout_ms`` for the first.  Joins and rebalances run inside, as poll() does."""
        _, access, _ = self._running()
        self._not_in_listener("getmany")
        only = {check_partition(tp) for tp in partitions}
        if max_records is not None and (not isinstance(max_records, int) or max_records < 1):
            raise ConfigurationError(f"max_records must be a positive integer, not {max_records!r}")
        if not isinstance(timeout_ms, (int, float)) or timeout_ms < 0:
            raise ConfigurationError(f"timeout_ms must be a non-negative number, not {timeout_ms!r}")
        limit = max_records if max_records is not None else self._getmany_limit
        fetches = self._fetch_jobs()
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            records = self._buffer.take(access, limit, only)
            if records:
                fetches.prefetch()
                return records
            remaining = deadline - time.monotonic()
            fetch = fetches.fetch(max(0, int(remaining * 1000)))
            try:
                await asyncio.wait_for(asyncio.shield(fetch), max(remaining, 0) + POLL_SLICE_MS / 1000)
            except asyncio.TimeoutError:
                pass
            if self._state == "running":
                self._running()  # a fetch's error, raised now
            records = self._buffer.take(access, limit, only)
            # stopped while waiting: what it has (as aiokafka); the next call raises
            if records or time.monotonic() >= deadline or self._state != "running":
                if records:
                    fetches.prefetch()
                return records

    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord:
        """The next record (of ``partitions`` only, if given), waiting as long as it takes."""
        _, access, _ = self._running()
        self._not_in_listener("getone")
        only = {check_partition(tp) for tp in partitions}
        fetches = self._fetch_jobs()
        while True:
            records = self._buffer.take(access, 1, only)
            if records:
                fetches.prefetch()
                return next(iter(records.values()))[0]
            await asyncio.shield(fetches.fetch(1000))
            self._running()

    def __aiter__(self) -> AsyncGroupConsumer:
        if self._state == "stopped":  # as aiokafka; a loop running when stop() comes ends instead
            raise ConsumerStoppedError("the consumer is stopped")
        return self

    async def __anext__(self) -> ConsumerRecord:
        """``async for``: getone() until the consumer is stopped."""
        try:
            return await self.getone()
        except ConsumerStoppedError:
            raise StopAsyncIteration from None

    # -- subscription --------------------------------------------------------------------
    def subscribe(self, topics: Iterable[str] | str = (), pattern: str | None = None, listener: object = None) -> None:
        """Subscribe to topics or a regex pattern, with an optional rebalance listener (methods
        may be coroutines).  Applied by the consumer thread before the next fetch."""
        names = (topics,) if isinstance(topics, str) else tuple(topics)
        # TypeError, as aiokafka (ArgumentTypeError is one)
        if names and pattern is not None:
            raise ArgumentTypeError("subscribe() takes topics or a pattern, not both")
        if not names and pattern is None:
            raise ArgumentTypeError("subscribe() needs topics or a pattern")
        if listener is not None and not any(callable(getattr(listener, m, None)) for m in (
                "on_partitions_revoked", "on_partitions_assigned", "on_partitions_lost")):
            raise ArgumentTypeError(f"listener {listener!r} has none of on_partitions_revoked, "
                                    "on_partitions_assigned, on_partitions_lost")
        if self._state in ("new", "starting"):
            if self._initial_assign is not None:
                raise IllegalStateError("subscribe() after assign(): call unsubscribe() first")
            self._initial = (names, pattern, listener)
            return
        _, access, thread = self._running()
        if access.assignment() and not access.is_group_subscribed():
            raise IllegalStateError("subscribe() after assign(): call unsubscribe() first")
        bridged = LoopListener(listener, thread) if listener is not None else None
        self._background(lambda c: c.subscribe(list(names), pattern=pattern, listener=bridged))

    def subscription(self) -> set[str]:
        """The topics subscribed to (a pattern's matches so far); empty when not subscribed."""
        if self._initial is not None:
            return set(self._initial[0])
        if self._access is None or not self._access.is_group_subscribed():
            return set()
        return self._access.subscribed_topics()

    def unsubscribe(self) -> None:
        """Leave the group (the listener hears the revocation) or drop the assignment."""
        if self._state in ("new", "starting"):
            self._initial, self._initial_assign = None, None
            return
        self._running()
        self._buffer.drop()
        self._background(lambda c: c.unsubscribe())

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Consume exactly these partitions, outside any group's assignment."""
        wanted = {check_partition(tp) for tp in partitions}
        if self._state in ("new", "starting"):
            if self._initial is not None:
                raise IllegalStateError("assign() after subscribe(): call unsubscribe() first")
            self._initial_assign = wanted
            return
        _, access, _ = self._running()
        if access.is_group_subscribed():
            raise IllegalStateError("assign() after subscribe(): call unsubscribe() first")
        self._buffer.drop(access.assignment() - wanted)
        if not wanted:  # as aiokafka and kafka-python: assigning nothing is unsubscribing
            self.unsubscribe()
            return
        access.assign(wanted)  # at once, as aiokafka: pause() or seek() may follow

    def _background(self, run: Callable[[GroupConsumer], Any]) -> None:
        """A job nobody awaits: its error is raised by the next call (never dropped)."""
        consumer, _, thread = self._running()
        future = thread.submit(lambda: run(consumer), nested=True)

        def keep_error(done: asyncio.Future[Any]) -> None:
            error = None if done.cancelled() else done.exception()
            if error is not None:
                self._keep_error(error)
        future.add_done_callback(keep_error)

    def _keep_error(self, error: BaseException) -> None:
        """An error of a job nobody awaits (subscribe(), a fetch): raised by the next call, so
        that it is never lost."""
        log.info("%s: %r (raised by the next call)", self._name, error)
        if self._pending_error is None:
            self._pending_error = error

    def assignment(self) -> set[TopicPartition]:
        """The partitions this consumer owns now."""
        if self._initial_assign is not None:
            return set(self._initial_assign)
        return set() if self._access is None else self._access.assignment()

    # -- positions -----------------------------------------------------------------------
    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Read ``partition`` from ``offset``: records fetched before are not returned."""
        _, access, _ = self._running()
        access.seek(partition, offset)
        self._buffer.drop({partition})

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        """Read the partitions (all owned if none is given) from their first offset."""
        await self._job(lambda c: c.seek_to_beginning(*partitions))
        self._buffer.drop(set(partitions) or None)

    async def seek_to_end(self, *partitions: TopicPartition) -> None:
        """Read the partitions (all owned if none is given) from their end."""
        await self._job(lambda c: c.seek_to_end(*partitions))
        self._buffer.drop(set(partitions) or None)

    async def seek_to_committed(self, *partitions: TopicPartition) -> dict[TopicPartition, int | None]:
        """Read the partitions (all owned if none is given) from their committed offsets; the
        offsets found (None where none is committed: that partition keeps its position)."""
        _, access, _ = self._running()
        wanted = [check_partition(tp) for tp in partitions] or sorted(access.assignment())
        found: dict[TopicPartition, int | None] = {}
        for tp in wanted:
            offset = await self.committed(tp)
            found[tp] = offset
            if isinstance(offset, int):
                self.seek(tp, offset)
        return found

    async def position(self, partition: TopicPartition) -> int:
        """The offset of the next record this consumer returns of ``partition``."""
        partition = check_partition(partition)
        _, access, _ = self._running()
        buffered = self._buffer.first_offset(partition)
        if buffered is not None and partition in access.assignment():
            return buffered
        return await self._job(lambda c: c.position(partition))

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

    # -- offsets and the cluster -----------------------------------------------------------
    async def commit(self, offsets: dict[TopicPartition, Any] | None = None) -> None:
        """Commit what was returned (default) or ``offsets``: ``{tp: offset}``, ``{tp: (offset,
        metadata)}`` or ``{tp: OffsetAndMetadata}``.  CommitFailedError if the group moved on."""
        self._group("commit")
        if offsets is None:
            await self._job(lambda c: c.commit())
            return
        if not isinstance(offsets, dict):
            raise ValueError(f"offsets must be a dict of TopicPartition to offsets, not {offsets!r}")
        converted = {check_partition(tp): _offset(value) for tp, value in offsets.items()}
        _, access, _ = self._running()
        foreign = set(converted) - access.assignment()
        if foreign:  # as aiokafka
            raise IllegalStateError(f"commit() of partitions this consumer does not own: {sorted(foreign)}")
        await self._job(lambda c: c.commit(converted))

    async def committed(self, partition: TopicPartition) -> int | None:
        """The group's committed offset of ``partition`` (None if none)."""
        partition = check_partition(partition)
        self._group("committed")
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
        """The first offset at or after each timestamp (None past the end)."""
        wanted = dict(timestamps)
        return await self._job(lambda c: c.offsets_for_times(wanted))

    async def topics(self) -> set[str]:
        """Every topic of the cluster (asked now)."""
        return await self._job(lambda c: c.topics())

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """The topic's partitions as the metadata known now has them (None if unknown)."""
        return None if self._access is None else self._access.partitions_for_topic(topic)

    # -- groupclient's own -----------------------------------------------------------------
    def group_metadata(self) -> GroupMetadata:
        """The member's group id, generation, member id and state (as GroupConsumer's)."""
        if self._consumer is None:
            return GroupMetadata(self._group_id, -1, "", None, "<unjoined>")
        return self._consumer.group_metadata()

    def metrics(self) -> dict[str, dict[str, float]] | None:
        """kafka-python's metric groups (as GroupConsumer.metrics())."""
        return None if self._consumer is None else self._consumer.metrics()

    def __repr__(self) -> str:
        inner = repr(self._consumer) if self._consumer is not None else f"group={self._group_id!r}"
        return f"<AsyncGroupConsumer {self._state} {inner}>"


def _offset(value: Any) -> OffsetAndMetadata:
    """aiokafka's commit forms: an int, (offset, metadata) or an OffsetAndMetadata."""
    if isinstance(value, OffsetAndMetadata):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return OffsetAndMetadata(value, "", -1)
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], int) and isinstance(value[1], str):
        return OffsetAndMetadata(value[0], value[1], -1)
    raise ValueError(f"an offset to commit is an int, (offset, metadata) or OffsetAndMetadata, not {value!r}")
