"""``GroupConsumer``: kafka-python's ``KafkaConsumer`` group API on groupclient's own internals.

Change ``from kafka import KafkaConsumer`` to ``from groupclient import GroupConsumer as
KafkaConsumer`` and consumption works the same: same constructor, config names, defaults and
methods, and errors that are kafka-python's classes too.  One thread owns a consumer at a time
(``ConcurrentAccessError`` otherwise); ``wakeup()``, ``assignment()``, ``group_metadata()``,
``metrics()`` and ``bootstrap_connected()`` may be called from any thread.  docs/migration.md
lists every difference from kafka-python and why.
"""

from __future__ import annotations

import logging
import random
import textwrap
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import Any, Generic

from ..structs import ConsumerRecord, K, V
from kafka.structs import ConsumerGroupMetadata, MemberState
from ..structs import TopicPartition

from ..clock import Clock, SystemClock, Timer
from ..errors import ArgumentTypeError, ConfigurationError, IllegalStateError
from ..member.states import shown_as
from ..network.client import NetworkClient
from ..network.io import IOBackend
from .any_thread import AnyThreadAccess
from .commit_control import CommitControl
from .config import build_config, check_name, default_config, network_config
from .settings import ConsumerSettings, Unpack, docstring_section
from .columns import RecordColumns
from .fetcher import FetchConfig, Fetcher
from .driver_base import GroupParts
from .group_driver import GroupDriver, build_group_driver
from .group_polling import GroupPolling
from .interceptors import InterceptorChain
from .listener import ListenerCalls, RebalanceListener
from .observers import ConsumerObservers
from .positions import PositionControl
from .queries import ClusterQueries, check_partition
from .rebalance_events import RebalanceEvent, RebalanceRecorder
from .subscription import DeliveryTag, SubscriptionState, SubscriptionType, TopicPattern, python_pattern
from .thread_ownership import ThreadOwnership

log = logging.getLogger("groupclient.consumer")

CLOSE_TIMEOUT_MS = 30_000  # close() with no timeout_ms (Java's default close timeout)

# what poll() returns: a GroupConsumer[K, V]'s records, by partition
Records = dict[TopicPartition, list[ConsumerRecord[K, V]]]


class GroupMetadata(ConsumerGroupMetadata):  # type: ignore[misc]  # kafka-python's namedtuple is untyped
    """kafka-python's ConsumerGroupMetadata (``state`` is kafka-python's MemberState:
    '<unjoined>', '<rebalancing>' or '<stable>'), plus ``phase``: groupclient's finer member
    state (unjoined, preparing-rebalance, completing-rebalance, stable)."""

    phase: str = "unjoined"


