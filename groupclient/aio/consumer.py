"""``AsyncGroupConsumer``: aiokafka's ``AIOKafkaConsumer`` API on GroupConsumer's group logic.

One GroupConsumer does the work, owned by a thread of this consumer's own
(:mod:`groupclient.aio.consumer_thread`); the coroutines here hand it jobs and await them, and
between jobs the thread keeps the group (``GroupConsumer._keep_group``), so the event loop never
blocks on a socket, a lock or a rebalance, the group goes on whether or not the application
fetches, and the GroupConsumer's heartbeat thread keeps the member in its group while the
application's code holds the loop.  The design and the thread model: docs/design.md, "asyncio";
usage and the migration from aiokafka: docs/asyncio.md.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from ..consumer.any_thread import AnyThreadAccess
from ..consumer.group_consumer import GroupConsumer, GroupMetadata
from ..consumer.queries import check_partition
from ..consumer.rebalance_events import RebalanceEvent
from ..errors import ArgumentTypeError, ConfigurationError, IllegalStateError, KafkaTimeoutError
from ..otel.providers import api_installed
from ..structs import ConsumerRecord, K, TopicPartition, V
from .config import Deserializer, translate
from .consumer_thread import Background, ConsumerThread
from .errors import ConsumerStoppedError
from .fetch_jobs import FetchJobs
from .listener import LoopListener, RebalanceListener
from .offsets import AsyncOffsets
from .record_buffer import RecordBuffer
from .subscribing import AsyncSubscriptions, Mode, check_subscription

if TYPE_CHECKING:
    from .telemetry import LoopTelemetry

log = logging.getLogger("groupclient.aio")

T = TypeVar("T")
# what getmany() returns: an AsyncGroupConsumer[K, V]'s records, by partition
Records = dict[TopicPartition, list[ConsumerRecord[K, V]]]

_NAMES = itertools.count(1)
CLOSE_TIMEOUT_MS = 30_000  # stop() without timeout_ms, as GroupConsumer.close()
STOP_GRACE_S = 5.0  # stop() waits this much longer than its timeout for a job ahead of close()
# the longest a background turn waits for network events when nothing else is due: a job ends
# the wait at once (ConsumerThread.submit wakes it), so this only bounds how often an idle
# consumer looks at its metadata age, auto-commit deadline and pattern
TURN_MS = 200


class AsyncGroupConsumer(AsyncSubscriptions, AsyncOffsets, Generic[K, V]):
    """A Kafka group consumer for asyncio: aiokafka's ``AIOKafkaConsumer`` (constructor, setting
    names, coroutines and methods) on groupclient's group logic, so switching is an import change.

        from groupclient.aio import AsyncGroupConsumer

        async with AsyncGroupConsumer("orders", bootstrap_servers="127.0.0.1:9092",
                                      group_id="billing", auto_offset_reset="earliest") as consumer:
            async for record in consumer:        # or: await consumer.getmany(timeout_ms=1000)
                print(record.partition, record.offset, record.value)

    The constructor checks every setting (ConfigurationError) and connects nothing.  ``start()``
    connects and, for a subscribed consumer, returns once it has its first assignment (or
    raises: a fatal group error such as InvalidSessionTimeoutError, or KafkaTimeoutError after
    max_poll_interval_ms); from then on the group is kept in the background, as aiokafka's
    coordinator task keeps it: joins, rebalances with their listener calls, auto-commit and
    pattern matching go on whether or not the application fetches.  ``stop()`` commits
    (enable_auto_commit), leaves the group and returns within ``timeout_ms``.  Every
    GroupConsumer setting works here too (group_protocol='consumer', cooperative-sticky, static
    membership, TLS/SASL, interceptors...), with aiokafka's defaults where they differ
    (session_timeout_ms 10000, request_timeout_ms 40000, round robin).

    Threads: a consumer thread of its own runs the GroupConsumer (fetching, the group between
    fetches, committing, deserializers and interceptors); rebalance listeners (coroutines or
    plain methods) and rebalance event callbacks run on the loop.  The group is kept while your
    code holds the loop for less than max_poll_interval_ms, which counts between
    ``getmany()``/``getone()`` calls.  Cancelling ``getmany()``/``getone()`` loses no record: the
    next call returns it.  Errors: aiokafka's classes, by its names, in
    :mod:`groupclient.aio.errors` (each also GroupConsumer's class); every call checks its
    arguments and the consumer's state when it is made.

    OpenTelemetry (``tracer_provider`` / ``meter_provider``, as GroupConsumer's): spans on the
    loop, in the caller's context (a process span current in ``async for``); metrics from the
    consumer thread (:mod:`groupclient.aio.telemetry`).

    Types: ``AsyncGroupConsumer[K, V]``, where K and V are what ``key_deserializer`` and
    ``value_deserializer`` return (``bytes`` without them), inferred from the constructor's
    arguments: ``getmany()`` returns ``dict[TopicPartition, list[ConsumerRecord[K, V]]]``,
    ``getone()`` and ``async for`` a ``ConsumerRecord[K, V]``.  As aiokafka, the deserializers
    are called for a missing key or value too, with None (their argument is ``bytes | None``).
    """

    def __init__(self, *topics: str, key_deserializer: Deserializer[K] | None = None,
                 value_deserializer: Deserializer[V] | None = None, **configs: Any) -> None:
        """aiokafka's AIOKafkaConsumer arguments (see :mod:`groupclient.aio.config`)."""
        if key_deserializer is not None:
            configs["key_deserializer"] = key_deserializer
        if value_deserializer is not None:
            configs["value_deserializer"] = value_deserializer
        self._settings = translate(configs)
        names, _ = check_subscription(list(topics), None, None) if topics else ((), None)
        self._group_id = self._settings.get("group_id")
        self._getmany_limit: int | None = self._settings.get("max_poll_records")
        self._event_callback: Callable[[RebalanceEvent], object] | None = self._settings.pop(
            "rebalance_event_callback", None)
        self._mode = Mode.SUBSCRIBED if names else Mode.NONE
        self._initial: tuple[tuple[str, ...], str | None, RebalanceListener | None] | None = (
            (names, None, None) if names else None)
        self._initial_assign: set[TopicPartition] | None = None
        self._consumer: GroupConsumer | None = None
        self._access: AnyThreadAccess | None = None
        self._thread: ConsumerThread | None = None
        self._buffer = RecordBuffer()
        self._state = "new"  # new -> starting -> running -> stopping -> stopped
        self._started_building: asyncio.Future[None] | None = None  # done when the build ends, either way
        self._stopped: asyncio.Future[None] | None = None  # done when stop() ends
        # start()'s wait for the first assignment: resolved from a background turn, or failed
        # with the first error the group meets meanwhile
        self._settle: asyncio.Future[None] | None = None
        self._awaiting_assignment = False  # read by the consumer thread's turns (a bool read)
        self._failure: BaseException | None = None  # why start() failed: later calls raise it
        # an error of the background (a listener's, a fatal group error) or of a subscription
        # job, raised by the next getmany()/getone(); a fetch's error waits in the buffer instead
        self._pending_error: BaseException | None = None
        self._membership_jobs = 0
        self._assign_after: set[TopicPartition] | None = None
        self._fetches: FetchJobs | None = None
        self._telemetry: LoopTelemetry | None = None  # the spans (loop only); None without the API
        self._name = f"groupclient-aio-{next(_NAMES)}"

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        """Connect (NoBrokersAvailable when no bootstrap server answers in time) and apply what
        was subscribed or assigned before; a subscribed consumer returns once its first
        assignment is in place (it may be empty), its listener's ``on_partitions_assigned``
        done.  A fatal error of the group (InvalidSessionTimeoutError, GroupAuthorizationFailed,
        a listener's error...) is raised from here, and so is KafkaTimeoutError when no
        assignment came within max_poll_interval_ms (the longest a join may take); the consumer
        is then stopped, and later calls raise the same error.  IllegalStateError when called
        twice, ConsumerStoppedError after ``stop()``."""
        if self._state != "new":
            if self._state in ("stopping", "stopped"):
                raise ConsumerStoppedError("the consumer is stopped: create a new one")
            raise IllegalStateError("start() was called already")
        self._state = "starting"
        loop = asyncio.get_running_loop()
        self._started_building = loop.create_future()
        self._thread = thread = ConsumerThread(loop, self._name)
        settings = dict(self._settings)
        if self._event_callback is not None or api_installed():
            # the user's callback and the rebalance span run on the loop
            settings["rebalance_event_callback"] = lambda event: self._post_event(loop, event)
        building = thread.submit(lambda: _build(settings))
        try:
            consumer = await asyncio.shield(building)
        except BaseException:
            # failed, or this start() was cancelled: a consumer built later is closed, not leaked
            building.add_done_callback(_close_if_built)
            self._state = "stopped"
            thread.close()
            raise
        finally:
            self._started_building.set_result(None)
        self._consumer, self._access = consumer, consumer._any_thread
        self._telemetry = _loop_telemetry(consumer)
        self._fetches = FetchJobs(consumer, thread, self._buffer, lambda: self._state == "running")
        if self._state != "starting":  # stop() came meanwhile: it closes what was built
            raise ConsumerStoppedError("the consumer was stopped while it started")
        self._state = "running"
        access = self._access
        access.note_application_poll()  # max_poll_interval_ms counts from start(), as aiokafka's idle time
        joins = self._apply_initial(access, thread)
        thread.run_in_background(Background(lambda: self._turn(consumer, loop), access.wake, self._deliver_error))
        if not joins:
            return
        try:
            await self._first_assignment(consumer)
        except BaseException as exc:
            await self._fail_start(consumer, thread, exc)
            raise

    def _apply_initial(self, access: AnyThreadAccess, thread: ConsumerThread) -> bool:
        """What subscribe()/assign() recorded before start(), applied; True for a subscription
        (start() waits for its first assignment)."""
        if self._initial is not None:
            topics, pattern, listener = self._initial
            self._initial = None
            bridged = LoopListener(listener, thread) if listener is not None else None
            self._membership(lambda c: c.subscribe(list(topics), pattern=pattern, listener=bridged))
            return True
        if self._initial_assign:
            access.assign(self._initial_assign)
        self._initial_assign = None
        return False

    async def _first_assignment(self, consumer: GroupConsumer) -> None:
        """Until a background turn finds the first assignment in place, or an error comes."""
        self._settle = settle = asyncio.get_running_loop().create_future()
        self._awaiting_assignment = True
        budget_ms = max(int(consumer.config["max_poll_interval_ms"]), int(consumer.config["request_timeout_ms"]))
        try:
            await asyncio.wait_for(asyncio.shield(settle), budget_ms / 1000)
        except asyncio.TimeoutError:
            state = consumer.group_metadata()
            raise KafkaTimeoutError(
                f"start(): no assignment of group {self._group_id!r} within {budget_ms} ms (max_poll_interval_ms, "
                f"the longest a join may take): the member is {state.state!r}, generation {state.generation_id}; "
                "is the group coordinator reachable, and does every member of the group poll?") from None
        finally:
            self._awaiting_assignment, self._settle = False, None

    def _turn(self, consumer: GroupConsumer, loop: asyncio.AbstractEventLoop) -> None:
        """On the consumer thread, between jobs: the group's turn (GroupConsumer._keep_group)."""
        settled = consumer._keep_group(TURN_MS)
        if settled and self._awaiting_assignment:
            self._awaiting_assignment = False
            loop.call_soon_threadsafe(self._settled)

    def _settled(self) -> None:
        if self._settle is not None and not self._settle.done():
            self._settle.set_result(None)

    def _deliver_error(self, error: BaseException) -> None:
        """On the loop: an error of the background or of a subscription job fails a start()
        that waits, else waits for the next getmany()/getone()."""
        if self._settle is not None and not self._settle.done():
            self._settle.set_exception(error)
            return
        log.error("%s: %r (raised by the next getmany() or getone())", self._name, error)
        self._pending_error = self._pending_error or error

    async def _fail_start(self, consumer: GroupConsumer, thread: ConsumerThread, error: BaseException) -> None:
        """start() failed after the consumer was built: close it (no commit: nothing was
        consumed) within STOP_GRACE_S, and have later calls raise ``error``."""
        self._failure = error if isinstance(error, Exception) else ConsumerStoppedError("start() was cancelled")
        self._state = "stopping"
        thread.stop_background()
        closing = thread.submit(lambda: consumer.close(timeout_ms=int(STOP_GRACE_S * 1000), autocommit=False))
        closing.add_done_callback(lambda _: thread.close())
        try:
            await asyncio.wait_for(asyncio.shield(closing), STOP_GRACE_S * 2)
        except BaseException as exc:  # it closes in the background: start()'s error is the news
            log.debug("%s: closing after a failed start(): %r", self._name, exc)
        self._state = "stopped"

    def _post_event(self, loop: asyncio.AbstractEventLoop, event: RebalanceEvent) -> None:
        """On the consumer thread: hand a RebalanceEvent to the loop (the thread does not wait)."""
        try:
            loop.call_soon_threadsafe(self._rebalanced, event)
        except RuntimeError:
            log.debug("rebalance event after the loop closed: %s", event)

    def _rebalanced(self, event: RebalanceEvent) -> None:
        """On the loop: the rebalance span, then the user's rebalance_event_callback."""
        if self._telemetry is not None:
            self._telemetry.rebalanced(event)
        if self._event_callback is not None:
            try:
                self._event_callback(event)
            except Exception as exc:
                log.warning("rebalance_event_callback failed: %r", exc)

    async def stop(self, timeout_ms: int | None = None) -> None:
        """Commit what was consumed (enable_auto_commit), revoke (the listener), leave the group
        and close, within ``timeout_ms`` (default 30 s; a job still running, such as a commit,
        gets 5 s more).  Idempotent.  From inside a rebalance listener it returns at once, and
        the consumer stops once the listener returned."""
        if self._state in ("new", "stopped"):
            self._state = "stopped"
            return
        thread = self._thread
        assert thread is not None
        if self._state == "starting":
            self._state = "stopping"
            assert self._started_building is not None
            await asyncio.shield(self._started_building)
            if self._consumer is None:  # start() failed: nothing to close
                self._state = "stopped"
                return
        elif self._state == "stopping":
            if not thread.in_listener() and self._stopped is not None:  # a listener would wait for itself
                await asyncio.shield(self._stopped)
            return
        self._state = "stopping"
        self._buffer.drop()
        if self._telemetry is not None:
            self._telemetry.close()  # the record async for handed out is done with
        consumer = self._consumer
        assert consumer is not None
        loop = asyncio.get_running_loop()
        self._stopped = stopped = loop.create_future()
        thread.stop_background()
        closing = thread.submit(lambda: consumer.close(timeout_ms=timeout_ms))

        def closed(done: asyncio.Future[None]) -> None:
            thread.close()
            self._state = "stopped"
            if not stopped.done():
                stopped.set_result(None)
            if not done.cancelled() and done.exception() is not None:
                log.warning("%s: close() failed: %r", self._name, done.exception())
        closing.add_done_callback(closed)
        if thread.in_listener():
            return  # the rebalance waits for this listener: close() comes after it
        budget_s = (timeout_ms if timeout_ms is not None else CLOSE_TIMEOUT_MS) / 1000 + STOP_GRACE_S
        try:
            await asyncio.wait_for(asyncio.shield(stopped), budget_s)
        except asyncio.TimeoutError:
            log.warning("%s: stop() gave up after %.0f s: the consumer thread is still busy (it closes "
                        "the consumer when it is done)", self._name, budget_s)
            self._state = "stopped"

    async def __aenter__(self) -> AsyncGroupConsumer[K, V]:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    def _running(self) -> tuple[GroupConsumer, AnyThreadAccess, ConsumerThread]:
        # a listener that stop() calls (it revokes the partitions, as Java) may still use the consumer
        inside_stop = self._state == "stopping" and self._thread is not None and self._thread.in_listener()
        if self._state in ("stopping", "stopped") and not inside_stop:
            raise ConsumerStoppedError("the consumer is stopped")
        if self._consumer is None or self._access is None or self._thread is None:
            raise IllegalStateError("the consumer is not started: await start() first")
        return self._consumer, self._access, self._thread

    def _raise_failure(self) -> None:
        if self._failure is not None:  # start() failed: the consumer is stopped, for this reason
            raise self._failure

    def _raise_pending(self) -> None:
        error, self._pending_error = self._pending_error, None
        if error is not None:
            if self._thread is not None:
                self._thread.resume_background()  # the application heard it: the group goes on
            raise error

    def _fetch_jobs(self) -> FetchJobs:
        assert self._fetches is not None  # set by start(), which _running() checked
        return self._fetches

    def _not_in_listener(self, method: str) -> None:
        thread = self._thread
        if thread is not None and thread.in_listener():
            raise IllegalStateError(f"{method}() inside a rebalance listener: the rebalance waits for the "
                                    "listener, which would wait for the rebalance")

    async def _job(self, run: Callable[[GroupConsumer], T]) -> T:
        """A call a listener may await too (nested: it runs while the rebalance waits)."""
        consumer, _, thread = self._running()
        return await thread.submit(lambda: run(consumer), nested=True)

    # -- records -------------------------------------------------------------------------
    async def getmany(self, *partitions: TopicPartition, timeout_ms: int = 0,
                      max_records: int | None = None) -> Records[K, V]:
        """Records per partition (of ``partitions`` only, if given), at most ``max_records``
        (default max_poll_records; none set: every record fetched so far), waiting up to
        ``timeout_ms`` (0 or less: not at all) for the first.  The error the group met in the
        background since the last call (a listener's, a fatal one) is raised here."""
        self._raise_failure()
        _, access, _ = self._running()
        self._not_in_listener("getmany")
        only = {check_partition(tp) for tp in partitions}
        if max_records is not None and (isinstance(max_records, bool) or not isinstance(max_records, int)
                                        or max_records < 1):
            raise ConfigurationError(f"max_records must be a positive integer, not {max_records!r}")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float)):
            raise ArgumentTypeError(f"timeout_ms must be a number of milliseconds, not {timeout_ms!r}")
        timeout_ms = max(timeout_ms, 0)  # as aiokafka: a negative timeout does not wait
        limit = max_records if max_records is not None else self._getmany_limit
        fetches = self._fetch_jobs()
        started_ns = time.time_ns()  # the receive span's start
        access.note_application_poll()  # max_poll_interval_ms counts between these calls, as aiokafka's
        self._raise_pending()
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            records = self._buffer.take(access, limit, only)
            if records:
                break
            remaining = deadline - time.monotonic()
            fetch = fetches.fetch(max(0, int(remaining * 1000)))
            try:
                await asyncio.wait_for(asyncio.shield(fetch), max(remaining, 0))
            except asyncio.TimeoutError:
                pass
            if self._state != "running":
                return {}  # stopped while waiting (as aiokafka); stop() committed what was handed out
            self._raise_pending()
            if time.monotonic() >= deadline:
                records = self._buffer.take(access, limit, only)
                if not records:
                    return {}
                break
        fetches.prefetch()
        if self._telemetry is not None:
            self._telemetry.received(records, started_ns)
        # the buffer's records are the consumer thread's GroupConsumer's, made by this consumer's
        # deserializers
        return cast("Records[K, V]", records)

    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord[K, V]:
        """The next record (of ``partitions`` only, if given), waiting as long as it takes."""
        self._raise_failure()
        _, access, _ = self._running()
        self._not_in_listener("getone")
        only = {check_partition(tp) for tp in partitions}
        fetches = self._fetch_jobs()
        started_ns = time.time_ns()  # the receive span's start
        access.note_application_poll()
        while True:
            self._raise_pending()
            records = self._buffer.take(access, 1, only)
            if records:
                fetches.prefetch()
                if self._telemetry is not None:
                    self._telemetry.received(records, started_ns)
                return cast("ConsumerRecord[K, V]", next(iter(records.values()))[0])  # (as getmany())
            await asyncio.shield(fetches.fetch(1000))
            self._running()  # ConsumerStoppedError once stopped: async for ends

    def __aiter__(self) -> AsyncGroupConsumer[K, V]:
        if self._state == "stopped":  # as aiokafka; a loop running when stop() comes ends instead
            raise ConsumerStoppedError("the consumer is stopped")
        return self

    async def __anext__(self) -> ConsumerRecord[K, V]:
        """``async for``: getone() until the consumer is stopped.  With OpenTelemetry, each
        record's process span is current in the caller's task until the next ``__anext__``."""
        telemetry = self._telemetry
        if telemetry is not None:
            telemetry.end_process()  # the caller is done with the record it had
        try:
            record = await self.getone()
        except ConsumerStoppedError:
            raise StopAsyncIteration from None
        if telemetry is not None:
            # set here, in the caller's task: a coroutine it awaits shares its context
            telemetry.start_process(record)
        return record

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


def _build(settings: dict[str, Any]) -> GroupConsumer:
    """On the consumer thread: the GroupConsumer, told before it ever polls that it serves
    asyncio (GroupPolling._serve_asyncio), its own spans off (they are made on the loop, in the
    application's context: aio/telemetry.py); its metrics and gauges stay on."""
    consumer = GroupConsumer(**settings)
    consumer._serve_asyncio()
    if consumer._observers.telemetry is not None:
        consumer._observers.telemetry.disable_spans()
    return consumer


def _loop_telemetry(consumer: GroupConsumer) -> LoopTelemetry | None:
    """The loop's spans for ``consumer`` (None without the OpenTelemetry API: nothing of it is
    imported then)."""
    if consumer._observers.telemetry is None:
        return None
    from .telemetry import loop_side

    return loop_side(consumer)


def _close_if_built(building: asyncio.Future[GroupConsumer]) -> None:
    """A consumer whose start() failed or was cancelled after it was built is closed."""
    if not building.cancelled() and building.exception() is None:
        consumer = building.result()
        threading.Thread(target=consumer.close, kwargs={"autocommit": False}, daemon=True,
                         name="groupclient-aio-close").start()
