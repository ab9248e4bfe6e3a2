"""Injected time, and the two other things that depend on it: waiting and background threads.

Protocol cores never read the clock themselves: they take ``now`` (milliseconds on a
monotonic scale) from whoever drives them.  Drivers hold a :class:`Clock`.  Every blocking wait
of the client outside the network poller goes through :meth:`Clock.wait`, and its background
thread is started by :meth:`Clock.start_thread`, so that the deterministic simulator in
:mod:`groupclient.testing` can run a whole group on one fake clock.  Single-threaded unit tests
hold a :class:`FakeClock` and move it by hand.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol


class ThreadHandle(Protocol):
    def join(self, timeout_s: float | None = None) -> None: ...

    def is_alive(self) -> bool: ...


class Clock(Protocol):
    def monotonic_ms(self) -> int:
        """Milliseconds on a scale that never goes backwards (deadlines, timers)."""

    def wall_ms(self) -> int:
        """Milliseconds since the Unix epoch (record and commit timestamps)."""

    def wait(self, event: threading.Event, timeout_ms: int) -> bool:
        """Block until ``event`` is set or ``timeout_ms`` passed; whether it is set."""

    def start_thread(self, name: str, target: Callable[[], None]) -> ThreadHandle:
        """Run ``target`` on a new daemon thread."""


def _daemon_thread(name: str, target: Callable[[], None]) -> ThreadHandle:
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread


class SystemClock:
    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def wait(self, event: threading.Event, timeout_ms: int) -> bool:
        return event.wait(max(timeout_ms, 0) / 1000)

    def start_thread(self, name: str, target: Callable[[], None]) -> ThreadHandle:
        return _daemon_thread(name, target)


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, start_ms: int = 1_000_000, wall_offset_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._wall_offset = wall_offset_ms

    def monotonic_ms(self) -> int:
        return self._now

    def wall_ms(self) -> int:
        return self._wall_offset + self._now

    def wait(self, event: threading.Event, timeout_ms: int) -> bool:
        """A fake sleep: when the event is not set, time moves on by ``timeout_ms``."""
        if not event.is_set():
            self.advance(max(timeout_ms, 0))
        return event.is_set()

    def start_thread(self, name: str, target: Callable[[], None]) -> ThreadHandle:
        return _daemon_thread(name, target)

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
        # what the timer was given, for messages: None when it never expires
        self.timeout_ms = None if timeout_ms is None else max(int(timeout_ms), 0)
        self.deadline = now + (self.FOREVER_MS if self.timeout_ms is None else self.timeout_ms)

    def remaining_ms(self) -> int:
        return max(0, self.deadline - self.clock.monotonic_ms())

    def expired(self) -> bool:
        return self.clock.monotonic_ms() >= self.deadline
