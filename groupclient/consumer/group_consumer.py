"""``GroupConsumer``: kafka-python's ``KafkaConsumer`` group API on groupclient's own internals.

Change ``from kafka import KafkaConsumer`` to ``from groupclient import GroupConsumer as
KafkaConsumer`` and group consumption works the same: same constructor, config names, defaults
and methods.  One thread owns a consumer at a time (``ConcurrentAccessError`` otherwise);
``wakeup()`` is the one method other threads may call.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any

from kafka.consumer.fetcher import ConsumerRecord
from kafka.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

from ..assignors.base import RebalanceProtocol
from ..assignors.registry import resolve_assignors
from ..clock import Clock, SystemClock, Timer
from ..errors import CommitFailedError, ConfigurationError, IllegalStateError, KafkaTimeoutError
from .consumer_membership import CommitCallback, ConsumerMembership
from ..member.heartbeat_thread import HeartbeatThread
from ..member.membership import GroupMembership
from ..member.types import GroupConfig
from ..network.client import NetworkClient, NetworkConfig, parse_bootstrap
from ..network.future import RequestFuture
from ..network.io import IOBackend
from .config import build_config
from .fetcher import EARLIEST, LATEST, FetchConfig, Fetcher
from .listener import ListenerCalls
from .ownership import ThreadOwnership
from .subscription import SubscriptionState, SubscriptionType

log = logging.getLogger("groupclient.consumer")

Records = dict[TopicPartition, list[ConsumerRecord]]


class GroupMetadata(ConsumerGroupMetadata):  # type: ignore[misc]  # kafka-python's namedtuple is untyped
    """kafka-python's ConsumerGroupMetadata, with the member's state as ``.state``."""

    state: str = "unjoined"


class GroupConsumer:
    def __init__(self, *topics: str, clock: Clock | None = None, io: IOBackend | None = None,
                 **configs: Any) -> None:
        """``clock`` and ``io`` are for tests: the simulator in :mod:`groupclient.testing` passes
        its clock and its in-memory network; everything else is kafka-python's configs."""
        self.config = build_config(configs)
        cfg = self.config
        try:
            bootstrap = parse_bootstrap(cfg["bootstrap_servers"])
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        self._clock = clock or SystemClock()
        self._ownership = ThreadOwnership()
        self._closed = False
        self._client = NetworkClient(NetworkConfig(
            bootstrap, cfg["client_id"], cfg["request_timeout_ms"], cfg["reconnect_backoff_ms"],
            cfg["reconnect_backoff_max_ms"], cfg["max_in_flight_requests_per_connection"],
            cfg["metadata_max_age_ms"], cfg["allow_auto_create_topics"], cfg["retry_backoff_ms"]), self._clock, io=io)
        self._subscription = SubscriptionState(cfg["auto_offset_reset"])
        self._listener_calls = ListenerCalls()
        self._fetcher = Fetcher(self._client, self._subscription, FetchConfig(
            cfg["fetch_min_bytes"], cfg["fetch_max_wait_ms"], cfg["fetch_max_bytes"],
            cfg["max_partition_fetch_bytes"], 1 if cfg["isolation_level"] == "read_committed" else 0,
            cfg["check_crcs"], cfg["key_deserializer"], cfg["value_deserializer"]))
        self._consumer_membership: ConsumerMembership | None = None
        self._membership: GroupMembership | None = None
        self._heartbeat_thread: HeartbeatThread | None = None
        if cfg["group_id"] is not None:
            self._consumer_membership = ConsumerMembership(
                self._subscription, resolve_assignors(cfg["partition_assignment_strategy"]), self._listener_calls,
                cfg["enable_auto_commit"], cfg["auto_commit_interval_ms"], cfg["client_rack"])
            self._membership = GroupMembership(self._client, self._clock, GroupConfig(
                cfg["group_id"], cfg["group_instance_id"], cfg["session_timeout_ms"], cfg["max_poll_interval_ms"],
                cfg["heartbeat_interval_ms"], cfg["retry_backoff_ms"], cfg["request_timeout_ms"]), self._consumer_membership)
            self._consumer_membership.membership = self._membership
            self._membership.keeps_partitions_while_rejoining = \
                self._consumer_membership.protocol is RebalanceProtocol.COOPERATIVE
            self._consumer_membership.drop_fetched = lambda: self._fetcher.drop_buffered(set())
        self._iterator: Iterator[ConsumerRecord] | None = None
        if topics:
            self.subscribe(list(topics))

    # -- subscription --------------------------------------------------------------------
    def subscribe(self, topics: Iterable[str] | str = (), pattern: str | None = None, listener: Any = None) -> None:
        with self._ownership.acquired():
            self._ensure_open()
            if self._consumer_membership is None:
                raise IllegalStateError("subscribe() needs a group_id; use assign() without one")
            names = [topics] if isinstance(topics, str) else list(topics)
            if bool(names) == bool(pattern):
                raise ConfigurationError("subscribe() takes topics or a pattern, exactly one of them")
            if any(not isinstance(t, str) or not t for t in names):
                raise ConfigurationError(f"topic names must be non-empty strings: {names!r}")
            try:
                compiled = re.compile(pattern) if pattern is not None else None
            except re.error as exc:
                raise ConfigurationError(f"bad topic pattern {pattern!r}: {exc}") from None
            before = set(self._subscription.topics)
            self._subscription.subscribe(set(names), compiled)
            self._listener_calls.listener = listener
            self._client.set_topics(None if compiled is not None else set(names))
            assert self._membership is not None
            if self._subscription.topics != before:
                # also while a JoinGroup is under way: that join carries the old subscription
                self._membership.request_rejoin(f"subscription changed to {sorted(self._subscription.topics)}")

    def subscription(self) -> set[str] | None:
        with self._ownership.acquired():
            return set(self._subscription.topics) if self._subscription.is_group_subscribed() else None

    def unsubscribe(self) -> None:
        with self._ownership.acquired():
            self._ensure_open()
            self._leave_group("the consumer unsubscribed")
            self._subscription.unsubscribe()
            self._fetcher.drop_buffered(set())
            self._client.set_topics(set())

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        with self._ownership.acquired():
            self._ensure_open()
            wanted = set(partitions)
            if not all(isinstance(tp, tuple) and len(tp) == 2 for tp in wanted):
                raise ConfigurationError("assign() takes TopicPartition values")
            self._subscription.assign_from_user({TopicPartition(*tp) for tp in wanted})
            self._fetcher.drop_buffered(wanted)
            self._client.set_topics({tp.topic for tp in wanted})

    def assignment(self) -> set[TopicPartition]:
        """The partitions this consumer owns now.  Safe to call from any thread."""
        return self._subscription.assigned()

    # -- polling -------------------------------------------------------------------------
    def poll(self, timeout_ms: int = 0, max_records: int | None = None, update_offsets: bool = True) -> Records:
        """Records per partition, at most ``max_records`` (default max_poll_records)."""
        with self._ownership.acquired():
            self._ensure_open()
            if self._subscription.type is SubscriptionType.NONE:
                raise IllegalStateError("the consumer is not subscribed to any topic nor assigned any partition")
            if max_records is not None and max_records < 1:
                raise ConfigurationError("max_records must be at least 1")
            if timeout_ms < 0:
                raise ConfigurationError("timeout_ms must not be negative")
            limit = max_records or self.config["max_poll_records"]
            return self._poll_records(Timer(self._clock, timeout_ms), limit, update_offsets)

    def _poll_records(self, timer: Timer, limit: int, delivered: bool) -> Records:
        while True:
            self._raise_pending()
            ready = self._poll_group(timer)
            if ready and self._positions_known_in_time(timer):
                records = self._fetcher.fetched_records(limit, delivered)
                self._fetcher.send_fetches()
                if records:
                    self._raise_pending()
                    return records
            # wait for network events: a fetch answer comes within fetch_max_wait_ms, and
            # wakeup() or another thread's send interrupts the wait at once
            wait = min(timer.remaining_ms(), self.config["fetch_max_wait_ms"] + 100, 1000)
            if self._membership is not None and self._membership.heartbeat_enabled():
                wait = min(wait, self._membership.time_to_next_heartbeat(self._clock.monotonic_ms()) + 1)
            self._client.poll_until(None, Timer(self._clock, wait))
            if timer.expired():
                self._raise_pending()
                return {}

    def _raise_pending(self) -> None:
        self._listener_calls.raise_pending()
        if self._membership is not None:
            error = self._membership.fatal_error
            if error is not None:
                raise error

    def _poll_group(self, timer: Timer) -> bool:
        """Metadata, group membership, auto-commit; True when partitions can be fetched."""
        self._client.maybe_update_metadata()
        group, membership = self._consumer_membership, self._membership
        if group is not None:
            group.invoke_completed_commit_callbacks()
        if group is None or membership is None or not self._subscription.is_group_subscribed():
            if group is not None:
                group.maybe_auto_commit(self._clock.monotonic_ms())
            return True
        now = self._clock.monotonic_ms()
        # every turn of the poll loop counts as polling (Java's pollHeartbeat), so one long
        # poll() on an idle topic never looks like an application that stopped polling
        membership.poll_heartbeat(now)
        # a member that was frozen past its lease lets go before it hands out another record
        membership.check_lease(now)
        if self._subscription.pattern is not None and self._client.metadata.version:
            if self._subscription.match_pattern(self._client.metadata.topics()):
                membership.request_rejoin(f"the pattern now matches {sorted(self._subscription.topics)}")
        if not self._wait_for_topic_metadata(timer):
            return False
        if group.metadata_changed_since_assignment():
            group.assigned_snapshot = None
            membership.request_rejoin("partition metadata changed since the last assignment")
        if membership.coordinator_unknown() and not membership.ensure_coordinator_ready(timer):
            # Java's ConsumerCoordinator.poll looks the coordinator up on every poll; meanwhile a
            # stable member goes on fetching what it owns (its lease, checked above, says until when)
            return membership.is_stable() and not membership.rejoin_needed_or_pending()
        # started before the first join, as Java does: a member waiting for its assignment
        # heartbeats too, and reads answers while the application is away
        self._start_heartbeat_thread()
        if membership.rejoin_needed_or_pending():
            if group.protocol is RebalanceProtocol.COOPERATIVE and self._subscription.assigned():
                # KIP-429: a cooperative member goes on consuming what it owns while the group
                # rebalances; the join advances a step per turn of the poll loop
                membership.join_group_if_needed(Timer(self._clock, 0))
            elif not membership.join_group_if_needed(timer):
                return False
        group.maybe_auto_commit(self._clock.monotonic_ms())
        membership.send_heartbeat_if_due(self._clock.monotonic_ms())
        return True

    def _wait_for_topic_metadata(self, timer: Timer) -> bool:
        """Before the first join, know the partitions of the subscribed topics (bounded by timer)."""
        metadata = self._client.metadata
        while True:
            known = metadata.topics() | set(metadata.unavailable)
            if metadata.version and (self._subscription.pattern is not None or self._subscription.topics <= known):
                return True
            future = self._client.maybe_update_metadata()
            self._client.poll_until(future, Timer(self._clock, min(timer.remaining_ms(), 100)))
            if timer.expired():
                return False

    def _start_heartbeat_thread(self) -> None:
        if self._heartbeat_thread is None and self._membership is not None:
            self._heartbeat_thread = HeartbeatThread(self._membership, self._on_poll_timeout)
            self._heartbeat_thread.start()

    def _on_poll_timeout(self) -> None:
        # runs on the heartbeat thread: drop the partitions before LeaveGroup goes out, so that no
        # other member can be assigned a partition this one still claims
        assert self._consumer_membership is not None
        self._consumer_membership.on_ownership_lost("poll() was not called within max_poll_interval_ms")

    def _positions_known_in_time(self, timer: Timer) -> bool:
        """Inside poll(), running out of time while looking up positions is not an error: the
        next poll goes on from where this one stopped."""
        try:
            self._update_fetch_positions(timer)
        except KafkaTimeoutError:
            return False
        return True

    def _update_fetch_positions(self, timer: Timer) -> None:
        missing = self._subscription.missing_positions()
        if missing:
            if self._consumer_membership is not None:
                committed = self._consumer_membership.fetch_committed(missing, timer)
                for tp in missing:
                    found = committed.get(tp)
                    if not self._subscription.is_assigned(tp):
                        continue
                    if found is not None:
                        self._subscription.seek(tp, found.offset, found.leader_epoch)
                    else:
                        self._subscription.request_reset(tp)
            else:
                for tp in missing:
                    self._subscription.request_reset(tp)
        self._fetcher.reset_positions(timer)

    def __iter__(self) -> GroupConsumer:
        return self

    def __next__(self) -> ConsumerRecord:
        """The next record; a commit (auto, on revoke, on close, or ``commit()``) covers exactly the
        records this has returned, not the rest of the batch it fetched them in."""
        timeout = self.config["consumer_timeout_ms"]
        timer = Timer(self._clock, None if timeout == float("inf") else timeout)
        while True:
            while self._iterator is not None:
                record = next(self._iterator, None)
                if record is None:
                    self._iterator = None
                elif self._subscription.mark_delivered(TopicPartition(record.topic, record.partition), record.offset):
                    return record
                # else: revoked or seeked away since it was fetched; not this consumer's to give
            batch = self.poll(timeout_ms=min(timer.remaining_ms(), 1000), update_offsets=False)
            self._iterator = iter([r for records in batch.values() for r in records])
            if not batch and timer.expired():
                raise StopIteration

    # -- positions -----------------------------------------------------------------------
    def position(self, partition: TopicPartition, timeout_ms: int | None = None) -> int:
        with self._ownership.acquired():
            self._ensure_open()
            timer = Timer(self._clock, timeout_ms)
            while (offset := self._subscription.position(partition)) is None:
                self._update_fetch_positions(timer)
                if self._subscription.position(partition) is None:
                    if timer.expired():
                        raise KafkaTimeoutError(f"no position for {partition} in time")
                    self._client.poll_until(None, Timer(self._clock, min(timer.remaining_ms(), 100)))
            return offset

    def highwater(self, partition: TopicPartition) -> int | None:
        with self._ownership.acquired():
            return self._subscription.high_watermark(partition)

    def seek(self, partition: TopicPartition, offset: int) -> None:
        with self._ownership.acquired():
            if not isinstance(offset, int) or offset < 0:
                raise ConfigurationError(f"offset must be a non-negative integer, not {offset!r}")
            self._subscription.seek(partition, offset)
            self._iterator = None  # records fetched before the seek are not the ones to return

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        self._seek_to("earliest", partitions)

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        self._seek_to("latest", partitions)

    def _seek_to(self, where: str, partitions: tuple[TopicPartition, ...]) -> None:
        with self._ownership.acquired():
            for tp in partitions or tuple(self._subscription.assigned()):
                self._subscription.request_reset(tp, where)

    def pause(self, *partitions: TopicPartition) -> None:
        with self._ownership.acquired():
            for tp in partitions:
                self._subscription.pause(tp)

    def resume(self, *partitions: TopicPartition) -> None:
        with self._ownership.acquired():
            for tp in partitions:
                self._subscription.resume(tp)

    def paused(self) -> set[TopicPartition]:
        with self._ownership.acquired():
            return self._subscription.paused()

    # -- offsets -------------------------------------------------------------------------
    def _group(self) -> ConsumerMembership:
        if self._consumer_membership is None:
            raise IllegalStateError("committing offsets needs a group_id")
        return self._consumer_membership

    def commit(self, offsets: dict[TopicPartition, OffsetAndMetadata] | None = None, timeout_ms: int | None = None) -> None:
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
                     callback: CommitCallback | None = None) -> RequestFuture[None]:
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
        with self._ownership.acquired():
            self._ensure_open()
            found = self._group().fetch_committed({partition}, Timer(self._clock, timeout_ms)).get(partition)
            if found is None:
                return None
            return found if metadata else found.offset

    def beginning_offsets(self, partitions: Iterable[TopicPartition], timeout_ms: int | None = None) -> dict[TopicPartition, int]:
        return self._offsets_at(EARLIEST, partitions, timeout_ms)

    def end_offsets(self, partitions: Iterable[TopicPartition], timeout_ms: int | None = None) -> dict[TopicPartition, int]:
        return self._offsets_at(LATEST, partitions, timeout_ms)

    def _offsets_at(self, timestamp: int, partitions: Iterable[TopicPartition], timeout_ms: int | None) -> dict[TopicPartition, int]:
        with self._ownership.acquired():
            self._ensure_open()
            wanted = list(partitions)
            timer = Timer(self._clock, timeout_ms if timeout_ms is not None else self.config["request_timeout_ms"])
            self._ensure_metadata_for({tp.topic for tp in wanted}, timer)
            return self._fetcher.list_offsets({tp: timestamp for tp in wanted}, timer)

    def _ensure_metadata_for(self, topics: set[str], timer: Timer) -> None:
        metadata = self._client.metadata
        if topics - metadata.topics():
            self._client.set_topics(None if self._subscription.pattern else
                                    self._subscription.topics | self._subscription.group_topics | topics)
        while topics - metadata.topics() - set(metadata.unavailable):
            future = self._client.maybe_update_metadata()
            self._client.poll_until(future, Timer(self._clock, min(timer.remaining_ms(), 100)))
            if timer.expired():
                raise KafkaTimeoutError(f"no metadata for {sorted(topics - metadata.topics())} in time")

    def topics(self) -> set[str]:
        with self._ownership.acquired():
            self._client.set_topics(None)
            self._ensure_metadata_for(set(), Timer(self._clock, self.config["request_timeout_ms"]))
            timer = Timer(self._clock, self.config["request_timeout_ms"])
            self._client.metadata.request_update()
            future = self._client.maybe_update_metadata()
            while future is None and not timer.expired():
                self._client.poll_until(None, Timer(self._clock, 50))
                future = self._client.maybe_update_metadata()
            self._client.poll_until(future, timer)
            return {t for t in self._client.metadata.topics() if not t.startswith("__")}

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        with self._ownership.acquired():
            try:
                self._ensure_metadata_for({topic}, Timer(self._clock, self.config["request_timeout_ms"]))
            except KafkaTimeoutError:
                return None
            return self._client.metadata.partitions_for_topic(topic)

    # -- group ---------------------------------------------------------------------------
    def enforce_rebalance(self, reason: str = "the application asked for a rebalance") -> None:
        with self._ownership.acquired():
            if self._membership is None or not self._subscription.is_group_subscribed():
                raise IllegalStateError("enforce_rebalance() needs a group subscription")
            self._membership.request_rejoin(reason)

    def group_metadata(self) -> GroupMetadata:
        """The member's group id, generation and member id, plus ``.state`` (the member's own
        state: unjoined, preparing-rebalance, completing-rebalance or stable).  Safe to call from
        any thread."""
        if self._membership is None:
            raise IllegalStateError("group_metadata() needs a group_id")
        generation, state = self._membership.generation_and_state()
        metadata = GroupMetadata(self.config["group_id"], generation.generation_id, generation.member_id,
                                 self.config["group_instance_id"])
        metadata.state = state.value
        return metadata

    def wakeup(self) -> None:
        """Thread-safe: make a blocking call in the owning thread raise WakeupError."""
        self._client.wakeup()

    # -- closing -------------------------------------------------------------------------
    def _ensure_open(self) -> None:
        if self._closed:
            raise IllegalStateError("the consumer is closed")

    def _leave_group(self, reason: str) -> None:
        membership = self._membership
        if membership is None or not self._subscription.is_group_subscribed():
            return
        owned = self._subscription.assigned() | self._subscription.take_lost()
        if owned:
            # not stable: the group may have moved on without this member, so it must not commit
            stable = membership.generation_if_stable() is not None
            self._listener_calls.call("on_partitions_revoked" if stable else "on_partitions_lost", owned)
        self._subscription.set_group_assignment(set())
        future = membership.maybe_leave_group(reason)
        if future is not None:
            self._client.poll_until(future, Timer(self._clock, self.config["request_timeout_ms"]), wakeup=False)

    def close(self, autocommit: bool = True, timeout_ms: int | None = None) -> None:
        with self._ownership.acquired():
            if self._closed:
                return
            timer = Timer(self._clock, timeout_ms if timeout_ms is not None else 30000)
            try:
                group = self._consumer_membership
                # commit while the heartbeat thread still keeps the member in the group
                if autocommit and group is not None and self.config["enable_auto_commit"]:
                    try:
                        group.commit_sync(self._subscription.consumed_offsets(), timer)
                    except Exception as exc:
                        log.warning("auto-commit on close failed: %s", exc)
                if group is not None:
                    # async commits still on their way are answered before the member leaves
                    for future in list(group.in_flight_commits):
                        self._client.poll_until(future, timer, wakeup=False)
                    group.invoke_completed_commit_callbacks()
                if self._heartbeat_thread is not None:
                    self._heartbeat_thread.shutdown()
                self._leave_group("the consumer is closing")
            finally:
                self._closed = True
                self._client.close()
            self._listener_calls.raise_pending()

    def __enter__(self) -> GroupConsumer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


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


