"""GroupConsumer's questions to the cluster: offsets by position or time, topics, partitions,
metrics and bootstrap state.  A mixin of :class:`GroupConsumer`, kept apart so the facade's
file stays about the group; every method takes the consumer's ownership like the rest."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..structs import OffsetAndTimestamp, TopicPartition

from ..attempts import Attempts, counted
from ..clock import Timer
from ..errors import ArgumentTypeError, ConfigurationError
from .offset_lookup import EARLIEST, LATEST
from .parts import ConsumerParts


def check_partition(partition: Any) -> TopicPartition:
    if not (isinstance(partition, tuple) and len(partition) == 2 and isinstance(partition[0], str)
            and isinstance(partition[1], int)):
        raise ArgumentTypeError(f"expected a TopicPartition, got {partition!r}")
    return TopicPartition(*partition)


class ClusterQueries(ConsumerParts):
    """GroupConsumer's questions to the cluster."""

    def _default_timer(self, timeout_ms: float | None) -> Timer:
        """A blocking call's deadline: ``timeout_ms``, else default_api_timeout_ms (as Java's
        default.api.timeout.ms); ``float("inf")`` is the documented way to wait until it finishes."""
        if timeout_ms is not None and (isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float))
                                       or not timeout_ms >= 0):
            raise ConfigurationError(f"timeout_ms must be a non-negative number, float('inf') (no limit) or "
                                     f"None (default_api_timeout_ms), not {timeout_ms!r}")
        if timeout_ms == float("inf"):
            return Timer(self._clock, None)
        return Timer(self._clock, self.config["default_api_timeout_ms"] if timeout_ms is None else timeout_ms)

    def beginning_offsets(self, partitions: Iterable[TopicPartition],
                          timeout_ms: float | None = None) -> dict[TopicPartition, int]:
        """The first offset of each partition (assigned or not), asked of its leader now;
        CallTimeoutError after ``timeout_ms`` (default_api_timeout_ms when None)."""
        return self._offsets_at(EARLIEST, partitions, timeout_ms, "beginning offsets")

    def end_offsets(self, partitions: Iterable[TopicPartition], timeout_ms: float | None = None) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition (assigned or not), asked of its
        leader now (under read_committed, the last stable offset); CallTimeoutError after
        ``timeout_ms`` (default_api_timeout_ms when None)."""
        return self._offsets_at(LATEST, partitions, timeout_ms, "end offsets")

    def _offsets_at(self, timestamp: int, partitions: Iterable[TopicPartition],
                    timeout_ms: float | None, what: str) -> dict[TopicPartition, int]:
        found = self._look_up({check_partition(tp): timestamp for tp in partitions}, timeout_ms, what)
        return {tp: answer.offset for tp, answer in found.items()}

    def offsets_for_times(self, timestamps: dict[TopicPartition, int],
                          timeout_ms: float | None = None) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The earliest offset whose timestamp is at or after the given one (ms since the
        epoch), per partition; None where no record is that recent.  The partitions need not
        be assigned.  CallTimeoutError after ``timeout_ms`` (default_api_timeout_ms when None)."""
        wanted: dict[TopicPartition, int] = {}
        for tp, ts in timestamps.items():
            if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
                raise ConfigurationError(f"the target time for {tp} must be a non-negative integer, not {ts!r}")
            wanted[check_partition(tp)] = ts
        found = self._look_up(wanted, timeout_ms, "offsets for times")
        return {tp: (answer if answer.offset >= 0 else None) for tp, answer in found.items()}

    def _look_up(self, timestamps: dict[TopicPartition, int], timeout_ms: float | None,
                 what: str) -> dict[TopicPartition, OffsetAndTimestamp]:
        operation = f"{what} of {counted(len(timestamps), 'partition')}"
        with self._ownership.acquired():
            self._ensure_open()
            timer = self._default_timer(timeout_ms)
            self._ensure_metadata_for({tp.topic for tp in timestamps}, timer, operation)
            return self._fetcher.list_offsets_by_time(timestamps, timer, operation)

    def _ensure_metadata_for(self, topics: set[str], timer: Timer, operation: str) -> None:
        metadata = self._client.metadata
        if topics - metadata.topics():
            self._client.set_topics(None if self._subscription.pattern else
                                    self._subscription.topics | self._subscription.group_topics | topics)
        attempts = Attempts(operation, timer, sorted(topics))
        while missing := topics - (view := metadata.snapshot).topics() - set(view.unavailable):
            attempts.tried()
            future = self._client.maybe_update_metadata()
            self._client.poll_until(future, Timer(self._clock, min(timer.remaining_ms(), 100)))
            if future is not None and future.failed():
                assert future.exception is not None
                attempts.failed(future.exception)
            if timer.expired():
                raise attempts.timed_out(sorted(missing))

    def topics(self, timeout_ms: float | None = None) -> set[str]:
        """Every topic the cluster has (internal ones left out), asked for now; creates none.
        CallTimeoutError after ``timeout_ms`` (default_api_timeout_ms when None)."""
        with self._ownership.acquired():
            self._ensure_open()
            self._client.fetch_all_topics(self._default_timer(timeout_ms))
            return {t for t in self._client.metadata.topics() if not t.startswith("__")}

    def partitions_for_topic(self, topic: str, timeout_ms: float | None = None) -> set[int]:
        """The topic's partition numbers; an empty set for a topic that does not exist (asking
        creates nothing, as in kafka-python).  Asks the cluster only for a topic not known yet,
        then CallTimeoutError after ``timeout_ms`` (default_api_timeout_ms when None)."""
        with self._ownership.acquired():
            self._ensure_open()
            if topic not in self._client.metadata.topics():
                self._client.fetch_all_topics(self._default_timer(timeout_ms))
            return set(self._client.metadata.partitions_for_topic(topic) or ())

    # -- bootstrap and metrics -------------------------------------------------------------
    def bootstrap(self, timeout_ms: int | None = None, refresh: bool = False) -> None:
        """Block until cluster metadata has been fetched (NoBrokersAvailableError, a
        KafkaTimeoutError, if no broker answers in time; None waits bootstrap_timeout_ms)."""
        with self._ownership.acquired():
            self._ensure_open()
            self._client.bootstrap(self.config["bootstrap_timeout_ms"] if timeout_ms is None else timeout_ms, refresh)

    def bootstrap_connected(self) -> bool:
        """True once a broker has answered this consumer's Metadata request."""
        return self._client.bootstrapped()

    def metrics(self, raw: bool = False) -> dict[str, dict[str, float]] | None:
        """kafka-python's metric groups and names (see metrics.py); None when metrics_enabled
        is False.  ``raw`` is accepted for kafka-python's signature and returns the same."""
        if self._metrics is None:
            return None
        lags = self._subscription.lags()
        group = self.config["group_id"] is not None
        return self._metrics.snapshot(lags, len(self._subscription.assigned()), group, self._client.connection_count())
