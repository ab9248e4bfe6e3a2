"""``GroupConsumer.metrics()``: kafka-python's metric groups and names, from groupclient's own counts.

Rates are per second over the last :data:`WINDOW_MS` (kafka-python's default sample window);
averages and maxima are over the same window; ``-total`` counts are since the consumer started.
Latencies are milliseconds, as in kafka-python and Java.  With no sample in the window a rate or
an average is ``0.0`` and a maximum ``-inf``, kafka-python's values.

Where the numbers come from:

- every request's answer or failure (the network client's observer: API key, latency, answer),
  on whichever thread completed the request, so :class:`ConsumerMetrics` has its own lock;
- records handed to the caller (``poll()`` and iteration), counted by the consumer facade;
- rebalances, from the rebalance events (see rebalance_events.py);
- lag and assigned partitions, read from the subscription when ``metrics()`` is called.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from ..protocol.apis import ApiKey

WINDOW_MS = 30_000

FETCH, COORDINATOR, CONSUMER = ("consumer-fetch-manager-metrics", "consumer-coordinator-metrics",
                                "consumer-metrics")


class WindowedStat:
    """Samples (time, value) of the last WINDOW_MS, plus a running total count."""

    __slots__ = ("samples", "total", "last_ms")

    def __init__(self) -> None:
        self.samples: deque[tuple[int, float]] = deque()
        self.total = 0
        self.last_ms: int | None = None

    def record(self, now_ms: int, value: float = 1.0) -> None:
        self.samples.append((now_ms, value))
        self.total += 1
        self.last_ms = now_ms
        self._expire(now_ms)

    def _expire(self, now_ms: int) -> None:
        while self.samples and self.samples[0][0] <= now_ms - WINDOW_MS:
            self.samples.popleft()

    def rate(self, now_ms: int) -> float:
        """Events per second."""
        self._expire(now_ms)
        return len(self.samples) / (WINDOW_MS / 1000)

    def value_rate(self, now_ms: int) -> float:
        """Sum of values per second."""
        self._expire(now_ms)
        return sum(v for _, v in self.samples) / (WINDOW_MS / 1000)

    def avg(self, now_ms: int) -> float:
        self._expire(now_ms)
        return sum(v for _, v in self.samples) / len(self.samples) if self.samples else 0.0

    def max(self, now_ms: int) -> float:
        self._expire(now_ms)
        return max(v for _, v in self.samples) if self.samples else -math.inf


_LATENCY_NAMES = {
    ApiKey.FETCH: "fetch", ApiKey.OFFSET_COMMIT: "commit", ApiKey.JOIN_GROUP: "join",
    ApiKey.SYNC_GROUP: "sync", ApiKey.HEARTBEAT: "heartbeat",
    # the consumer group protocol's heartbeat (KIP-848) counts as the heartbeat, as in Java
    ApiKey.CONSUMER_GROUP_HEARTBEAT: "heartbeat",
}


class ConsumerMetrics:
    def __init__(self, now_ms: Callable[[], int]) -> None:
        self._now_ms = now_ms
        self._lock = threading.Lock()
        self._requests = WindowedStat()  # latency per answered request
        self._failed_requests = 0
        self._latency = {name: WindowedStat() for name in _LATENCY_NAMES.values()}
        self._fetch_bytes = WindowedStat()  # bytes of record data per Fetch answer
        self._consumed_records = WindowedStat()  # records per poll() answer
        self._consumed_bytes = WindowedStat()
        self._records_total = 0
        self._bytes_in = WindowedStat()
        self._bytes_out = WindowedStat()
        self._rebalances = WindowedStat()  # duration (ms) per completed rebalance
        self._last_rebalance_ms: float = -math.inf

    # -- recording (any thread) --------------------------------------------------------------
    def on_request_done(self, api_key: int, latency_ms: int, response: Any, failed: bool) -> None:
        now = self._now_ms()
        fetched = _fetch_bytes(response) if api_key == ApiKey.FETCH and not failed else None
        with self._lock:
            if failed:
                self._failed_requests += 1
                return
            self._requests.record(now, latency_ms)
            name = _LATENCY_NAMES.get(ApiKey(api_key)) if api_key in _LATENCY_KEYS else None
            if name is not None:
                self._latency[name].record(now, latency_ms)
            if fetched is not None:
                self._fetch_bytes.record(now, fetched)

    def on_io(self, sent: int, received: int) -> None:
        now = self._now_ms()
        with self._lock:
            if sent:
                self._bytes_out.record(now, sent)
            if received:
                self._bytes_in.record(now, received)

    def on_records_delivered(self, count: int, size: int) -> None:
        now = self._now_ms()
        with self._lock:
            self._consumed_records.record(now, count)
            self._records_total += count
            self._consumed_bytes.record(now, size)

    def on_rebalance(self, duration_ms: float) -> None:
        now = self._now_ms()
        with self._lock:
            self._rebalances.record(now, duration_ms)
            self._last_rebalance_ms = duration_ms

    # -- reading ------------------------------------------------------------------------------
    def snapshot(self, lags: Iterable[int], assigned: int, has_group: bool,
                 connections: int = 0) -> dict[str, dict[str, float]]:
        now = self._now_ms()
        lag_values = list(lags)
        with self._lock:
            fetch = self._latency["fetch"]
            consumed = self._consumed_records
            result: dict[str, dict[str, float]] = {
                CONSUMER: {
                    "request-rate": self._requests.rate(now),
                    "request-latency-avg": self._requests.avg(now),
                    "request-latency-max": self._requests.max(now),
                    "request-total": float(self._requests.total),
                    "failed-request-total": float(self._failed_requests),
                    "incoming-byte-rate": self._bytes_in.value_rate(now),
                    "outgoing-byte-rate": self._bytes_out.value_rate(now),
                    "connection-count": float(connections),
                },
                FETCH: {
                    "fetch-rate": fetch.rate(now),
                    "fetch-latency-avg": fetch.avg(now),
                    "fetch-latency-max": fetch.max(now),
                    "fetch-total": float(fetch.total),
                    "fetch-size-avg": self._fetch_bytes.avg(now),
                    "fetch-size-max": self._fetch_bytes.max(now),
                    "bytes-consumed-rate": self._consumed_bytes.value_rate(now),
                    "records-consumed-rate": consumed.value_rate(now),
                    "records-consumed-total": float(self._records_total),
                    "records-per-request-avg": consumed.avg(now),
                    "records-lag-max": float(max(lag_values)) if lag_values else -math.inf,
                },
            }
            if has_group:
                coordinator = result[COORDINATOR] = {"assigned-partitions": float(assigned)}
                for name in ("commit", "join", "sync"):
                    stat = self._latency[name]
                    suffix = "latency" if name == "commit" else "time"
                    coordinator[f"{name}-rate"] = stat.rate(now)
                    coordinator[f"{name}-{suffix}-avg"] = stat.avg(now)
                    coordinator[f"{name}-{suffix}-max"] = stat.max(now)
                    coordinator[f"{name}-total"] = float(stat.total)
                heartbeat = self._latency["heartbeat"]
                coordinator["heartbeat-rate"] = heartbeat.rate(now)
                coordinator["heartbeat-response-time-max"] = heartbeat.max(now)
                coordinator["heartbeat-total"] = float(heartbeat.total)
                coordinator["last-heartbeat-seconds-ago"] = _seconds_since(heartbeat.last_ms, now)
                coordinator["rebalance-total"] = float(self._rebalances.total)
                coordinator["rebalance-latency-avg"] = self._rebalances.avg(now)
                coordinator["rebalance-latency-max"] = self._rebalances.max(now)
                coordinator["last-rebalance-latency"] = self._last_rebalance_ms
                coordinator["last-rebalance-seconds-ago"] = _seconds_since(self._rebalances.last_ms, now)
        return result

_LATENCY_KEYS = {int(k) for k in _LATENCY_NAMES}


def _seconds_since(then_ms: int | None, now_ms: int) -> float:
    return math.inf if then_ms is None else (now_ms - then_ms) / 1000


def _fetch_bytes(response: Any) -> int:
    return sum(len(p.records or b"") for topic in response.responses for p in topic.partitions)
