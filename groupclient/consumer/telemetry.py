"""A consumer's OpenTelemetry: spans on the application thread, metrics from any thread.

Only imported when the OpenTelemetry API is installed (``groupclient[otel]``); a consumer without
it holds ``None`` instead and pays nothing.  With the API but no provider (see
groupclient/otel/providers.py) every call returns after one check.

Spans (all on the application thread, the one running ``poll()``, so span processors and
exporters the application configured never run on the heartbeat thread):

- ``poll {topic}`` (``receive``, kind CLIENT): one per ``poll()`` that returned records, from the
  call to its answer, linked to the producers' contexts found in the records' headers;
- ``process {topic}`` (``process``, kind CONSUMER): one per record handed out by iteration
  (``for record in consumer``), current while the application holds the record, ended when it
  asks for the next one (or calls poll(), commit() or close());
- ``rebalance {group}`` (INTERNAL): one per rebalance of this member, from its RebalanceEvent.

Metrics: see telemetry_metrics.py.  Thread by thread:

- application thread: ``on_poll``, ``start_process``/``end_process``, ``on_rebalance`` and the
  last consumed timestamps (``_last_timestamp_ms``, under ``_lock``);
- any thread completing a request (application or heartbeat thread): ``on_request`` and
  ``on_commit_done`` record to histograms only;
- the metric reader's thread: the ``observe_*`` gauge callbacks, which read the subscription
  (under its own lock) and then ``_last_timestamp_ms`` (under ``_lock``): never both at once.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.metrics import Observation
from opentelemetry.trace import SpanKind

from ..otel import semconv as names
from ..otel.propagation import creation_context, links_from
from ..otel.providers import Instrumentation
from ..protocol.apis import ApiKey
from ..structs import ConsumerRecord, TopicPartition
from .telemetry_metrics import ConsumerInstruments, instruments_for

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from .columns import RecordColumns
    from .rebalance_events import RebalanceEvent

_HEARTBEATS = {int(ApiKey.HEARTBEAT), int(ApiKey.CONSUMER_GROUP_HEARTBEAT)}
_FETCH = int(ApiKey.FETCH)
# a poll span links to the first producer context found among its first RECEIVE_LINKS_SCAN records
# (RECEIVE_LINKS: at most one): a link costs the SDK a Link, its attributes and their lock, and the
# garbage collector as much again while the span processor holds the span; with 100 B records,
# 500 a poll, four links made a span per poll cost 11% of the poll (benchmarks/throughput.py:
# 0.893 of tracing off, per run 0.85 to 0.92) and one link 6% (0.944, per run 0.89 to 1.02); a
# link per record costs more than the poll itself.  Iteration's process spans link every record
# to its producer
RECEIVE_LINKS, RECEIVE_LINKS_SCAN = 1, 32


class ConsumerTelemetry:
    """The spans and metrics of one consumer (see the module docstring for threads).

    ``lags``: the owned partitions' records lag (the subscription's, any thread);
    ``assigned``: the owned partitions (any thread).  groupclient.aio splits the work between two
    of them: its consumer thread's, whose spans are off (:meth:`disable_spans`: metrics and
    gauges), and its event loop's with ``gauges=False``, whose only calls are
    :meth:`trace_receive`, :meth:`start_process` (``attach=False``), :meth:`end_process`,
    :meth:`trace_rebalance` and :meth:`close` (the spans belong where the application's context is).
    """

    def __init__(self, instrumentation: Instrumentation, group_id: str | None, client_id: str,
                 lags: Callable[[], dict[TopicPartition, int]], assigned: Callable[[], set[TopicPartition]],
                 spans: bool = True, gauges: bool = True, wall_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000) -> None:
        self._instrumentation = instrumentation
        self._group_id = group_id
        self._lags = lags
        self._assigned = assigned
        self._spans = spans
        self._gauges = gauges
        self._wall_ms = wall_ms
        self._base: dict[str, Any] = {names.MESSAGING_SYSTEM: names.KAFKA, names.MESSAGING_CLIENT_ID: client_id}
        if group_id is not None:
            self._base[names.MESSAGING_CONSUMER_GROUP_NAME] = group_id
        self._by_partition: dict[TopicPartition, dict[str, Any]] = {}
        self._instruments: ConsumerInstruments | None = None
        # under _lock: written by the application thread at each poll, read by the metric reader's
        # callbacks (the consumed counters are asynchronous: a poll adds to these totals, which
        # costs a dictionary update instead of an SDK measurement per partition)
        self._lock = threading.Lock()
        self._last_timestamp_ms: dict[TopicPartition, int] = {}
        self._consumed: dict[TopicPartition, int] = {}
        self._consumed_bytes = 0
        # the tracer as the last poll found it: iteration's records use it instead of looking the
        # providers up once per record; ``tracing`` / ``processing`` are read by GroupConsumer's
        # __next__ before it calls anything here (no call per record without tracing)
        self._poll_tracer: trace.Tracer | None = None
        self.tracing = False
        self.processing = False
        # iteration's record in the application's hands: its span and context token (None without
        # a tracer) and when it was handed out (perf_counter ns)
        # (the token is typed loosely: attach() returns Token[Context] in newer APIs, object in
        # the 1.30 floor)
        self._process: tuple[Span | None, Any, int] | None = None
        self._closed = False

    def add_attributes(self, attributes: dict[str, Any]) -> None:
        """Attributes every span and measurement of this consumer carries from now on (the Spark
        members add their task's)."""
        # new dictionaries, not updated ones: the gauge callbacks read them on another thread
        self._base = {**self._base, **attributes}
        self._by_partition = {}

    def disable_spans(self) -> None:
        """Make no spans from now on; metrics and gauges go on.  groupclient.aio calls it on its
        consumer thread's consumer before the first poll: that consumer's spans are made on the
        event loop, in the application's context, by a second instance (see the class doc)."""
        self._spans = False

    # -- resolving -------------------------------------------------------------------------------
    def _metrics(self) -> ConsumerInstruments | None:
        if self._instruments is None and not self._closed:
            meter = self._instrumentation.meter()
            if meter is not None:
                self._instruments = instruments_for(meter)
                if self._gauges:
                    self._instruments.watch(self)
        return self._instruments

    def _tracer(self) -> trace.Tracer | None:
        return self._instrumentation.tracer() if self._spans else None

    def _partition_attributes(self, tp: TopicPartition) -> dict[str, Any]:
        found = self._by_partition.get(tp)
        if found is None:
            found = self._by_partition[tp] = {**self._base, names.MESSAGING_DESTINATION_NAME: tp.topic,
                                              names.MESSAGING_DESTINATION_PARTITION_ID: str(tp.partition)}
        return found

    # -- application thread ----------------------------------------------------------------------
    def on_poll(self, records: dict[TopicPartition, list[ConsumerRecord]], started_ns: int, size: int) -> None:
        """poll() returns ``records`` (not empty), begun at ``started_ns`` (wall clock)."""
        instruments = self._metrics()
        tracer = self._poll_tracer = self._tracer()
        self.tracing = tracer is not None
        if instruments is None and tracer is None:
            return  # nobody collects: nothing is built
        if instruments is not None:
            self._record_poll(instruments, {tp: len(batch) for tp, batch in records.items()},
                              {tp: batch[-1].timestamp for tp, batch in records.items() if batch}, size)
        if tracer is not None:
            self._receive_span(tracer, records.keys(), sum(len(batch) for batch in records.values()), started_ns,
                               (r.headers for batch in records.values() for r in batch))

    def trace_receive(self, records: dict[TopicPartition, list[ConsumerRecord]], started_ns: int) -> None:
        """The receive span of handing out ``records`` (not empty), begun at ``started_ns``."""
        tracer = self._poll_tracer = self._tracer()
        self.tracing = tracer is not None
        if tracer is not None:
            count = sum(len(batch) for batch in records.values())
            self._receive_span(tracer, records.keys(), count, started_ns,
                               (r.headers for batch in records.values() for r in batch))

    def on_poll_columns(self, columns: dict[TopicPartition, list[RecordColumns]], started_ns: int,
                        size: int) -> None:
        """The columnar poll (groupclient.spark) returned ``columns`` (not empty)."""
        instruments = self._metrics()
        tracer = self._tracer()
        if instruments is None and tracer is None:
            return
        counts = {tp: sum(len(part) for part in parts) for tp, parts in columns.items()}
        if instruments is not None:
            self._record_poll(instruments, counts,
                              {tp: int(parts[-1].timestamps[-1]) for tp, parts in columns.items() if parts}, size)
        if tracer is not None:
            self._receive_span(tracer, columns.keys(), sum(counts.values()), started_ns,
                               (h for parts in columns.values() for part in parts for h in (part.headers or ())))

    def _record_poll(self, instruments: ConsumerInstruments, counts: dict[TopicPartition, int],
                     last_timestamps: dict[TopicPartition, int], size: int) -> None:
        with self._lock:
            for tp, n in counts.items():
                self._consumed[tp] = self._consumed.get(tp, 0) + n
            self._consumed_bytes += size
            self._last_timestamp_ms.update(last_timestamps)

    def _receive_span(self, tracer: trace.Tracer, partitions: Any, count: int, started_ns: int,
                      headers: Iterable[Any]) -> None:
        topics = {tp.topic for tp in partitions}
        attributes = {**self._base, names.MESSAGING_OPERATION_NAME: names.POLL,
                      names.MESSAGING_OPERATION_TYPE: names.RECEIVE, names.MESSAGING_BATCH_MESSAGE_COUNT: count}
        name = names.POLL
        if len(topics) == 1:
            topic = next(iter(topics))
            name = f"{names.POLL} {topic}"
            attributes[names.MESSAGING_DESTINATION_NAME] = topic
            if len(partitions) == 1:
                attributes[names.MESSAGING_DESTINATION_PARTITION_ID] = str(next(iter(partitions)).partition)
        links = links_from(itertools.islice(headers, RECEIVE_LINKS_SCAN), RECEIVE_LINKS)
        span = tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes, links=links, start_time=started_ns)
        span.end()

    def start_process(self, record: ConsumerRecord[object, object], attach: bool = True) -> Span | None:
        """Iteration hands ``record`` to the application: a process span, current until
        :meth:`end_process` (and the time until then, for messaging.process.duration).  The span,
        or None without a tracer when the records' poll was made: a process span costs ~40 us of
        the SDK's time, so without tracing there is nothing per record, not even the histogram.  ``attach=False``: the caller makes it current (groupclient.aio,
        in the task that iterates, which may not be the one that ends it)."""
        if self._process is not None:
            self.end_process()
        tracer = self._poll_tracer
        if tracer is None:
            return None
        tp = TopicPartition(record.topic, record.partition)
        attributes = {**self._partition_attributes(tp), names.MESSAGING_OPERATION_NAME: names.PROCESS,
                      names.MESSAGING_OPERATION_TYPE: names.PROCESS, names.MESSAGING_KAFKA_OFFSET: record.offset}
        key = message_key(record.key)
        if key is not None:
            attributes[names.MESSAGING_KAFKA_MESSAGE_KEY] = key
        if record.value is None:
            attributes[names.MESSAGING_KAFKA_MESSAGE_TOMBSTONE] = True
        elif record.serialized_value_size >= 0:
            attributes[names.MESSAGING_MESSAGE_BODY_SIZE] = record.serialized_value_size
        producer = creation_context(record.headers)
        links = [trace.Link(producer)] if producer is not None else None
        span = tracer.start_span(f"{names.PROCESS} {record.topic}", kind=SpanKind.CONSUMER, attributes=attributes,
                                 links=links)
        self._metrics()  # for messaging.process.duration: an instance that never polls resolves it here
        token: Any = otel_context.attach(trace.set_span_in_context(span)) if attach else None
        self._process = (span, token, time.perf_counter_ns())
        self.processing = True
        return span

    def end_process(self) -> None:
        """The application is done with the record iteration handed out (if any)."""
        process, self._process = self._process, None
        self.processing = False
        if process is None:
            return
        span, token, started = process
        if span is not None:
            try:
                if token is not None:
                    otel_context.detach(token)
            finally:
                span.end()
        if self._instruments is not None:
            self._instruments.process_duration.record((time.perf_counter_ns() - started) / 1e9, self._base)

    def on_rebalance(self, event: RebalanceEvent) -> None:
        """A rebalance of this member completed (RebalanceRecorder's callback)."""
        instruments = self._metrics()
        if instruments is not None:
            instruments.rebalance_duration.record(event.total_ms / 1000, self._rebalance_attributes(event))
        self.trace_rebalance(event)

    def _rebalance_attributes(self, event: RebalanceEvent) -> dict[str, Any]:
        return {**self._base, names.REBALANCE_REASON: event.reason, names.REBALANCE_PROTOCOL: event.rebalance_protocol}

    def trace_rebalance(self, event: RebalanceEvent) -> None:
        """The span of a completed rebalance, alone (groupclient.aio's loop side: its consumer
        thread's instance recorded the duration)."""
        tracer = self._tracer()
        if tracer is None:
            return
        attributes = self._rebalance_attributes(event)
        attributes.update({names.MEMBER_ID: event.member_id, names.REBALANCE_ASSIGNOR: event.assignor,
                           names.REBALANCE_GENERATION: event.generation_id,
                           names.REBALANCE_REVOKED: len(event.revoked), names.REBALANCE_LOST: len(event.lost),
                           names.REBALANCE_ASSIGNED: len(event.assigned), names.REBALANCE_OWNED: len(event.owned)})
        end_ns = int(event.completed_at * 1e9)
        span = tracer.start_span(f"{names.REBALANCE_SPAN} {event.group_id}", kind=SpanKind.INTERNAL,
                                 attributes=attributes, start_time=end_ns - event.total_ms * 1_000_000)
        span.end(end_time=end_ns)

    def close(self) -> None:
        """The consumer closed: end an open process span, stop reporting gauges.  The consumed
        totals stay reported, final (ConsumerInstruments.retire): an exporter that runs after
        close() (a provider's shutdown flush, a Spark task's end) still gets the last polls."""
        self.end_process()
        self._closed = True
        if self._instruments is not None and self._gauges:
            self._instruments.retire(self)

    # -- any thread --------------------------------------------------------------------------------
    def on_request(self, api_key: int, latency_ms: int, response: Any, failed: bool) -> None:
        """The network client's observer: fetch and heartbeat response times."""
        instruments = self._instruments
        if instruments is None or failed:
            return
        if api_key == _FETCH:
            instruments.fetch_duration.record(latency_ms / 1000, self._base)
        elif api_key in _HEARTBEATS:
            instruments.heartbeat_duration.record(latency_ms / 1000, self._base)

    def on_commit_done(self, seconds: float, error: BaseException | None) -> None:
        """An offset commit finished after ``seconds``: failed with ``error``, or succeeded."""
        instruments = self._instruments
        if instruments is None:
            return
        attributes = {**self._base, names.MESSAGING_OPERATION_NAME: names.COMMIT,
                      names.MESSAGING_OPERATION_TYPE: names.SETTLE}
        if error is not None:
            attributes[names.ERROR_TYPE] = error_type(error)
        instruments.operation_duration.record(seconds, attributes)

    # -- the metric reader's thread ----------------------------------------------------------------
    def _gauge_attributes(self, tp: TopicPartition) -> dict[str, Any]:
        """A partition's attributes, built anew (the cache belongs to the application thread)."""
        return {**self._base, names.MESSAGING_DESTINATION_NAME: tp.topic,
                names.MESSAGING_DESTINATION_PARTITION_ID: str(tp.partition)}

    def _owned_lags(self) -> dict[TopicPartition, int]:
        """The subscription's lags while open; nothing once closed."""
        return {} if self._closed else self._lags()

    def observe_lag(self) -> Iterator[Observation]:
        for tp, lag in self._owned_lags().items():
            yield Observation(lag, self._gauge_attributes(tp))

    def observe_time_lag(self) -> Iterator[Observation]:
        lags = self._owned_lags()
        with self._lock:
            # forget partitions no longer owned
            for tp in [tp for tp in self._last_timestamp_ms if tp not in lags]:
                del self._last_timestamp_ms[tp]
            last = dict(self._last_timestamp_ms)
        now = self._wall_ms()
        for tp, lag in lags.items():
            stamp = last.get(tp)
            if lag == 0:
                yield Observation(0.0, self._gauge_attributes(tp))
            elif stamp is not None and stamp >= 0:
                yield Observation(max(0.0, (now - stamp) / 1000), self._gauge_attributes(tp))

    def observe_consumed(self) -> Iterator[Observation]:
        with self._lock:
            consumed = dict(self._consumed)
        for tp, count in consumed.items():
            yield Observation(count, {**self._gauge_attributes(tp), names.MESSAGING_OPERATION_NAME: names.POLL})

    def observe_consumed_bytes(self) -> Iterator[Observation]:
        with self._lock:
            size = self._consumed_bytes
        yield Observation(size, self._base)

    def observe_assigned(self) -> Iterator[Observation]:
        if not self._closed:
            yield Observation(len(self._assigned()), self._base)


def error_type(error: BaseException) -> str:
    """``error.type``: the Kafka error's name (e.g. ``REBALANCE_IN_PROGRESS``) when it has one,
    else the exception's class name, as the conventions ask."""
    message = getattr(error, "message", None)
    if isinstance(message, str) and message.isupper():
        return message
    return type(error).__name__


def message_key(key: Any) -> str | None:
    """``messaging.kafka.message.key``: a string key as it is, a bytes key when it is UTF-8 text
    (the conventions want the key's string form; binary keys have none), else None."""
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        try:
            return key.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None