class GroupConsumer(GroupPolling, ClusterQueries, PositionControl, CommitControl, Generic[K, V]):
    """A Kafka consumer that shares its topics' partitions with the other members of a consumer
    group: kafka-python's ``KafkaConsumer`` (its constructor, setting names, defaults and methods)
    on groupclient's own group logic, so switching is an import change.

        from groupclient import GroupConsumer

        with GroupConsumer("orders", bootstrap_servers="127.0.0.1:9092", group_id="billing",
                           auto_offset_reset="earliest") as consumer:
            for record in consumer:                      # or: consumer.poll(timeout_ms=1000)
                print(record.partition, record.offset, record.value)

    The constructor checks every setting and connects (NoBrokersAvailableError when no
    bootstrap server answers within bootstrap_timeout_ms).  ``poll()`` joins the group, fetches,
    and commits (enable_auto_commit); a background thread only sends heartbeats.  Your code
    (listener, deserializers, interceptors, assignor, callbacks) runs on the thread that owns the
    consumer, inside its calls; another thread calling it raises ConcurrentAccessError, except
    ``wakeup()``.  ``close()`` commits, leaves the group and returns within ``timeout_ms``.

    Errors: ConfigurationError (bad settings), FatalError (the group refused this member for
    good: close), CommitFailedError (the partitions moved: nothing to commit),
    RecordDeserializationError (seek past the record), KafkaTimeoutError; everything transient
    is retried inside.  Every error is also the kafka.errors class of the same name.

    Docs: docs/consumer.md (methods, errors, settings), docs/migration.md (every difference from
    kafka-python), docs/design.md (threads and locks).

    Types: ``GroupConsumer[K, V]``, where K and V are what ``key_deserializer`` and
    ``value_deserializer`` return (``bytes`` without them), inferred from the constructor's
    arguments: ``poll()`` returns ``dict[TopicPartition, list[ConsumerRecord[K, V]]]``, and a
    record's ``key`` is ``K | None`` (None: no key, which no deserializer is called for), its
    ``value`` ``V | None`` (None: a tombstone).

    ``clock``, ``io`` and ``rng`` are for tests (the simulator of groupclient.testing).

    {settings}
    """

    DEFAULT_CONFIG = default_config()
    def __init__(self, *topics: str, clock: Clock | None = None, io: IOBackend | None = None,
                 rng: random.Random | None = None, **configs: Unpack[ConsumerSettings[K, V]]) -> None:
        """``clock``, ``io`` and ``rng`` are for tests: the simulator in :mod:`groupclient.testing`
        passes its clock, its in-memory network and a seeded random source (every random draw of
        the consumer comes from it); everything else is kafka-python's configs."""
        self.config = build_config(configs)
        cfg = self.config
        network = network_config(cfg)  # before anything starts: a bad setting raises here
        self._interceptors = InterceptorChain(cfg["interceptors"])
        self._clock = clock or SystemClock()
        self._subscription = SubscriptionState(cfg["auto_offset_reset"], cfg["isolation_level"] == "read_committed")
        self._observers = ConsumerObservers(cfg, self._clock, self._subscription.lags_by_partition,
                                            self._subscription.assigned)
        self._metrics = self._observers.metrics
        self._ownership = ThreadOwnership()
        self._closed = False
        self._rng = rng or random.Random()
        self._client = NetworkClient(network, self._clock, self._rng, io=io,
            observer=self._observers.request_observer(), io_observer=self._observers.io_observer())
        self._events = RebalanceRecorder(self._event_callbacks(cfg["rebalance_event_callback"]))
        self._listener_calls = ListenerCalls(observer=self._events.listener_called)
        self._fetcher = Fetcher(self._client, self._subscription, FetchConfig(
            cfg["fetch_min_bytes"], cfg["fetch_max_wait_ms"], cfg["fetch_max_bytes"],
            cfg["max_partition_fetch_bytes"], 1 if cfg["isolation_level"] == "read_committed" else 0,
            cfg["check_crcs"], cfg["key_deserializer"], cfg["value_deserializer"]))
        self._group: GroupDriver | None = None
        if cfg["group_id"] is not None:
            self._group = build_group_driver(cfg, GroupParts(
                self._client, self._clock, self._rng, self._subscription, self._listener_calls, self._events,
                self._drop_fetched, self._interceptors.on_commit if self._interceptors else None,
                self._observers.commit_observer()))
        self._iterator: Iterator[ConsumerRecord[K, V]] | None = None
        self._any_thread = AnyThreadAccess(self._subscription, self._fetcher, self._client, self._note_poll)
        if cfg["api_version"] is None:
            # kafka-python's constructor fails when no broker answers within bootstrap_timeout_ms
            try:
                self._client.bootstrap(cfg["bootstrap_timeout_ms"])
            except BaseException:
                self._client.close()
                raise
        if topics:
            self.subscribe(list(topics))

    def _event_callbacks(self, configured: Callable[[RebalanceEvent], object] | None
                         ) -> list[Callable[[RebalanceEvent], object]]:
        callbacks = self._observers.rebalance_callbacks()
        if configured is not None:
            callbacks.append(configured)
        return callbacks

    def _drop_fetched(self) -> None:
        self._fetcher.drop_buffered(set())

    # -- subscription --------------------------------------------------------------------
    def subscribe(self, topics: Iterable[str] | str = (), pattern: str | None = None,
                  listener: RebalanceListener | None = None) -> None:
        """Subscribe to topics or a regex pattern.  With a group_id the group assigns the
        partitions; without one the consumer takes every partition of them (kafka-python's
        group-less consumption: nothing is committed).  ``listener``: an object with any of
        ``on_partitions_revoked``, ``on_partitions_assigned``, ``on_partitions_lost``
        (:class:`ConsumerRebalanceListener`, kafka-python's, or your own)."""
        with self._ownership.acquired():
            self._ensure_open()
            if self._subscription.type is SubscriptionType.USER_ASSIGNED:
                raise IllegalStateError("subscribe() after assign(): call unsubscribe() first")
            if isinstance(topics, str):
                names = [topics]
            elif isinstance(topics, Iterable):
                names = list(topics)
            else:
                raise ArgumentTypeError(f"topics must be a topic name or a list of them, not {topics!r}")
            if names and pattern:
                raise IllegalStateError("subscribe() takes topics or a pattern, not both")
            if not names and not pattern:
                raise ConfigurationError("subscribe() needs topics or a pattern")
            if listener is not None and not any(callable(getattr(listener, m, None)) for m in (
                    "on_partitions_revoked", "on_partitions_assigned", "on_partitions_lost")):
                raise ArgumentTypeError(f"listener {listener!r} has none of on_partitions_revoked, "
                                        "on_partitions_assigned, on_partitions_lost")
            for name in names:
                check_name("topic name", name)
            if pattern is not None and not isinstance(pattern, str):
                raise ArgumentTypeError(f"pattern must be a string, not {pattern!r}")
            compiled: TopicPattern | None = None  # compiled before anything changes
            if pattern is not None:
                compiled = self._group.compile_pattern(pattern) if self._group is not None else python_pattern(pattern)
            before = set(self._subscription.topics)
            self._subscription.subscribe(set(names), compiled)
            self._listener_calls.listener = listener
            self._client.set_topics(None if compiled is not None else set(names))
            if self._group is not None:
                self._group.subscribed(names, pattern, self._subscription.topics != before)

    def subscription(self) -> set[str] | None:
        """The topics subscribed to (a pattern's matches so far), or None when not subscribed."""
        with self._ownership.acquired():
            return set(self._subscription.topics) if self._subscription.is_group_subscribed() else None

    def unsubscribe(self) -> None:
        """Give up the subscription or the assignment; a member leaves its group (listener first)."""
        with self._ownership.acquired():
            self._ensure_open()
            self._leave_group("the consumer unsubscribed")
            if self._group is not None:
                self._group.unsubscribed()
            self._subscription.unsubscribe()
            self._fetcher.drop_buffered(set())
            self._client.set_topics(set())

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Consume exactly these partitions, without a group's assignment (``[]``: unsubscribe)."""
        if not isinstance(partitions, Iterable):
            raise ArgumentTypeError(f"assign() takes a list of TopicPartition, not {partitions!r}")
        wanted = {check_partition(tp) for tp in partitions}
        with self._ownership.acquired():
            self._ensure_open()
            if not wanted:
                # as kafka-python (and Java): assigning nothing is unsubscribing
                self.unsubscribe()
                return
            if self._subscription.is_group_subscribed():
                raise IllegalStateError("assign() after subscribe(): call unsubscribe() first")
            self._any_thread.assign(wanted)

    def assignment(self) -> set[TopicPartition]:
        """The partitions this consumer owns now.  Safe to call from any thread."""
        return self._subscription.assigned()

    # -- polling -------------------------------------------------------------------------
    def poll(self, timeout_ms: int = 0, max_records: int | None = None,
             update_offsets: bool = True) -> Records[K, V]:
        """Records per partition, at most ``max_records`` (default max_poll_records)."""
        records: Records[K, V] = self._poll(timeout_ms, max_records, update_offsets, columnar=False)
        return records

    def _poll_columns(self, timeout_ms: int, max_records: int | None = None) -> dict[TopicPartition, list[RecordColumns]]:
        """For groupclient.spark: poll() with each partition's records as columns
        (consumer/columns.py), no Python object per record.  Interceptors take ConsumerRecords,
        so a consumer with interceptors refuses it."""
        if self._interceptors:
            raise ConfigurationError("interceptors take ConsumerRecords: a columnar poll cannot call them")
        columns: dict[TopicPartition, list[RecordColumns]] = self._poll(timeout_ms, max_records, True, columnar=True)
        return columns

    def _poll(self, timeout_ms: int, max_records: int | None, update_offsets: bool,
              columnar: bool) -> dict[TopicPartition, list[Any]]:
        with self._ownership.acquired():
            self._ensure_open()
            if self._subscription.type is SubscriptionType.NONE:
                raise IllegalStateError("the consumer is not subscribed to any topic nor assigned any partition")
            if max_records is not None and max_records < 1:
                raise ConfigurationError("max_records must be at least 1")
            if timeout_ms < 0:
                raise ConfigurationError("timeout_ms must not be negative")
            limit = max_records or self.config["max_poll_records"]
            started = self._observers.poll_started()
            records = self._poll_records(Timer(self._clock, timeout_ms), limit, update_offsets, columnar)
            if records:
                # bytes counted per fetch answer handed out, not per record (the hot path)
                self._observers.delivered(records, columnar, self._fetcher.take_drained_bytes(), started)
            if columnar:
                return records
            if records and self._interceptors:
                records = self._interceptors.on_consume(records)
            return records

    def _note_poll(self) -> None:
        """groupclient.aio: the application asked for records (any thread: the member's lock)."""
        if self._group is not None:
            self._group.member.poll_heartbeat(self._clock.monotonic_ms())

    def _poll_undelivered(self, timeout_ms: int,
                          max_records: int) -> tuple[Records[K, V], dict[TopicPartition, DeliveryTag]]:
        """For groupclient.aio: poll() that leaves the records undelivered (commits do not cover
        them) until ``self._any_thread.take_delivery`` hands them out, with each partition's
        :data:`DeliveryTag` as they were drained."""
        records = self.poll(timeout_ms, max_records, update_offsets=False)
        tags = self._fetcher.tags
        return records, {tp: tags[tp] for tp in records if tp in tags}

    def _poll_records(self, timer: Timer, limit: int, delivered: bool,
                      columnar: bool = False) -> dict[TopicPartition, list[Any]]:
        while True:
            self._raise_pending()
            ready = self._poll_group(timer)
            # a listener's error (it ran inside _poll_group) is raised before records are drained:
            # after, it would lose them (their positions moved, and with them the commits)
            self._raise_pending()
            if ready and self._positions_known_in_time(timer):
                records: dict[TopicPartition, list[Any]]
                if columnar:
                    records = self._fetcher.fetched_columns(limit)
                else:
                    records = self._fetcher.fetched_records(limit, delivered)
                self._fetcher.send_fetches()
                if records:
                    return records
            # wait for network events: a fetch answer comes within fetch_max_wait_ms, and
            # wakeup() or another thread's send interrupts the wait at once
            wait = min(timer.remaining_ms(), self.config["fetch_max_wait_ms"] + 100, 1000)
            if self._group is not None and self._group.member.heartbeat_enabled():
                wait = min(wait, self._group.member.time_to_next_heartbeat(self._clock.monotonic_ms()) + 1)
            self._client.poll_until(None, Timer(self._clock, wait))
            if timer.expired():
                self._raise_pending()
                return {}

    def _raise_pending(self) -> None:
        """What the application must hear now: a listener's exception (once), and a fatal error
        (every time: the group refused the member for good, or groupclient failed)."""
        self._listener_calls.raise_pending()
        # a consumer-protocol refusal is raised once, as Java's; the classic one every time
        group_error = self._group.take_error() if self._group is not None else None
        for error in (group_error, self._fetcher.fatal_error):
            if error is not None:
                raise error

    def __iter__(self) -> GroupConsumer[K, V]:
        return self

    def __next__(self) -> ConsumerRecord[K, V]:
        """The next record; a commit (auto, on revoke, on close, or ``commit()``) covers exactly the
        records this has returned, not the rest of the batch it fetched them in."""
        if self._closed:
            raise StopIteration  # a for loop over a closed consumer ends, as in kafka-python
        telemetry = self._observers.telemetry
        if telemetry is not None and telemetry.processing:
            telemetry.end_process()  # the application is done with the record it had
        timeout = self.config["consumer_timeout_ms"]
        timer = Timer(self._clock, None if timeout == float("inf") else timeout)
        while True:
            while self._iterator is not None:
                record = next(self._iterator, None)
                if record is None:
                    self._iterator = None
                elif self._subscription.mark_delivered(TopicPartition(record.topic, record.partition), record.offset,
                                                        record.leader_epoch):
                    if telemetry is not None and telemetry.tracing:
                        telemetry.start_process(record)
                    return record
                # else: revoked or seeked away since it was fetched; not this consumer's to give
            batch = self.poll(timeout_ms=min(timer.remaining_ms(), 1000), update_offsets=False)
            self._iterator = iter([r for records in batch.values() for r in records])
            if not batch and timer.expired():
                raise StopIteration

    # -- group ---------------------------------------------------------------------------
    def enforce_rebalance(self, reason: str = "the application asked for a rebalance") -> None:
        """Rejoin the group at the next poll(), with ``reason`` (the JoinGroup carries it)."""
        with self._ownership.acquired():
            if self._group is None or not self._subscription.is_group_subscribed():
                raise IllegalStateError("enforce_rebalance() needs a group subscription")
            self._group.enforce_rebalance(reason)

    def group_metadata(self) -> GroupMetadata:
        """The member's group id, generation, member id, instance id and state, as kafka-python's
        ConsumerGroupMetadata (plus ``.phase``).  Without a group_id: group_id None, unjoined.
        Safe to call from any thread."""
        if self._group is None:
            return GroupMetadata(None, -1, "", None, MemberState.UNJOINED)
        member = self._group.member.snapshot()
        metadata = GroupMetadata(self.config["group_id"], member.counter, member.member_id,
                                 self.config["group_instance_id"], shown_as(member.state))
        metadata.phase = member.state.value
        return metadata

    def add_rebalance_event_callback(self, callback: Callable[[RebalanceEvent], object]) -> None:
        """Also call ``callback`` with every rebalance's :class:`RebalanceEvent` (on the thread
        running poll(); an exception is logged).  Same as the rebalance_event_callback config."""
        if self._group is None:
            raise IllegalStateError("rebalance events need a group_id")
        self._events.callbacks.append(callback)

    def wakeup(self) -> None:
        """Thread-safe: make a blocking call in the owning thread raise WakeupError."""
        self._client.wakeup()

    # -- closing -------------------------------------------------------------------------
    def _ensure_open(self) -> None:
        if self._closed:
            raise IllegalStateError("the consumer is closed")

    def _leave_group(self, reason: str, timer: Timer | None = None) -> None:
        if self._group is None or not self._subscription.is_group_subscribed():
            return
        member = self._group.member
        owned = self._subscription.assigned() | self._subscription.take_lost()
        self._subscription.fence(owned)
        if owned:
            # not stable: the group may have moved on without this member, so it must not commit
            stable = member.commit_identity() is not None
            self._listener_calls.call("on_partitions_revoked" if stable else "on_partitions_lost", owned)
        self._subscription.set_group_assignment(set())
        future = member.maybe_leave_group(reason)
        if future is not None:
            self._client.poll_until(future, timer or Timer(self._clock, self.config["request_timeout_ms"]), wakeup=False)
            if future.failed():  # the member is gone either way (Java logs it too)
                log.warning("group %s: LeaveGroup failed: %s", self.config["group_id"], future.exception)

    def close(self, autocommit: bool = True, timeout_ms: float | None = None) -> None:
        """Commit (with ``autocommit`` and enable_auto_commit), finish the async commits, leave the
        group and close the connections, all within ``timeout_ms`` (default: 30 s, Java's, or
        default_api_timeout_ms if smaller): then it returns, whatever is still missing (each step
        that cannot finish is logged at WARNING)."""
        with self._ownership.acquired():
            if self._closed:
                return
            budget = timeout_ms if timeout_ms is not None else min(CLOSE_TIMEOUT_MS, self.config["default_api_timeout_ms"])
            timer = self._default_timer(budget)
            try:
                group = self._group.committer if self._group is not None else None
                # commit while the heartbeat thread still keeps the member in the group, all that
                # was handed out: nothing more is from now (groupclient.aio's buffer)
                self._subscription.fence(self._subscription.assigned())
                offsets = self._subscription.consumed_offsets()
                if autocommit and group is not None and self.config["enable_auto_commit"] and offsets:
                    try:
                        group.commit_sync(offsets, timer, warn_waiting=f"close(timeout_ms={budget})")
                    except Exception as exc:
                        log.warning("close(): the auto-commit failed: %s", exc)
                if group is not None:
                    # async commits still on their way are answered before the member leaves
                    for future in group.in_flight_commits():
                        self._client.poll_until(future, timer, wakeup=False)
                    group.invoke_completed_commit_callbacks()
                if self._group is not None:
                    self._group.stop_heartbeat_thread(min(5.0, timer.remaining_ms() / 1000))
                self._leave_group("the consumer is closing", timer)
            finally:
                self._closed = True
                self._observers.close()
                self._client.close()
                self._interceptors.close()
                self._close_deserializers()
            self._listener_calls.raise_pending()

    def _close_deserializers(self) -> None:
        """kafka-python's Deserializer objects have close(); plain functions have not."""
        for key in ("key_deserializer", "value_deserializer"):
            close = getattr(self.config[key], "close", None)
            if callable(close) and not isinstance(self.config[key], type):
                try:
                    close()
                except Exception as exc:
                    log.warning("%s.close() failed: %r", key, exc)

    def __repr__(self) -> str:
        """``<GroupConsumer group='billing' member='billing-1-4f…' generation=3 stable, 2 partitions
        of ['orders']>``: safe from any thread (a snapshot taken under each part's own lock)."""
        cfg = self.config
        if self._closed:
            state = "closed" if cfg["group_id"] is None else f"group={cfg['group_id']!r} closed"
        elif self._group is None:
            state = "no group"
        else:
            member = self._group.member.snapshot()
            state = (f"group={cfg['group_id']!r} member={member.member_id or '-'!r} "
                     f"{member.counter_name}={member.counter} {member.state.value}")
        if cfg["group_instance_id"] is not None and not self._closed:
            state += f" instance={cfg['group_instance_id']!r}"
        assigned = self._subscription.assigned()
        topics = sorted(self._subscription.topics) or sorted({tp.topic for tp in assigned})
        where = f", {len(assigned)} partition{'' if len(assigned) == 1 else 's'} of {topics}"
        return f"<GroupConsumer client_id={cfg['client_id']!r} {state}{where if not self._closed else ''}>"

    def __enter__(self) -> GroupConsumer[K, V]:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        # as kafka-python 3.0: a block left by an exception commits nothing (the records it was
        # handling may not have been processed), and the member still leaves the group
        self.close(autocommit=exc_type is None)


# the settings part of the docstring is made from their one declaration (settings.py)
GroupConsumer.__doc__ = (GroupConsumer.__doc__ or "").replace(
    "{settings}", textwrap.indent(docstring_section(), "    ").lstrip())

