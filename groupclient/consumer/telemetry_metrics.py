"""The consumer's OpenTelemetry instruments, one set per meter, shared by every consumer on it.

Only imported (by telemetry.py) when the OpenTelemetry API is installed.

Counters and histograms are created once per ``Meter`` (creating one twice makes the SDK warn
about a duplicate) and recorded to from any thread: the SDK's instruments are thread-safe, and
recording runs no application code (exporters run on the metric reader's own thread).

The observable instruments (the consumed records and bytes, lag, lag in time, assigned
partitions) are registered once per meter too,
with one callback each that asks every live consumer on that meter for its values: a consumer
joins with :meth:`ConsumerInstruments.watch` and leaves with :meth:`ConsumerInstruments.retire`
when it closes (its final consumed totals stay, summed with any of the same attributes) or by
being garbage collected.  The callbacks run on the metric reader's thread; what they read
is thread-safe on the consumer's side (see telemetry.py).  The set of live consumers has its own
lock, held only to copy it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from opentelemetry.metrics import Observation

from ..otel import semconv as names

if TYPE_CHECKING:
    from opentelemetry.metrics import CallbackOptions, Meter


class GaugeSource(Protocol):
    """A consumer whose gauges and consumed totals the callbacks read (on the metric reader's
    thread)."""

    def observe_consumed(self) -> Iterator[Observation]:
        """Records handed out since the consumer started, per partition."""

    def observe_consumed_bytes(self) -> Iterator[Observation]:
        """Bytes of record batches handed out since the consumer started."""

    def observe_lag(self) -> Iterator[Observation]:
        """Records lag per owned partition."""

    def observe_time_lag(self) -> Iterator[Observation]:
        """Seconds behind per owned partition."""

    def observe_assigned(self) -> Iterator[Observation]:
        """Number of owned partitions."""


class ConsumerInstruments:
    """Every instrument of the consumer on one meter (see the module docstring)."""

    def __init__(self, meter: Meter) -> None:
        buckets = list(names.DURATION_BUCKETS)
        self.operation_duration = meter.create_histogram(
            names.MESSAGING_CLIENT_OPERATION_DURATION, unit="s", explicit_bucket_boundaries_advisory=buckets,
            description="poll() calls that returned records, and offset commits (error.type when one failed).")
        self.process_duration = meter.create_histogram(
            names.MESSAGING_PROCESS_DURATION, unit="s", explicit_bucket_boundaries_advisory=buckets,
            description="The application's time with one record, iterating the consumer.")
        self.fetch_duration = meter.create_histogram(
            names.FETCH_DURATION, unit="s", explicit_bucket_boundaries_advisory=buckets,
            description="Fetch requests, sent to answered (includes fetch_max_wait_ms when no data is there).")
        self.heartbeat_duration = meter.create_histogram(
            names.HEARTBEAT_DURATION, unit="s", explicit_bucket_boundaries_advisory=buckets,
            description="Heartbeat response time (Heartbeat or ConsumerGroupHeartbeat).")
        self.rebalance_duration = meter.create_histogram(
            names.REBALANCE_DURATION, unit="s", explicit_bucket_boundaries_advisory=buckets,
            description="Rebalances of this member, by reason and protocol: revoke, join, sync.")
        self._sources: weakref.WeakSet[GaugeSource] = weakref.WeakSet()
        # the final totals of closed consumers, by metric and attributes: a cumulative counter
        # keeps counting what a consumer did after it is gone (as a synchronous counter would),
        # and a provider flushed after close() still exports the last polls
        self._retired: dict[str, dict[frozenset[tuple[str, Any]], tuple[dict[str, Any], float]]] = {
            names.MESSAGING_CLIENT_CONSUMED_MESSAGES: {}, names.CONSUMED_BYTES: {}}
        self._lock = threading.Lock()
        # asynchronous counters: a poll adds to the consumer's own totals, read here at collection
        # (an SDK measurement costs ~10 us; one per partition per poll was a tenth of a poll)
        meter.create_observable_counter(names.MESSAGING_CLIENT_CONSUMED_MESSAGES, [self._consumed], unit="{message}",
                                        description="Records poll() handed to the application.")
        meter.create_observable_counter(names.CONSUMED_BYTES, [self._consumed_bytes], unit="By",
                                        description="Bytes of record batches poll() handed to the application.")
        meter.create_observable_gauge(names.RECORDS_LAG, [self._lag], unit="{message}",
                                      description="Records behind the partition's high watermark.")
        meter.create_observable_gauge(names.TIME_LAG, [self._time_lag], unit="s",
                                      description="Now minus the timestamp of the last record consumed from "
                                                  "the partition; 0 when caught up.")
        meter.create_observable_gauge(names.ASSIGNED_PARTITIONS, [self._assigned], unit="{partition}",
                                      description="Partitions this consumer owns.")

    def watch(self, source: GaugeSource) -> None:
        """Report ``source``'s gauges and totals while it lives."""
        with self._lock:
            self._sources.add(source)

    def retire(self, source: GaugeSource) -> None:
        """``source`` closed: its gauges stop, its final totals stay (in ``_retired``)."""
        # read outside our lock (the source takes its own): one lock at a time
        final = {names.MESSAGING_CLIENT_CONSUMED_MESSAGES: list(source.observe_consumed()),
                 names.CONSUMED_BYTES: list(source.observe_consumed_bytes())}
        with self._lock:
            self._sources.discard(source)
            for name, observations in final.items():
                _add(self._retired[name], observations)

    def _live(self) -> list[GaugeSource]:
        with self._lock:
            return list(self._sources)

    def _totals(self, name: str, observe: Callable[[GaugeSource], Iterable[Observation]]) -> list[Observation]:
        """The live consumers' totals plus the closed ones', summed by attributes (two consumers
        of one process can share them: the same client_id, group and partition, one after the
        other; an asynchronous counter keeps only the last of equal observations)."""
        with self._lock:  # one snapshot of both: a consumer retired meanwhile is counted once
            live = list(self._sources)
            summed = dict(self._retired[name])
        for source in live:
            _add(summed, observe(source))
        return [Observation(value, attributes) for attributes, value in summed.values()]

    def _consumed(self, options: CallbackOptions) -> Iterable[Observation]:
        return self._totals(names.MESSAGING_CLIENT_CONSUMED_MESSAGES, lambda source: source.observe_consumed())

    def _consumed_bytes(self, options: CallbackOptions) -> Iterable[Observation]:
        return self._totals(names.CONSUMED_BYTES, lambda source: source.observe_consumed_bytes())

    def _lag(self, options: CallbackOptions) -> Iterable[Observation]:
        return [observation for source in self._live() for observation in source.observe_lag()]

    def _time_lag(self, options: CallbackOptions) -> Iterable[Observation]:
        return [observation for source in self._live() for observation in source.observe_time_lag()]

    def _assigned(self, options: CallbackOptions) -> Iterable[Observation]:
        return [observation for source in self._live() for observation in source.observe_assigned()]


def _add(totals: dict[frozenset[tuple[str, Any]], tuple[dict[str, Any], float]],
         observations: Iterable[Observation]) -> None:
    for observation in observations:
        attributes = dict(observation.attributes or {})
        key = frozenset(attributes.items())
        found = totals.get(key)
        totals[key] = (attributes, (found[1] if found else 0) + observation.value)


_BY_METER: weakref.WeakKeyDictionary[Meter, ConsumerInstruments] = weakref.WeakKeyDictionary()
_BY_METER_LOCK = threading.Lock()


def instruments_for(meter: Meter) -> ConsumerInstruments:
    """The instrument set of ``meter``, created on first use."""
    with _BY_METER_LOCK:
        found = _BY_METER.get(meter)
        if found is None:
            found = _BY_METER[meter] = ConsumerInstruments(meter)
        return found
