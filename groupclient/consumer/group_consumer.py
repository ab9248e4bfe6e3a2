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
import re
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import Any

from ..structs import ConsumerRecord
from kafka.future import Future as KafkaFuture
from kafka.structs import ConsumerGroupMetadata, MemberState
from ..structs import OffsetAndMetadata, TopicPartition

from ..assignors.base import RebalanceProtocol, common_protocol
from ..assignors.registry import resolve_assignors
from ..clock import Clock, SystemClock, Timer
from ..errors import ArgumentTypeError, CommitFailedError, ConfigurationError, IllegalStateError
from ..member.any_member import AnyMember
from ..member.consumer_heartbeat_fields import Subscribed
from ..member.consumer_member import ConsumerGroupMember
from ..member.coordinator_lookup import CoordinatorLookup
from ..member.group_member import GroupMember
from ..member.heartbeat_thread import HeartbeatThread
from ..member.join import GroupJoin
from ..member.member_state import MemberState as MemberPhase
from ..member.types import GroupConfig
from ..network.client import NetworkClient, NetworkConfig, parse_bootstrap
from ..network.io import IOBackend
from ..network.security import security_from_config
from ..protocol.consumer_group_heartbeat import new_member_id
from .any_thread import AnyThreadAccess
from .assigned import AssignedPartitions
from .commits import CommitCallback, OffsetCommitter
from .config import build_config, check_name, default_config
from .settings import ConsumerSettings, Unpack, docstring_section
from .columns import RecordColumns
from .fetcher import FetchConfig, Fetcher
from .group_hooks import ConsumerGroupHooks
from .group_polling import GroupPolling
from .broker_regex import broker_regex
from .reconciler import Reconciler
from .interceptors import InterceptorChain
from .listener import ListenerCalls
from .observers import ConsumerObservers
from .positions import PositionControl
from .queries import ClusterQueries, check_partition
from .rebalance_events import RebalanceEvent, RebalanceRecorder
from .subscription import DeliveryTag, SubscriptionState, SubscriptionType
from .thread_ownership import ThreadOwnership

log = logging.getLogger("groupclient.consumer")

CLOSE_TIMEOUT_MS = 30_000  # close() with no timeout_ms (Java's default close timeout)

Records = dict[TopicPartition, list[ConsumerRecord]]


# kafka-python's three member states, from groupclient's four
_KAFKA_PYTHON_STATE = {
    MemberPhase.UNJOINED: MemberState.UNJOINED, MemberPhase.PREPARING_REBALANCE: MemberState.REBALANCING,
    MemberPhase.COMPLETING_REBALANCE: MemberState.REBALANCING, MemberPhase.STABLE: MemberState.STABLE,
}


class GroupMetadata(ConsumerGroupMetadata):  # type: ignore[misc]  # kafka-python's namedtuple is untyped
    """kafka-python's ConsumerGroupMetadata (``state`` is kafka-python's MemberState:
    '<unjoined>', '<rebalancing>' or '<stable>'), plus ``phase``: groupclient's finer member
    state (unjoined, preparing-rebalance, completing-rebalance, stable)."""

    phase: str = "unjoined"


