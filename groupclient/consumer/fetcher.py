"""Fetching records: Fetch requests to partition leaders, decoding, positions, offset resets.

Fetch answers may be read by the heartbeat thread's poll, so completed fetches sit behind this
object's own lock until the application thread drains them in ``fetched_records``.
"""

from __future__ import annotations

import logging
import threading
from bisect import bisect_left
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..structs import ConsumerRecord
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from ..structs import TopicPartition

from ..errors import InternalError, RecordDeserializationError
from ..network.transport import Transport
from ..network.future import RequestFuture
from ..protocol.apis import ApiKey
from ..protocol.error_table import Action, action_for, error_for
from ..error_codes import error_name
from .deserializers import bind
from .columns import RecordColumns, decode_columns
from .offset_lookup import OffsetLookups
from .records import decode_batches, next_offset
from .subscription import DeliveryTag, SubscriptionState

log = logging.getLogger("groupclient.consumer")

# a key_deserializer or value_deserializer as configured (see deserializers.py)
UserDeserializer = Any


@dataclass(frozen=True)
class FetchConfig:
    fetch_min_bytes: int
    fetch_max_wait_ms: int
    fetch_max_bytes: int
    max_partition_fetch_bytes: int
    isolation_level: int
    check_crcs: bool
    key_deserializer: UserDeserializer
    value_deserializer: UserDeserializer
    aiokafka_records: bool = False  # records as aiokafka makes them (groupclient.aio; records.decode_batches)


class CompletedFetch:
    """One partition's records of a Fetch answer.  Made by whichever thread read the answer, but
    decoded (and deserialized: user code) only as the application thread drains it."""

    def __init__(self, tp: TopicPartition, fetch_offset: int, data: bytes, config: FetchConfig,
                 aborted: list[tuple[int, int]] | None = None) -> None:
        """``aborted``: read_committed, the answer's aborted transactions, (producer id, first
        offset) pairs: their records are left out (transactions.py)."""
        self.tp = tp
        self.fetch_offset = fetch_offset
        self._aborted = aborted or []
        self.size = len(data)
        # where this answer ends: the next fetch of the partition starts there, and the position
        # moves there once the records are drained (past trailing transaction markers)
        self.next_offset = next_offset(data, fetch_offset)
        self._data = data
        self._config = config
        self._batches: Iterator[list[ConsumerRecord]] | None = None  # on the application thread
        # the batch being handed out, and the index of its next record
        self._batch: list[ConsumerRecord] = []
        self._index = 0
        # what stopped the decoding (a CRC mismatch, a missing codec, a deserializer's error):
        # the records before it are handed out, then it is raised (fetched_records)
        self.error: Exception | None = None
        self._error_after_batch: Exception | None = None  # once the records before it are taken
        # drained as columns instead (take_columns): all of it decoded at once, and the index of
        # the next record to hand out
        self._columns: RecordColumns | None = None
        self._column_index = 0
        self._columns_error: Exception | None = None

    def _decoder(self) -> Iterator[list[ConsumerRecord]]:
        if self._batches is None:
            tp, config = self.tp, self._config
            self._batches = decode_batches(
                self._data, self.fetch_offset, tp.topic, tp.partition,
                bind("key_deserializer", config.key_deserializer, tp.topic),
                bind("value_deserializer", config.value_deserializer, tp.topic), config.check_crcs,
                config.aiokafka_records, self._aborted)
        return self._batches

    def _next_record_ready(self) -> bool:
        """Whether a record is left; decodes the next batch when the current one is used up.  An
        error decoding it (CRC, codec, deserializer) ends the records here and is kept in
        ``error``."""
        while self._index >= len(self._batch):
            if self._error_after_batch is not None:
                self.error, self._error_after_batch = self._error_after_batch, None
            if self.error is not None:
                return False
            try:
                batch = next(self._decoder(), None)
            except RecordDeserializationError as exc:
                # the records of the batch before the one that failed still go out first
                self._batch, self._index, self._error_after_batch = exc.records_before, 0, exc
                continue
            except Exception as exc:
                self.error = exc
                self._batch, self._index = [], 0
                return False
            if batch is None:
                self._batch, self._index = [], 0
                return False
            self._batch, self._index = batch, 0
        return True

    def take(self, limit: int, start: int) -> list[ConsumerRecord]:
        """Up to ``limit`` records from offset ``start`` on (earlier ones are skipped: the
        position moved past them since the fetch)."""
        out: list[ConsumerRecord] = []
        while len(out) < limit and self._next_record_ready():
            batch, i = self._batch, self._index
            if batch[i].offset < start:  # rare: a seek into this answer; records are in order
                while i < len(batch) and batch[i].offset < start:
                    i += 1
                self._index = i
                continue
            j = min(len(batch), i + limit - len(out))
            out += batch if i == 0 and j == len(batch) else batch[i:j]
            self._index = j
        return out

    def take_columns(self, limit: int, start: int) -> list[RecordColumns]:
        """:meth:`take` as columns (columns.py): up to ``limit`` records from offset ``start`` on,
        in one part.  An answer is drained either way, not both."""
        if self._columns is None:
            if self._batches is not None:
                raise InternalError("a fetch answer was drained both as records and as columns")
            tp = self.tp
            self._columns, self._columns_error = decode_columns(self._data, self.fetch_offset, tp.topic,
                                                                tp.partition, self._config.check_crcs, self._aborted)
        columns = self._columns
        first = bisect_left(columns.offsets, start, self._column_index)  # rare: a seek into this answer
        last = min(len(columns), first + limit)
        self._column_index = last
        if last == len(columns) and self._columns_error is not None:
            # raised after the records before it, as take() does
            self.error, self._columns_error = self._columns_error, None
        return [columns.part(first, last)] if last > first else []

    def exhausted(self) -> bool:
        if self._columns is not None:
            return self._column_index >= len(self._columns)
        return not self._next_record_ready()


