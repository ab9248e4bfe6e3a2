"""``ShareConsumer``: a member of a share group (KIP-932), with the API of Java's
``KafkaShareConsumer`` in the style of ``GroupConsumer``.

The members of a share group share its partitions: the broker hands each record to one member at
a time, under an acquisition lock, and the member acknowledges it: ACCEPT (done), RELEASE (deliver
it again, to any member), REJECT (never deliver it again) or RENEW (keep it longer).  A record
whose lock runs out, or whose member leaves, goes back to the group; after
``share.delivery.count.limit`` deliveries (5 by default) the broker archives it.

One thread owns a consumer at a time (ConcurrentAccessError otherwise); ``wakeup()`` may be called
from any thread.  A background thread sends the heartbeats and never runs user code: the
deserializers and the acknowledgement commit callback run on the application thread, inside its
calls.  docs/share-groups.md has the rules, what each failure does, and how this differs from
Java's and confluent-kafka's share consumers.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any, Generic

from ..clock import Clock, SystemClock, Timer
from ..consumer.config import check_name, network_config
from ..consumer.deserializers import bind
from ..consumer.thread_ownership import ThreadOwnership
from ..errors import ArgumentTypeError, CallTimeoutError, ConfigurationError, IllegalStateError
from ..member.coordinator_lookup import CoordinatorLookup
from ..member.heartbeat_thread import HeartbeatThread
from ..member.share_member import ShareGroupMember
from ..member.types import GroupConfig
from ..network.client import NetworkClient
from ..network.io import IOBackend
from ..protocol.consumer_group_heartbeat import new_member_id
from ..protocol.share_group import AcknowledgeType, ShareAcquireMode
from ..structs import K, TopicPartition, V
from .engine import POLL_SLICE_MS, ShareEngine
from .fetcher import Chunk, ShareFetchConfig, ShareFetcher
from .in_flight import InFlight
from .records import ShareRecord
from ..consumer.settings import Unpack
from .settings import ShareConsumerSettings, build_share_config

log = logging.getLogger("groupclient.share")

CLOSE_TIMEOUT_MS = 30_000  # close() with no timeout_ms, as Java's
HEARTBEAT_INTERVAL_MS = 5_000  # Kafka's share.heartbeat.interval.ms, until the broker gives its own
ShareRecords = dict[TopicPartition, list[ShareRecord[K, V]]]


class ShareConsumer(Generic[K, V]):
    """A member of a share group: records handed out one member at a time, acknowledged one by one.

        from groupclient import AcknowledgeType, ShareConsumer

        with ShareConsumer("jobs", bootstrap_servers="127.0.0.1:9092", group_id="workers",
                           share_acknowledgement_mode="explicit") as consumer:
            while True:
                for records in consumer.poll(timeout_ms=1000).values():
                    for record in records:
                        try:
                            handle(record.value)
                            consumer.acknowledge(record)                       # ACCEPT
                        except TemporaryFailure:
                            consumer.acknowledge(record, AcknowledgeType.RELEASE)  # again later
                        except Exception:
                            consumer.acknowledge(record, AcknowledgeType.REJECT)   # never again

    In implicit mode (the default) nothing is acknowledged by hand: each ``poll()`` and
    ``commit_sync()`` accepts the records of the last poll.  ``close()`` does not (as Java's): what
    the last poll returned goes back to the group, to be delivered again; call ``commit_sync()``
    first to accept it.

    Errors: ConfigurationError (bad settings), IllegalStateError (an acknowledgement the rules
    refuse: see ``acknowledge``), FatalError (the group refused this member for good: close),
    RecordDeserializationError (a record that could not be deserialized: it was released),
    CallTimeoutError, WakeupError.  ``commit_sync`` returns each partition's outcome:
    InvalidRecordStateError when its records were no longer this consumer's.

    ``clock``, ``io`` and ``rng`` are for tests (the simulator of groupclient.testing).

    Settings: those of GroupConsumer that a share group uses (docs/consumer.md), and
    share_acknowledgement_mode ('implicit' or 'explicit'), share_acquire_mode ('batch_optimized'
    or 'record_limit'), acknowledgement_commit_callback.  docs/share-groups.md lists them all.
    """

    def __init__(self, *topics: str, clock: Clock | None = None, io: IOBackend | None = None,
                 rng: random.Random | None = None, **configs: Unpack[ShareConsumerSettings[K, V]]) -> None:
        self.config = cfg = build_share_config(configs)
        network = network_config(cfg)  # before anything starts: a bad setting raises here
        self._clock = clock or SystemClock()
        self._rng = rng or random.Random()
        self._ownership = ThreadOwnership("ShareConsumer")
        self._closed = False
        self._explicit = cfg["share_acknowledgement_mode"] == "explicit"
        self._client = NetworkClient(network, self._clock, self._rng, io=io)
        group_id = cfg["group_id"]
        member_id = new_member_id(self._rng)
        lookup = CoordinatorLookup(self._client, group_id, cfg["retry_backoff_ms"], self._rng)
        self._member = ShareGroupMember(
            self._client, self._clock, GroupConfig(group_id, None, 45_000, cfg["max_poll_interval_ms"],
                                                   HEARTBEAT_INTERVAL_MS, cfg["retry_backoff_ms"],
                                                   cfg["request_timeout_ms"]),
            lookup, member_id, cfg["client_rack"], self._rng)
        kd, vd = cfg["key_deserializer"], cfg["value_deserializer"]
        acquire = (ShareAcquireMode.RECORD_LIMIT if cfg["share_acquire_mode"] == "record_limit"
                   else ShareAcquireMode.BATCH_OPTIMIZED)
        self._fetcher = ShareFetcher(self._client, ShareFetchConfig(
            group_id, member_id, cfg["fetch_max_wait_ms"], cfg["fetch_min_bytes"], cfg["fetch_max_bytes"],
            cfg["max_poll_records"], int(acquire), cfg["check_crcs"],
            lambda topic: bind("key_deserializer", kd, topic), lambda topic: bind("value_deserializer", vd, topic)))
        self._in_flight = InFlight(self._explicit)
        self._engine = ShareEngine(self._client, self._clock, self._member, self._fetcher, self._in_flight,
                                   cfg["acknowledgement_commit_callback"])
        self._engine.poll_records = cfg["max_poll_records"]
        self._heartbeat: HeartbeatThread | None = None
        self._topics: frozenset[str] = frozenset()
        self._iterator: Iterator[ShareRecord[K, V]] | None = None
        try:
            self._client.bootstrap(cfg["bootstrap_timeout_ms"])
        except BaseException:
            self._client.close()
            raise
        if topics:
            self.subscribe(list(topics))

    def __repr__(self) -> str:
        return (f"<ShareConsumer group={self.config['group_id']!r} member={self._member.member_id!r} "
                f"state={self._member.member_state().value} topics={sorted(self._topics)}>")

    # -- subscription -----------------------------------------------------------------------
    def subscribe(self, topics: Iterable[str] | str = (), pattern: str | None = None) -> None:
        """Subscribe to these topics (replacing the subscription; none: unsubscribe).  A share
        group takes topic names only: a ``pattern`` is refused."""
        if pattern is not None:
            raise ConfigurationError("share groups subscribe to topic names only: ShareGroupHeartbeat has no "
                                     "pattern (KIP-932); list the topics instead")
        if isinstance(topics, str):
            names = [topics]
        elif isinstance(topics, Iterable):
            names = list(topics)
        else:
            raise ArgumentTypeError(f"topics must be a topic name or a list of them, not {topics!r}")
        for name in names:
            check_name("topic name", name)
        with self._ownership.acquired():
            self._ensure_open()
            if not names:
                self._unsubscribe()
                return
            self._topics = frozenset(names)
            self._client.set_topics(set(names))
            self._member.subscribe(self._topics)

    def subscription(self) -> set[str]:
        """The topics subscribed to (empty when not subscribed)."""
        with self._ownership.acquired():
            return set(self._topics)

    def unsubscribe(self) -> None:
        """Leave the group.  Records fetched but not handed out yet are released at once; those of
        the last poll are not acknowledged (acknowledge or commit first): they go back to the
        group when their locks run out, or when the consumer closes."""
        with self._ownership.acquired():
            self._ensure_open()
            self._unsubscribe()

    def _unsubscribe(self) -> None:
        self._release_buffered()
        self._topics = frozenset()
        self._client.set_topics(set())
        leave = self._member.leave("the consumer unsubscribed")
        if leave is not None:
            self._client.poll_until(leave, Timer(self._clock, self.config["default_api_timeout_ms"]))

    def _release_buffered(self) -> None:
        """Release the records fetched and not handed out (they would wait for their locks)."""
        for tp, (node, tip, offsets) in self._fetcher.drop_buffer().items():
            tip = tip or self._engine.tips.get(tp)
            if tip is not None:
                self._fetcher.queue_acks(node, {tp: (tip, dict.fromkeys(offsets, int(AcknowledgeType.RELEASE)))}, 0)
        self._fetcher.send_acks()

    # -- records -------------------------------------------------------------------------------
    def poll(self, timeout_ms: float = 0, max_records: int | None = None) -> ShareRecords[K, V]:
        """Records acquired for this consumer, by partition; ``{}`` when none came within
        ``timeout_ms``.  Each has ``delivery_count`` (1 on its first delivery).

        First it settles the last poll's records: in implicit mode it accepts them; in explicit
        mode each must be acknowledged already (IllegalStateError otherwise, and nothing is
        changed: acknowledge them and poll again)."""
        limit = self._check_poll(timeout_ms, max_records)
        with self._ownership.acquired():
            self._ensure_open()
            self._client.maybe_trigger_wakeup()
            # what came since the last call first: an error it brought (a record that could not be
            # deserialized) is raised before the last poll's records are settled, so that the
            # application may still acknowledge that record by its position
            self._engine.take_answers()
            self._engine.run_callbacks()
            error = self._engine.take_error()
            if error is not None:
                raise error
            self._settle_last_poll()
            if not self._topics:
                raise IllegalStateError("Consumer is not subscribed to any topics: call subscribe() first")
            self._start_heartbeat()
            self._engine.metrics.polls += 1
            self._engine.poll_started(self._clock.monotonic_ms())
            timer = Timer(self._clock, timeout_ms)
            while True:
                self._member.poll_heartbeat(self._clock.monotonic_ms())
                self._engine.step(fetch=True)
                self._engine.run_callbacks()
                error = self._engine.take_error()
                if error is not None:
                    raise error
                renewed = self._in_flight.take_renewed()
                if renewed:
                    return renewed
                if self._fetcher.buffered():
                    records = self._hand_out(self._fetcher.take_records(limit))
                    if records:
                        self._engine.handed_out(self._clock.monotonic_ms())
                        # fetching ahead (as librdkafka's consumer, not Java's): the next records
                        # come while the application works on these (engine.step says when)
                        self._engine.step(fetch=True)
                        return records
                    continue  # the buffer held only records whose locks ran out
                if timer.expired():
                    return {}
                self._client.poll(min(timer.remaining_ms(), POLL_SLICE_MS))
                self._client.maybe_trigger_wakeup()
                self._client.raise_failures()

    def _check_poll(self, timeout_ms: float, max_records: int | None) -> int:
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float)) or timeout_ms < 0:
            raise ArgumentTypeError(f"timeout_ms must be a non-negative number, not {timeout_ms!r}")
        if max_records is None:
            return int(self.config["max_poll_records"])
        if isinstance(max_records, bool) or not isinstance(max_records, int) or max_records <= 0:
            raise ConfigurationError(f"max_records must be a positive integer, not {max_records!r}")
        return max_records

    def _settle_last_poll(self) -> None:
        """The last poll's records: accepted (implicit), or checked to be acknowledged (explicit);
        then their acknowledgements go out with what is sent next."""
        if self._explicit:
            left = self._in_flight.unacknowledged()
            if left:
                raise IllegalStateError(
                    f"All records must be acknowledged in explicit acknowledgement mode: {left} record(s) of the "
                    "last poll() are not; acknowledge() each of them (ACCEPT, RELEASE, REJECT or RENEW), then poll")
        else:
            self._in_flight.acknowledge_all(AcknowledgeType.ACCEPT)
        self._engine.send_acknowledged()

    def _hand_out(self, chunks: list[Chunk]) -> ShareRecords[K, V]:
        out: ShareRecords[K, V] = {}
        for chunk in chunks:
            self._in_flight.deliver(chunk.partition, chunk.node, chunk.records)
            out.setdefault(chunk.partition, []).extend(chunk.records)
            self._engine.metrics.records_consumed += len(chunk.records)
        return out

    def __iter__(self) -> Iterator[ShareRecord[K, V]]:
        return self

    def __next__(self) -> ShareRecord[K, V]:
        """The next record, polling as needed; StopIteration after ``consumer_timeout_ms`` without one."""
        if self._iterator is None:
            self._iterator = self._records()
        try:
            return next(self._iterator)
        except StopIteration:
            self._iterator = None
            raise

    def _records(self) -> Iterator[ShareRecord[K, V]]:
        timeout = self.config["consumer_timeout_ms"]
        deadline = None if timeout == math.inf else self._clock.monotonic_ms() + timeout
        while True:
            wait = POLL_SLICE_MS * 10 if deadline is None else max(0, deadline - self._clock.monotonic_ms())
            batch = self.poll(timeout_ms=wait)
            for records in batch.values():
                yield from records
            if batch and deadline is not None:
                deadline = self._clock.monotonic_ms() + timeout
            elif deadline is not None and self._clock.monotonic_ms() >= deadline:
                return

    # -- acknowledgements ----------------------------------------------------------------------
    def acknowledge(self, record: Any, *position: Any, type: AcknowledgeType | int | str | None = None) -> None:
        """Acknowledge one record of the last poll (explicit mode): ``acknowledge(record)``
        accepts it, ``acknowledge(record, AcknowledgeType.RELEASE)`` gives it back, REJECT drops it
        for good, RENEW keeps it longer (the next poll returns it again).  A record that could not
        be deserialized is acknowledged by position, as in Java: ``acknowledge(topic, partition,
        offset, AcknowledgeType.REJECT)``.

        IllegalStateError: implicit mode; a record the last poll did not return (or whose
        acknowledgement went already); a record acknowledged twice."""
        if isinstance(record, str):
            if len(position) not in (2, 3) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                      for v in position[:2]):
                raise ArgumentTypeError("acknowledge(topic, partition, offset[, type]) takes the record's partition "
                                        f"and offset as integers, not {position!r}")
            tp, at = TopicPartition(record, position[0]), position[1]
            given = position[2] if len(position) == 3 else type
        else:
            if len(position) > 1:
                raise ArgumentTypeError("acknowledge(record[, type]) takes a record of poll() and its type")
            try:
                tp, at = TopicPartition(record.topic, record.partition), int(record.offset)
            except AttributeError:
                raise ArgumentTypeError(f"acknowledge() takes a record of poll(), or a topic name, not {record!r}") \
                    from None
            given = position[0] if position else type
        kind = _acknowledge_type(AcknowledgeType.ACCEPT if given is None else given)
        with self._ownership.acquired():
            self._ensure_open()
            self._in_flight.acknowledge(tp, at, kind)

    def commit_sync(self, timeout_ms: float | None = None) -> dict[TopicPartition, Exception | None]:
        """Send the acknowledgements made since the last poll (implicit mode: accept its records
        first) and wait for the broker's answers: per partition None, or the error (an
        InvalidRecordStateError: the records were no longer this consumer's).  ``{}`` when there
        was nothing to send.  CallTimeoutError after ``timeout_ms`` (default_api_timeout_ms)."""
        wait = self.config["default_api_timeout_ms"] if timeout_ms is None else timeout_ms
        if isinstance(wait, bool) or not isinstance(wait, (int, float)) or wait < 0:
            raise ArgumentTypeError(f"timeout_ms must be a non-negative number, not {timeout_ms!r}")
        with self._ownership.acquired():
            self._ensure_open()
            self._engine.run_callbacks()
            if not self._explicit:
                self._in_flight.acknowledge_all(AcknowledgeType.ACCEPT)
            sent = self._engine.send_acknowledged(wait=True)
            if sent is None:
                return {}
            ticket, partitions = sent
            self._engine.metrics.commits += 1
            results = self._engine.wait_for(ticket, partitions, Timer(self._clock, wait),
                                            self._client.maybe_trigger_wakeup)
            self._engine.run_callbacks()
            if results is None:
                raise CallTimeoutError(operation=f"commit_sync of {len(partitions)} partition(s)'s acknowledgements",
                                       timeout_ms=int(wait), tries=1, last_errors={
                                           f"{tp.topic}-{tp.partition}": "no answer" for tp in partitions})
            return dict(results)

    def commit_async(self) -> None:
        """Send the acknowledgements made since the last poll (implicit mode: accept its records
        first) without waiting: the acknowledgement commit callback gets the outcomes."""
        with self._ownership.acquired():
            self._ensure_open()
            self._engine.run_callbacks()
            if not self._explicit:
                self._in_flight.acknowledge_all(AcknowledgeType.ACCEPT)
            if self._engine.send_acknowledged() is not None:
                self._engine.metrics.commits += 1
                self._engine.step(fetch=False)

    def acquisition_lock_timeout_ms(self) -> int | None:
        """How long the broker holds a record for this consumer (its acquisition lock), as its last
        answer said; None before any."""
        with self._ownership.acquired():
            self._ensure_open()
            return self._fetcher.acquisition_lock_timeout_ms

    # -- the rest ------------------------------------------------------------------------------
    def wakeup(self) -> None:
        """Make the current or next blocking call raise WakeupError (any thread)."""
        self._client.wakeup()

    def metrics(self) -> dict[str, float]:
        """Counters: records consumed, polls, acknowledgements sent (and by type), their errors."""
        return self._engine.metrics.as_dict()

    @property
    def member_id(self) -> str:
        """This consumer's member id in the share group (its own, for its lifetime)."""
        return self._member.member_id

    def _ensure_open(self) -> None:
        if self._closed:
            raise IllegalStateError("This consumer has already been closed.")
        if self._engine.in_callback:
            raise IllegalStateError("ShareConsumer methods are not accessible from the acknowledgement commit "
                                    "callback: it runs inside poll(), the commits and close()")

    def _start_heartbeat(self) -> None:
        if self._heartbeat is None:
            self._heartbeat = HeartbeatThread(self._member, lambda: None)
            self._heartbeat.start()

    def close(self, timeout_ms: float | None = None) -> None:
        """Send the acknowledgements already made (not an implicit accept: the last poll's records
        go back to the group, as in Java; commit first to accept them), close the share sessions,
        leave the group, and stop; within ``timeout_ms`` (30 s).  A second close does nothing."""
        wait = CLOSE_TIMEOUT_MS if timeout_ms is None else timeout_ms
        if isinstance(wait, bool) or not isinstance(wait, (int, float)) or wait < 0:
            raise ArgumentTypeError(f"timeout_ms must be a non-negative number, not {timeout_ms!r}")
        with self._ownership.acquired():
            if self._closed:
                return
            self._closed = True
            timer = Timer(self._clock, wait)
            try:
                self._close_sessions(timer)
                leave = self._member.leave("the consumer is closing")
                if leave is not None:
                    self._client.poll_until(leave, timer, wakeup=False)
                self._engine.take_answers()
                self._engine.run_callbacks()
            finally:
                if self._heartbeat is not None:
                    self._heartbeat.shutdown(min(5.0, max(timer.remaining_ms(), 1) / 1000))
                self._client.close()

    def _close_sessions(self, timer: Timer) -> None:
        """Wait (within ``timer``) for the requests on their way, then close each session with the
        acknowledgements made (ShareAcknowledge, epoch -1)."""
        while self._fetcher.in_flight() and not timer.expired():
            self._client.poll(min(timer.remaining_ms(), POLL_SLICE_MS))
            self._engine.take_answers()
        self._fetcher.drop_buffer()  # released when the session closes
        self._engine.send_acknowledged()
        by_node = {node: (self._fetcher.pending.pop(node), 0) for node in list(self._fetcher.pending)}
        futures = self._fetcher.close_sessions(by_node)
        for future in futures:
            self._client.poll_until(future, timer, wakeup=False)

    def __enter__(self) -> ShareConsumer[K, V]:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _acknowledge_type(value: AcknowledgeType | int | str) -> AcknowledgeType:
    try:
        kind = AcknowledgeType[value.upper()] if isinstance(value, str) else AcknowledgeType(value)
    except (KeyError, ValueError):
        kind = None
    if kind is None or kind is AcknowledgeType.GAP:
        raise ArgumentTypeError(f"type must be AcknowledgeType.ACCEPT, RELEASE, REJECT or RENEW, not {value!r}")
    return kind
