"""What watches a consumer: the counts ``metrics()`` returns and OpenTelemetry, either of which
may be off (``metrics_enabled=False``; no ``groupclient[otel]`` or no provider).

One object so the consumer facade calls one thing at each point it is watched: every request's
answer (any thread), the records a poll hands out, each rebalance, each commit, close.  The
OpenTelemetry module is imported only when the API is installed: without it there is no
``telemetry`` and nothing of it runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..clock import Clock
from ..otel.providers import Instrumentation, api_installed
from ..structs import TopicPartition
from .metrics import ConsumerMetrics
from .rebalance_events import RebalanceEvent

if TYPE_CHECKING:
    from .telemetry import ConsumerTelemetry

RequestObserver = Callable[[int, int, Any, bool], None]


def make_telemetry(cfg: dict[str, Any], lags: Callable[[], dict[TopicPartition, int]],
                   assigned: Callable[[], set[TopicPartition]], wall_ms: Callable[[], int],
                   spans: bool = True, gauges: bool = True) -> ConsumerTelemetry | None:
    """The consumer's OpenTelemetry, or None when the API is not installed."""
    if not api_installed():
        return None
    from .telemetry import ConsumerTelemetry

    return ConsumerTelemetry(Instrumentation(cfg["tracer_provider"], cfg["meter_provider"]), cfg["group_id"],
                             cfg["client_id"], lags, assigned, spans=spans, gauges=gauges, wall_ms=wall_ms)


class ConsumerObservers:
    """``metrics`` (for ``metrics()``) and ``telemetry`` (OpenTelemetry), each None when off."""

    def __init__(self, cfg: dict[str, Any], clock: Clock, lags: Callable[[], dict[TopicPartition, int]],
                 assigned: Callable[[], set[TopicPartition]]) -> None:
        self.metrics = ConsumerMetrics(clock.monotonic_ms) if cfg["metrics_enabled"] else None
        self.telemetry = make_telemetry(cfg, lags, assigned, clock.wall_ms)

    def request_observer(self) -> RequestObserver | None:
        """For the network client: every request's answer or failure, on the completing thread."""
        metrics, telemetry = self.metrics, self.telemetry
        if metrics is not None and telemetry is not None:
            def both(api_key: int, latency_ms: int, response: Any, failed: bool) -> None:
                metrics.on_request_done(api_key, latency_ms, response, failed)
                telemetry.on_request(api_key, latency_ms, response, failed)
            return both
        if metrics is not None:
            return metrics.on_request_done
        return telemetry.on_request if telemetry is not None else None

    def io_observer(self) -> Callable[[int, int], None] | None:
        return self.metrics.on_io if self.metrics is not None else None

    def rebalance_callbacks(self) -> list[Callable[[RebalanceEvent], Any]]:
        """Callbacks for the rebalance recorder (application thread)."""
        callbacks: list[Callable[[RebalanceEvent], Any]] = []
        if self.metrics is not None:
            metrics = self.metrics
            callbacks.append(lambda event: metrics.on_rebalance(event.total_ms))
        if self.telemetry is not None:
            callbacks.append(self.telemetry.on_rebalance)
        return callbacks

    def commit_observer(self) -> Callable[[float, BaseException | None], None] | None:
        """For the committer: each commit's duration and failure (any thread)."""
        return self.telemetry.on_commit_done if self.telemetry is not None else None

    def poll_started(self) -> int:
        """The wall clock (ns) at the start of a poll, for its span (0 without telemetry)."""
        if self.telemetry is None:
            return 0
        if self.telemetry.processing:
            self.telemetry.end_process()
        return time.time_ns()

    def delivered(self, records: dict[TopicPartition, list[Any]], columnar: bool, size: int,
                  started_ns: int) -> None:
        """poll() hands out ``records`` (not empty) of ``size`` bytes of record batches."""
        if self.metrics is not None:
            count = sum(len(part) for parts in records.values() for part in parts) if columnar \
                else sum(len(batch) for batch in records.values())
            self.metrics.on_records_delivered(count, size)
        if self.telemetry is not None:
            if columnar:
                self.telemetry.on_poll_columns(records, started_ns, size)
            else:
                self.telemetry.on_poll(records, started_ns, size)

    def close(self) -> None:
        """The consumer closed (application thread)."""
        if self.telemetry is not None:
            self.telemetry.close()
