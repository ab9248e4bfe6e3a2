"""When to heartbeat and when a member must give up: pure functions of ``now`` (ms).

Mirrors the Java client's ``Heartbeat``: a session timer reset by each answered heartbeat, an
interval timer that says when to send the next one, and a poll timer that enforces
``max_poll_interval_ms`` on the application.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Heartbeat:
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    retry_backoff_ms: int
    last_sent: int = 0
    last_received: int = 0
    last_session_reset: int = 0
    last_poll: int = 0
    heartbeat_failed: bool = False
    in_flight: bool = False

    def __post_init__(self) -> None:
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms must be lower than session_timeout_ms")

    # -- events --------------------------------------------------------------------------
    def poll(self, now: int) -> None:
        """The application called poll(): the poll timer starts again."""
        self.last_poll = now

    def sent(self, now: int) -> None:
        self.last_sent = now
        self.heartbeat_failed = False
        self.in_flight = True

    def received(self, now: int) -> None:
        self.last_received = now
        self.last_session_reset = now
        self.in_flight = False

    def failed(self, now: int) -> None:
        """The heartbeat failed: try again after the retry backoff, not a whole interval."""
        self.heartbeat_failed = True
        self.in_flight = False

    def reset_timeouts(self, now: int) -> None:
        self.last_session_reset = now
        self.last_poll = now
        self.heartbeat_failed = False
        self.in_flight = False

    # -- decisions -----------------------------------------------------------------------
    def time_to_next_heartbeat(self, now: int) -> int:
        if self.in_flight:
            return self.heartbeat_interval_ms
        wait = self.retry_backoff_ms if self.heartbeat_failed else self.heartbeat_interval_ms
        return max(0, self.last_sent + wait - now)

    def should_heartbeat(self, now: int) -> bool:
        return not self.in_flight and self.time_to_next_heartbeat(now) == 0

    def session_timeout_expired(self, now: int) -> bool:
        return now - max(self.last_session_reset, self.last_received) > self.session_timeout_ms

    def poll_timeout_expired(self, now: int) -> bool:
        return now - self.last_poll > self.max_poll_interval_ms

    def time_to_poll_timeout(self, now: int) -> int:
        return max(0, self.last_poll + self.max_poll_interval_ms - now)
