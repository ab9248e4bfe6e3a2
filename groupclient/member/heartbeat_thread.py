"""The background thread that keeps a member alive while the application processes records.

It sends heartbeats when the pure :class:`Heartbeat` timer says so, polls the network when the
application does not, and enforces ``max_poll_interval_ms``: a member whose application has not
called ``poll()`` in time leaves the group (its partitions are dropped at once so nobody else's
assignment can overlap) and rejoins on its next poll.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..clock import ThreadHandle, Timer
from .membership import GroupMembership

log = logging.getLogger("groupclient.group")

IDLE_CHECK_MS = 250  # how often a non-stable member's thread looks whether it became stable


class HeartbeatThread:
    def __init__(self, membership: GroupMembership, on_poll_timeout: Callable[[], None]) -> None:
        self.membership = membership
        self.on_poll_timeout = on_poll_timeout
        self._stop_event = threading.Event()
        self._wake = threading.Event()
        self._thread: ThreadHandle | None = None

    def start(self) -> None:
        name = f"groupclient-heartbeat-{self.membership.config.group_id}"
        self._thread = self.membership.clock.start_thread(name, self.run)

    def is_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        self._stop_event.set()
        self._wake.set()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout_s)

    def run(self) -> None:
        m = self.membership
        while not self._stop_event.is_set():
            try:
                wait_ms = self._step()
            except Exception as exc:  # surfaced from poll(), never lost
                log.exception("heartbeat thread failed")
                m.set_fatal(exc)
                wait_ms = m.config.retry_backoff_ms
            m.clock.wait(self._wake, max(wait_ms, 1))
            self._wake.clear()

    def _step(self) -> int:
        m = self.membership
        now = m.clock.monotonic_ms()
        if not m.is_stable():
            return IDLE_CHECK_MS  # the application thread drives joins; this thread waits for STABLE
        if m.heartbeat.poll_timeout_expired(now):
            log.warning("group %s: poll() was not called within max_poll_interval_ms (%d ms); leaving the group",
                        m.config.group_id, m.config.rebalance_timeout_ms)
            self.on_poll_timeout()
            leave = m.maybe_leave_group("the application did not call poll() within max_poll_interval_ms")
            # the application is not polling, so this thread sends the LeaveGroup out itself; no
            # join can be in flight (the member was STABLE), so no assignor runs on this thread
            m.client.poll_until(leave, Timer(m.clock, min(m.config.request_timeout_ms, 5000)), wakeup=False)
            return 100
        if m.coordinator_unknown():
            return 100  # rediscovery happens on the application thread
        if m.heartbeat.session_timeout_expired(now):
            m.mark_coordinator_dead("no heartbeat answer within the session timeout")
            return 100
        if m.heartbeat.should_heartbeat(now):
            m.send_heartbeat()
        # poll so that answers are read even while the application is busy
        m.client.poll_until(None, Timer(m.clock, 0), wakeup=False)
        # sleep until something is due: the next heartbeat or the poll deadline, nothing sooner
        next_heartbeat = m.heartbeat.time_to_next_heartbeat(m.clock.monotonic_ms())
        return min(next_heartbeat, m.heartbeat.time_to_poll_timeout(now) + 1)