class Fetcher(OffsetLookups):
    """Fetch requests and their answers, decoded as the application drains them; the offset
    look-ups are :class:`OffsetLookups`'."""

    def __init__(self, client: Transport, subscription: SubscriptionState, config: FetchConfig) -> None:
        self.client = client
        self.subscription = subscription
        self.config = config
        self._lock = threading.Lock()
        self._completed: deque[CompletedFetch] = deque()
        self._in_flight_nodes: set[int] = set()
        # a partition's error the application must see (topic authorization...), raised by the
        # next fetched_records() that has no records to return, as the Java client does
        self._errors: dict[TopicPartition, BaseException] = {}
        self.drained_bytes = 0  # bytes of fetch answers fully handed out (metrics), under the lock
        self.fatal_error: InternalError | None = None  # under the lock
        # each partition's DeliveryTag as the last fetched_records() drained it (owner thread only)
        self.tags: dict[TopicPartition, DeliveryTag] = {}

    # -- fetching ------------------------------------------------------------------------
    def send_fetches(self) -> int:
        """Send a Fetch to each leader of fetchable partitions with no fetch in flight.

        Pipelined: a partition whose earlier answers are still buffered is fetched from where
        they end, while the buffer holds less than ``fetch_max_bytes`` (librdkafka's
        queued.max.messages.kbytes), so the next answer travels while the application works
        through this one.  Either thread may call this; a node is claimed under the lock."""
        metadata = self.client.metadata.snapshot  # the leaders of one answer
        with self._lock:
            first: dict[TopicPartition, int] = {}
            ahead: dict[TopicPartition, int] = {}
            for c in self._completed:
                first.setdefault(c.tp, c.fetch_offset)
                ahead[c.tp] = c.next_offset
            room = sum(c.size for c in self._completed) < self.config.fetch_max_bytes
            busy = set(self._in_flight_nodes)
        by_node: dict[int, list[tuple[TopicPartition, int]]] = {}
        for tp, position in self.subscription.fetchable():
            if tp in ahead:
                # only right behind what is buffered, and only if that is where the position is
                # heading (a seek made it stale: drained and dropped first, then fetched anew)
                if not room or not first[tp] <= position <= ahead[tp]:
                    continue
                position = ahead[tp]
            leader = metadata.leader_for(tp.topic, tp.partition)
            if leader is None:
                self.client.metadata.request_update()
                continue
            if leader not in busy:
                by_node.setdefault(leader, []).append((tp, position))
        sent = 0
        for node, partitions in by_node.items():
            if not self.client.ready(node):
                continue
            with self._lock:
                if node in self._in_flight_nodes:
                    continue  # the other thread sent one meanwhile
                self._in_flight_nodes.add(node)
            self._send_fetch(node, partitions)
            sent += 1
        return sent

    def _send_fetch(self, node: int, partitions: list[tuple[TopicPartition, int]]) -> None:
        def build(version: int) -> Any:
            return self._build(version, partitions)

        timeout = self.client.request_timeout_ms + self.config.fetch_max_wait_ms
        future = self.client.send(node, FetchRequest, FetchResponse, build, timeout_ms=timeout)
        handled: RequestFuture[None] = future.compose(lambda response, done: self._on_fetch(node, partitions,
                                                                                          response, done))
        handled.add_errback(lambda exc: self._on_fetch_failed(node, exc))

    def _build(self, version: int, partitions: list[tuple[TopicPartition, int]]) -> Any:
        cfg = self.config
        by_topic: dict[str, list[Any]] = {}
        for tp, position in partitions:
            by_topic.setdefault(tp.topic, []).append(FetchRequest.FetchTopic.FetchPartition(
                partition=tp.partition, current_leader_epoch=-1, fetch_offset=position, last_fetched_epoch=-1,
                log_start_offset=-1, partition_max_bytes=cfg.max_partition_fetch_bytes))
        return FetchRequest(
            version=version, replica_id=-1, max_wait_ms=cfg.fetch_max_wait_ms, min_bytes=cfg.fetch_min_bytes,
            max_bytes=cfg.fetch_max_bytes, isolation_level=cfg.isolation_level, session_id=0, session_epoch=-1,
            topics=[FetchRequest.FetchTopic(topic=t, partitions=p) for t, p in by_topic.items()],
            forgotten_topics_data=[], rack_id="")

    def _on_fetch(self, node: int, partitions: list[tuple[TopicPartition, int]], response: Any,
                  done: RequestFuture[None]) -> None:
        asked = dict(partitions)
        completed = []
        for topic in response.responses:
            for p in topic.partitions:
                tp = TopicPartition(topic.topic, p.partition_index)
                fetch_offset = asked.get(tp)
                if fetch_offset is None:
                    continue
                action = action_for(p.error_code, ApiKey.FETCH)
                if action is Action.NONE:
                    self.subscription.set_high_watermark(tp, p.high_watermark,
                                                         getattr(p, "last_stable_offset", None),
                                                         self.client.clock.wall_ms())
                    if p.records:
                        completed.append(CompletedFetch(tp, fetch_offset, bytes(p.records), self.config,
                                                        self._aborted_of(p)))
                elif action is Action.RESET_OFFSET:
                    if self.subscription.reset_if_at(tp, fetch_offset):
                        log.info("offset %d of %s is out of range; resetting", fetch_offset, tp)
                elif action is Action.REFRESH_METADATA:
                    self.client.metadata.request_update()
                elif action is Action.RETRY:
                    log.debug("fetch of %s answered %s; fetching again", tp, error_name(p.error_code))
                else:
                    error = error_for(p.error_code, ApiKey.FETCH, f"Fetch of {tp.topic}-{tp.partition}")
                    log.warning("fetch of %s failed with %s", tp, error_name(p.error_code))
                    with self._lock:
                        self._errors[tp] = error
        with self._lock:
            self._in_flight_nodes.discard(node)
            self._completed.extend(completed)
        done.success(None)
        if completed:
            # the next answer is on its way while this one is decoded and handed out
            self.send_fetches()

    def _aborted_of(self, answer: Any) -> list[tuple[int, int]] | None:
        """read_committed: the aborted transactions a partition's answer lists (the broker lists
        them for read_committed fetches only; the consumer leaves their records out)."""
        listed = getattr(answer, "aborted_transactions", None)
        if self.config.isolation_level != 1 or not listed:
            return None
        return [(t.producer_id, t.first_offset) for t in listed]

    def _on_fetch_failed(self, node: int, exc: BaseException) -> None:
        log.debug("fetch from node %d failed: %s", node, exc)
        self.client.metadata.request_update()
        with self._lock:
            self._in_flight_nodes.discard(node)
        self._note_failure(exc)

    def _note_failure(self, exc: BaseException) -> None:
        """A bug of groupclient's while handling a Fetch or ListOffsets answer is kept, and raised
        from every later poll() (a fatal error: nothing is retried around a bug)."""
        if isinstance(exc, InternalError):
            with self._lock:
                self.fatal_error = self.fatal_error or exc

    def fetched_records(self, max_records: int, delivered: bool = True) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Drain up to ``max_records`` decoded records and advance the positions; ``delivered``
        False leaves the commit positions to the caller (an iterator yields one at a time)."""
        records: dict[TopicPartition, list[ConsumerRecord]] = self._drain(max_records, delivered, False)
        return records

    def fetched_columns(self, max_records: int) -> dict[TopicPartition, list[RecordColumns]]:
        """:meth:`fetched_records` as columns (columns.py), delivered."""
        columns: dict[TopicPartition, list[RecordColumns]] = self._drain(max_records, True, True)
        return columns

    def _drain(self, max_records: int, delivered: bool, columnar: bool) -> dict[TopicPartition, list[Any]]:
        with self._lock:
            fatal = self.fatal_error
        if fatal is not None:
            raise fatal
        result: dict[TopicPartition, list[Any]] = {}
        tags = self.tags = {}
        remaining = max_records
        paused = self.subscription.not_drained()
        kept: list[CompletedFetch] = []
        failed: CompletedFetch | None = None
        while remaining > 0:
            with self._lock:
                if not self._completed:
                    break
                completed = self._completed.popleft()
            tp = completed.tp
            if tp in paused:
                kept.append(completed)
                continue
            now_at = self.subscription.position_if_assigned(tp)
            if now_at is None:
                continue  # unassigned (or reset) since the fetch was sent: the data is stale
            position = now_at
            if position != completed.fetch_offset:
                # seeked since the fetch was sent: stale, unless the position moved into the answer
                if position < completed.fetch_offset:
                    continue
                completed.fetch_offset = position
            if columnar:
                records: list[Any] = completed.take_columns(remaining, position)
                count = sum(len(part) for part in records)
                last, epoch = (records[-1].last_offset, records[-1].last_epoch) if records else (0, -1)
            else:
                records = completed.take(remaining, position)
                count = len(records)
                last, epoch = (records[-1].offset, records[-1].leader_epoch) if records else (0, -1)
            tag = count and self.subscription.advance(tp, position, last + 1, delivered, epoch)
            if tag:
                if tags.get(tp, tag) != tag:
                    # the application seeked while this call drained: what came before is void
                    del result[tp]
                tags[tp] = tag
                result.setdefault(tp, []).extend(records)
                remaining -= count
                position = completed.fetch_offset = last + 1
            if completed.error is not None:
                # every record before the error is handed out; the position stays at the batch
                # that failed, so the error comes again until the application seeks past it
                failed = completed
                break
            if not completed.exhausted():
                kept.append(completed)
                continue
            with self._lock:
                self.drained_bytes += completed.size
            if completed.next_offset > position:
                # drained: step over what follows the last record in this answer (transaction
                # markers), as Java's nextFetchOffset does, so the next answer lines up
                self.subscription.advance(tp, position, completed.next_offset, delivered)
        if failed is not None and result:
            kept.insert(0, failed)  # raised by the next call, after these records (as Java)
        with self._lock:
            self._completed.extendleft(reversed(kept))
        if failed is not None and not result:
            assert failed.error is not None
            raise failed.error  # once: the answer is dropped, and fetched again from the position
        if not result:
            self._raise_partition_error()
        return result

    def _raise_partition_error(self) -> None:
        with self._lock:
            if not self._errors:
                return
            tp, error = next(iter(self._errors.items()))
            del self._errors[tp]
        if self.subscription.is_assigned(tp):
            raise error

    def take_drained_bytes(self) -> int:
        with self._lock:
            drained, self.drained_bytes = self.drained_bytes, 0
        return drained

    def drop_buffered(self, keep: set[TopicPartition]) -> None:
        with self._lock:
            self._completed = deque(c for c in self._completed if c.tp in keep)
            self._errors = {tp: e for tp, e in self._errors.items() if tp in keep}
