"""Injected time.

Protocol cores never read the clock themselves: they take ``now`` (milliseconds on a
monotonic scale) from whoever drives them.  Drivers hold a :class:`Clock`; tests hold a
:class:`FakeClock` and move it by hand.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def monotonic_ms(self) -> int:
        """Milliseconds on a scale that never goes backwards (deadlines, timers)."""

    def wall_ms(self) -> int:
        """Milliseconds since the Unix epoch (record and commit timestamps)."""


class SystemClock:
    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, start_ms: int = 1_000_000, wall_offset_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._wall_offset = wall_offset_ms

    def monotonic_ms(self) -> int:
        return self._now

    def wall_ms(self) -> int:
        return self._wall_offset + self._now

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError("a clock does not go backwards")
        self._now += ms
        return self._now


class Timer:
    """A deadline on a clock (the Java client's ``Timer``); ``timeout_ms=None`` never expires."""

    FOREVER_MS = 2**62

    def __init__(self, clock: Clock, timeout_ms: float | None) -> None:
        self.clock = clock
        now = clock.monotonic_ms()
        self.deadline = now + (self.FOREVER_MS if timeout_ms is None else max(int(timeout_ms), 0))

    def remaining_ms(self) -> int:
        return max(0, self.deadline - self.clock.monotonic_ms())

    def expired(self) -> bool:
        return self.clock.monotonic_ms() >= self.deadline