class GroupConsumer(GroupPolling, ClusterQueries, PositionControl):
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

    ``clock``, ``io`` and ``rng`` are for tests (the simulator of groupclient.testing).

    {settings}
    """

    DEFAULT_CONFIG = default_config()
    def __init__(self, *topics: str, clock: Clock | None = None, io: IOBackend | None = None,
                 rng: random.Random | None = None, **configs: Unpack[ConsumerSettings]) -> None:
        """``clock``, ``io`` and ``rng`` are for tests: the simulator in :mod:`groupclient.testing`
        passes its clock, its in-memory network and a seeded random source (every random draw of
        the consumer comes from it); everything else is kafka-python's configs."""
        self.config = build_config(configs)
        cfg = self.config
        security = security_from_config(cfg)  # before anything starts: a bad setting raises here
        try:
            bootstrap = parse_bootstrap(cfg["bootstrap_servers"])
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        self._interceptors = InterceptorChain(cfg["interceptors"])
        self._clock = clock or SystemClock()
        self._subscription = SubscriptionState(cfg["auto_offset_reset"])
        self._observers = ConsumerObservers(cfg, self._clock, self._subscription.lags_by_partition,
                                            self._subscription.assigned)
        self._metrics = self._observers.metrics
        self._ownership = ThreadOwnership()
        self._closed = False
        self._rng = rng or random.Random()
        self._client = NetworkClient(NetworkConfig(
            bootstrap, cfg["client_id"], cfg["request_timeout_ms"], cfg["reconnect_backoff_ms"],
            cfg["reconnect_backoff_max_ms"], cfg["max_in_flight_requests_per_connection"],
            cfg["metadata_max_age_ms"], cfg["allow_auto_create_topics"], cfg["retry_backoff_ms"],
            security), self._clock, self._rng, io=io,
            observer=self._observers.request_observer(), io_observer=self._observers.io_observer())
        self._events = RebalanceRecorder(self._event_callbacks(cfg["rebalance_event_callback"]))
        self._listener_calls = ListenerCalls(observer=self._events.listener_called)
        self._fetcher = Fetcher(self._client, self._subscription, FetchConfig(
            cfg["fetch_min_bytes"], cfg["fetch_max_wait_ms"], cfg["fetch_max_bytes"],
            cfg["max_partition_fetch_bytes"], 1 if cfg["isolation_level"] == "read_committed" else 0,
            cfg["check_crcs"], cfg["key_deserializer"], cfg["value_deserializer"]))
        self._member: AnyMember | None = None
        self._reconciler: Reconciler | None = None
        self._join: GroupJoin | None = None
        self._hooks: ConsumerGroupHooks | None = None
        self._committer: OffsetCommitter | None = None
        self._heartbeat_thread: HeartbeatThread | None = None
        if cfg["group_id"] is not None:
            self._build_group(cfg)
        self._iterator: Iterator[ConsumerRecord] | None = None
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

    def _event_callbacks(self, configured: Callable[[RebalanceEvent], Any] | None) -> list[Callable[[RebalanceEvent], Any]]:
        callbacks = self._observers.rebalance_callbacks()
        if configured is not None:
            callbacks.append(configured)
        return callbacks

    def _build_group(self, cfg: dict[str, Any]) -> None:
        """The member side and the consumer's part of it, each given what it works with."""
        if cfg["group_protocol"] == "consumer":
            return self._build_consumer_group(cfg)
        assignors = resolve_assignors(cfg["partition_assignment_strategy"])
        protocol = common_protocol(assignors)
        drop_fetched = self._drop_fetched
        group = GroupConfig(cfg["group_id"], cfg["group_instance_id"], cfg["session_timeout_ms"],
                            cfg["max_poll_interval_ms"], cfg["heartbeat_interval_ms"], cfg["retry_backoff_ms"],
                            cfg["request_timeout_ms"])
        self._member = GroupMember(
            self._client, self._clock, group, CoordinatorLookup(self._client, group.group_id, group.retry_backoff_ms),
            AssignedPartitions(self._subscription, drop_fetched, group.group_id),
            keeps_partitions_while_rejoining=protocol is RebalanceProtocol.COOPERATIVE)
        self._committer = OffsetCommitter(
            self._member, self._subscription, cfg["enable_auto_commit"], cfg["auto_commit_interval_ms"],
            on_commit=self._interceptors.on_commit if self._interceptors else None,
            on_done=self._observers.commit_observer())
        self._hooks = ConsumerGroupHooks(self._member, self._committer, self._subscription, assignors, protocol,
                                         self._listener_calls, self._events, drop_fetched, cfg["client_rack"])
        self._join = GroupJoin(self._member, self._hooks)

    def _build_consumer_group(self, cfg: dict[str, Any]) -> None:
        """KIP-848: the broker assigns; no join, no assignors, no leader (see reconciler.py)."""
        group = GroupConfig(cfg["group_id"], cfg["group_instance_id"], cfg["session_timeout_ms"],
                            cfg["max_poll_interval_ms"], cfg["heartbeat_interval_ms"], cfg["retry_backoff_ms"],
                            cfg["request_timeout_ms"])
        member = ConsumerGroupMember(
            self._client, self._clock, group, CoordinatorLookup(self._client, group.group_id, group.retry_backoff_ms),
            AssignedPartitions(self._subscription, self._drop_fetched, group.group_id), new_member_id(self._rng),
            server_assignor=cfg["group_remote_assignor"], rack_id=cfg["client_rack"], rng=self._rng)
        self._member = member
        self._committer = OffsetCommitter(
            member, self._subscription, cfg["enable_auto_commit"], cfg["auto_commit_interval_ms"],
            on_commit=self._interceptors.on_commit if self._interceptors else None,
            on_done=self._observers.commit_observer())
        self._reconciler = Reconciler(member, self._committer, self._subscription, self._client,
                                      self._listener_calls, self._events, self._drop_fetched)

    def _drop_fetched(self) -> None:
        self._fetcher.drop_buffered(set())

    # -- subscription --------------------------------------------------------------------
    def subscribe(self, topics: Iterable[str] | str = (), pattern: str | None = None, listener: Any = None) -> None:
        """Subscribe to topics or a regex pattern.  With a group_id the group assigns the
        partitions; without one the consumer takes every partition of them (kafka-python's
        group-less consumption: nothing is committed)."""
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
            try:
                compiled = re.compile(pattern) if pattern is not None else None
            except re.error as exc:
                raise ConfigurationError(f"bad topic pattern {pattern!r}: {exc}") from None
            consumer_protocol = isinstance(self._member, ConsumerGroupMember)
            # the consumer protocol's broker evaluates a pattern: refused now if it cannot
            regex = broker_regex(pattern) if consumer_protocol and pattern is not None else None
            before = set(self._subscription.topics)
            self._subscription.subscribe(set(names), compiled)
            self._listener_calls.listener = listener
            self._client.set_topics(None if compiled is not None else set(names))
            if isinstance(self._member, ConsumerGroupMember):
                subscribed = Subscribed(() if regex is not None else tuple(sorted(names)), regex)
                self._member.subscribe(subscribed, f"subscribed to {regex or sorted(names)}")
            elif self._member is not None and self._subscription.topics != before:
                # also while a JoinGroup is under way: that join carries the old subscription
                self._member.request_rejoin(f"subscription changed to {sorted(self._subscription.topics)}")

    def subscription(self) -> set[str] | None:
        """The topics subscribed to (a pattern's matches so far), or None when not subscribed."""
        with self._ownership.acquired():
            return set(self._subscription.topics) if self._subscription.is_group_subscribed() else None

    def unsubscribe(self) -> None:
        """Give up the subscription or the assignment; a member leaves its group (listener first)."""
        with self._ownership.acquired():
            self._ensure_open()
            self._leave_group("the consumer unsubscribed")
            if isinstance(self._member, ConsumerGroupMember):
                self._member.subscribe(None, "unsubscribed")
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
    def poll(self, timeout_ms: int = 0, max_records: int | None = None, update_offsets: bool = True) -> Records:
        """Records per partition, at most ``max_records`` (default max_poll_records)."""
        records: Records = self._poll(timeout_ms, max_records, update_offsets, columnar=False)
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
        if self._member is not None:
            self._member.poll_heartbeat(self._clock.monotonic_ms())

    def _poll_undelivered(self, timeout_ms: int, max_records: int) -> tuple[Records, dict[TopicPartition, DeliveryTag]]:
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
            if self._member is not None and self._member.heartbeat_enabled():
                wait = min(wait, self._member.time_to_next_heartbeat(self._clock.monotonic_ms()) + 1)
            self._client.poll_until(None, Timer(self._clock, wait))
            if timer.expired():
                self._raise_pending()
                return {}

    def _raise_pending(self) -> None:
        """What the application must hear now: a listener's exception (once), and a fatal error
        (every time: the group refused the member for good, or groupclient failed)."""
        self._listener_calls.raise_pending()
        member = self._member
        # a consumer-protocol refusal is raised once, as Java's; the classic one every time
        group_error = (member.take_error() if isinstance(member, ConsumerGroupMember)
                       else member.fatal_error if member is not None else None)
        for error in (group_error, self._fetcher.fatal_error):
            if error is not None:
                raise error

    def __iter__(self) -> GroupConsumer:
        return self

    def __next__(self) -> ConsumerRecord:
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

    # -- offsets -------------------------------------------------------------------------
    def _group(self) -> OffsetCommitter:
        if self._committer is None:
            raise IllegalStateError("committing offsets needs a group_id")
        return self._committer

    def commit(self, offsets: dict[TopicPartition, OffsetAndMetadata] | None = None, timeout_ms: int | None = None) -> None:
        """Commit ``offsets`` (default: what was returned to the application) and wait for the
        answer, retrying what can be retried within ``timeout_ms`` (None: no limit)."""
        with self._ownership.acquired():
            self._ensure_open()
            group = self._group()
            if offsets is None:
                self._check_still_member()
                offsets = self._subscription.consumed_offsets()
            else:
                offsets = _as_offsets(offsets)
            group.commit_sync(offsets, Timer(self._clock, timeout_ms))
            group.invoke_completed_commit_callbacks()

    def _check_still_member(self) -> None:
        """A commit of "what was consumed" after the partitions were taken away outside a
        rebalance (poll timeout, lost lease) cannot succeed: say so, as Kafka does."""
        if self._subscription.is_group_subscribed() and self._subscription.has_lost():
            raise CommitFailedError(
                "the consumer is no longer part of the group: poll() was not called within "
                "max_poll_interval_ms, or the coordinator could not be reached within the session "
                "timeout; its partitions may belong to another member now and will be consumed again "
                "from the last committed offset")

    def commit_async(self, offsets: dict[TopicPartition, OffsetAndMetadata] | None = None,
                     callback: CommitCallback | None = None) -> KafkaFuture:
        """Send a commit and return kafka-python's ``kafka.future.Future`` for it (``is_done`` an
        attribute, ``add_callback``...).  The future is completed, and ``callback(offsets,
        error_or_None)`` called, on this thread, by a later ``poll()``, ``commit()`` or ``close()``
        (as Java runs commit callbacks): no user code runs on the heartbeat thread."""
        with self._ownership.acquired():
            self._ensure_open()
            group = self._group()
            offsets = self._subscription.consumed_offsets() if offsets is None else _as_offsets(offsets)
            future = group.commit_async(offsets, callback or self.config["default_offset_commit_callback"])
            # send it now; a pending wakeup() is for the next blocking call, not for this one
            self._client.poll_until(None, Timer(self._clock, 0), wakeup=False)
            return future

    def committed(self, partition: TopicPartition, metadata: bool = False,
                  timeout_ms: int | None = None) -> int | OffsetAndMetadata | None:
        """The group's committed offset; waits at most ``timeout_ms`` (None: request_timeout_ms),
        then KafkaTimeoutError."""
        partition = check_partition(partition)
        with self._ownership.acquired():
            self._ensure_open()
            group = self._group()
            found = group.fetch_committed({partition}, self._default_timer(timeout_ms)).get(partition)
            if found is None:
                return None
            return found if metadata else found.offset

    # -- group ---------------------------------------------------------------------------
    def enforce_rebalance(self, reason: str = "the application asked for a rebalance") -> None:
        """Rejoin the group at the next poll(), with ``reason`` (the JoinGroup carries it)."""
        with self._ownership.acquired():
            if self._member is None or not self._subscription.is_group_subscribed():
                raise IllegalStateError("enforce_rebalance() needs a group subscription")
            if isinstance(self._member, ConsumerGroupMember):
                # as Java's: the broker decides every assignment under the consumer protocol
                log.warning("enforce_rebalance() does nothing under group_protocol='consumer': the broker "
                            "assigns the partitions and rebalances when the group changes")
                return
            self._member.request_rejoin(reason)

    def group_metadata(self) -> GroupMetadata:
        """The member's group id, generation, member id, instance id and state, as kafka-python's
        ConsumerGroupMetadata (plus ``.phase``).  Without a group_id: group_id None, unjoined.
        Safe to call from any thread."""
        if self._member is None:
            return GroupMetadata(None, -1, "", None, MemberState.UNJOINED)
        generation, state = self._member.generation_and_state()
        metadata = GroupMetadata(self.config["group_id"], generation.generation_id, generation.member_id,
                                 self.config["group_instance_id"], _KAFKA_PYTHON_STATE[state])
        metadata.phase = self._member.phase_name()
        return metadata

    def add_rebalance_event_callback(self, callback: Callable[[RebalanceEvent], Any]) -> None:
        """Also call ``callback`` with every rebalance's :class:`RebalanceEvent` (on the thread
        running poll(); an exception is logged).  Same as the rebalance_event_callback config."""
        if self._member is None:
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
        member = self._member
        if member is None or not self._subscription.is_group_subscribed():
            return
        owned = self._subscription.assigned() | self._subscription.take_lost()
        self._subscription.fence(owned)
        if owned:
            # not stable: the group may have moved on without this member, so it must not commit
            stable = member.generation_if_stable() is not None
            self._listener_calls.call("on_partitions_revoked" if stable else "on_partitions_lost", owned)
        self._subscription.set_group_assignment(set())
        future = member.maybe_leave_group(reason)
        if future is not None:
            self._client.poll_until(future, timer or Timer(self._clock, self.config["request_timeout_ms"]), wakeup=False)
            if future.failed():  # the member is gone either way (Java logs it too)
                log.warning("group %s: LeaveGroup failed: %s", self.config["group_id"], future.exception)

    def close(self, autocommit: bool = True, timeout_ms: int | None = None) -> None:
        """Commit (with ``autocommit`` and enable_auto_commit), finish the async commits, leave the
        group and close the connections, all within ``timeout_ms`` (default 30 s, Java's): then it
        returns, whatever is still missing (each step that cannot finish is logged at WARNING)."""
        with self._ownership.acquired():
            if self._closed:
                return
            budget = timeout_ms if timeout_ms is not None else CLOSE_TIMEOUT_MS
            timer = Timer(self._clock, budget)
            try:
                group = self._committer
                # commit while the heartbeat thread still keeps the member in the group, all that
                # was handed out: nothing more is from now (groupclient.aio's buffer)
                self._subscription.fence(self._subscription.assigned())
                offsets = self._subscription.consumed_offsets()
                if autocommit and group is not None and self.config["enable_auto_commit"] and offsets:
                    try:
                        group.commit_sync(offsets, timer, warn_waiting="close(timeout_ms=%d)" % budget)
                    except Exception as exc:
                        log.warning("close(): the auto-commit failed: %s", exc)
                if group is not None:
                    # async commits still on their way are answered before the member leaves
                    for future in group.in_flight_commits():
                        self._client.poll_until(future, timer, wakeup=False)
                    group.invoke_completed_commit_callbacks()
                if self._heartbeat_thread is not None:
                    self._heartbeat_thread.shutdown(min(5.0, timer.remaining_ms() / 1000))
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
        elif self._member is None:
            state = "no group"
        else:
            generation, _ = self._member.generation_and_state()
            member = generation.member_id or "-"
            counter = "epoch" if isinstance(self._member, ConsumerGroupMember) else "generation"
            state = (f"group={cfg['group_id']!r} member={member!r} {counter}={generation.generation_id} "
                     f"{self._member.phase_name()}")
        if cfg["group_instance_id"] is not None and not self._closed:
            state += f" instance={cfg['group_instance_id']!r}"
        assigned = self._subscription.assigned()
        topics = sorted(self._subscription.topics) or sorted({tp.topic for tp in assigned})
        where = f", {len(assigned)} partition{'' if len(assigned) == 1 else 's'} of {topics}"
        return f"<GroupConsumer client_id={cfg['client_id']!r} {state}{where if not self._closed else ''}>"

    def __enter__(self) -> GroupConsumer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        # as kafka-python 3.0: a block left by an exception commits nothing (the records it was
        # handling may not have been processed), and the member still leaves the group
        self.close(autocommit=exc_type is None)


# the settings part of the docstring is made from their one declaration (settings.py)
GroupConsumer.__doc__ = (GroupConsumer.__doc__ or "").replace(
    "{settings}", textwrap.indent(docstring_section(), "    ").lstrip())


def _as_offsets(offsets: dict[TopicPartition, Any]) -> dict[TopicPartition, OffsetAndMetadata]:
    result = {}
    for tp, value in offsets.items():
        if isinstance(value, OffsetAndMetadata):
            result[TopicPartition(*tp)] = value
        elif isinstance(value, int):
            result[TopicPartition(*tp)] = OffsetAndMetadata(value, "", -1)
        else:
            raise ConfigurationError(f"offsets must map TopicPartition to OffsetAndMetadata or int, got {value!r}")
    return result


