"""What ``benchmarks/throughput_worker.py`` measures of one drain: :class:`Meter` (records, wall
time, this process's and the broker's CPU, collections, the longest stall) and :class:`Watchdog`
(the event loop's lag, for the asyncio clients).  Kept apart from the worker, which drives the
clients: both loops feed the same meter."""

from __future__ import annotations

import asyncio
import gc
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.brokers import cpu_seconds  # noqa: E402

LAG_SLEEP_S = 0.001  # the watchdog's sleep


class Watchdog:
    """The event-loop lag: a task that sleeps LAG_SLEEP_S again and again, noting each wake-up's
    (time, lag in seconds); ``stop()`` also notes the pending sleep if it is overdue (a loop held
    until the end of the drain is not missed)."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        self.expected = time.monotonic() + LAG_SLEEP_S
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            self.expected = time.monotonic() + LAG_SLEEP_S
            await asyncio.sleep(LAG_SLEEP_S)
            now = time.monotonic()
            self.samples.append((now, now - self.expected))

    def stop(self, now: float) -> None:
        if now > self.expected:
            self.samples.append((now, now - self.expected))
        self.task.cancel()


class Meter:
    """The measurement of one drain, fed one (records, value bytes) per poll call by either loop."""

    def __init__(self, records: int, timeout_s: float, broker_pid: int) -> None:
        self.records, self.timeout_s, self.broker_pid = records, timeout_s, broker_pid
        # CLOCK_PROCESS_CPUTIME_ID: every thread of this process (librdkafka's too), ns resolution
        # where /proc counts 10 ms ticks
        self.t0, self.cpu0 = time.monotonic(), time.process_time()
        self.deadline = self.t0 + timeout_s
        self.got = self.value_bytes = 0
        self.first: float | None = None
        self.third: tuple[float, int, int, float, float] | None = None
        self.gc_third: list[int] = []  # collections per generation at the third and at the end
        self.gc_end: list[int] = []
        self.latest, self.stall = 0.0, (0.0, 0)  # the longest wait for records after the first: (seconds, at record)
        self.end: tuple[float, float, float] | None = None

    def broker_cpu(self) -> float:
        return cpu_seconds(self.broker_pid) if self.broker_pid else 0.0

    def add(self, count: int, size: int) -> bool:
        """One poll call's records; True when the drain is over (every record, or the timeout)."""
        now = time.monotonic()
        if count and self.first is None:
            self.first = self.latest = now
        if count:
            self.stall, self.latest = max(self.stall, (now - self.latest, self.got)), now
        self.got, self.value_bytes = self.got + count, self.value_bytes + size
        if self.third is None and count and self.got >= self.records // 3:
            self.third = (now, self.got, self.value_bytes, time.process_time(), self.broker_cpu())
            self.gc_third = [g["collections"] for g in gc.get_stats()]
        if self.got >= self.records or now > self.deadline:
            self.end = (time.monotonic(), time.process_time(), self.broker_cpu())
            self.gc_end = [g["collections"] for g in gc.get_stats()]
            return True
        return False

    def result(self) -> dict[str, Any]:
        assert self.end is not None
        last, cpu_last, broker_last = self.end
        if self.got < self.records:
            return {"ok": False, "error": f"timeout: {self.got} of {self.records} records in {self.timeout_s:.0f} s"}
        assert self.first is not None and self.third is not None
        t3, got3, bytes3, cpu3, broker3 = self.third
        steady, seconds = self.got - got3, max(last - t3, 1e-9)
        return {
            "ok": True, "records": self.got, "value_bytes": self.value_bytes,
            "first_record_s": self.first - self.t0,           # construction, join and first fetch
            "total_s": last - self.t0,
            "steady_records_per_s": steady / seconds,
            "steady_mb_per_s": (self.value_bytes - bytes3) / seconds / 1e6,
            "steady_cpu_s_per_m": (cpu_last - cpu3) / steady * 1e6,
            "steady_broker_cpu_s_per_m": (broker_last - broker3) / steady * 1e6 if self.broker_pid else None,
            "overall_records_per_s": (self.got - 1) / max(last - self.first, 1e-9),  # first to last record
            "cpu_s": cpu_last - self.cpu0,                    # this process, construction to last record
            "longest_stall_s": self.stall[0], "longest_stall_at": self.stall[1],
            "steady_gc_collections": [b - a for a, b in zip(self.gc_third, self.gc_end)],  # gen 0, 1, 2
        }

    def loop_lag(self, samples: list[tuple[float, float]]) -> dict[str, Any]:
        """The watchdog's lags in ms: over the steady span (third to last record) and the whole
        drain; a wake-up counts for a span when its sleep overlapped the span (a loop blocked
        from before the third record to after it counts)."""
        found: dict[str, Any] = {}
        if self.third is None or self.end is None:
            return found
        spans = {"loop_lag": (self.third[0], self.end[0]), "loop_lag_all": (self.t0, self.end[0])}
        for name, (since, until) in spans.items():
            lags = sorted(lag * 1e3 for at, lag in samples if at >= since and at - lag - LAG_SLEEP_S <= until)
            found[f"{name}_samples"] = len(lags)
            for label, q in (("p50", 0.50), ("p99", 0.99), ("max", 1.0)):
                found[f"{name}_{label}_ms"] = lags[max(0, math.ceil(q * len(lags)) - 1)] if lags else None
        return found
