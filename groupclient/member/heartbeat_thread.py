"""The background thread that keeps a member alive while the application processes records.

It sends heartbeats when the pure :class:`Heartbeat` timer says so, looks the coordinator up
again by itself when it was lost (the application may not poll for a while), reads answers when
the application does not poll, gives the partitions up the moment the ownership lease ends, and
enforces ``max_poll_interval_ms``: a member whose application has not called ``poll()`` in time
leaves the group (its partitions are dropped at once so nobody else's assignment can overlap)
and rejoins on its next poll.  It waits on the injected clock, so the simulator can run it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from typing import Protocol

from ..clock import Clock, ThreadHandle, Timer
from ..network.future import RequestFuture
from ..network.transport import Transport
from .coordinator_lookup import CoordinatorLookup
from .types import GroupConfig

log = logging.getLogger("groupclient.member")

IDLE_CHECK_MS = 250  # how often a member that has not joined looks whether it has


class Beating(Protocol):
    """What the thread asks of a member: every :class:`~.membership.Membership` (classic and
    consumer protocol), and a share group's member (:mod:`.share_member`)."""

    client: Transport
    clock: Clock
    config: GroupConfig
    coordinator: CoordinatorLookup

    def set_fatal(self, error: BaseException) -> None: ...
    def coordinator_unknown(self) -> bool: ...
    def heartbeat_enabled(self) -> bool: ...
    def send_heartbeat_if_due(self, now: int) -> RequestFuture[None] | None: ...
    def time_to_next_heartbeat(self, now: int) -> int: ...
    def time_to_poll_timeout(self, now: int) -> int: ...
    def time_to_lease_end(self, now: int) -> int | None: ...
    def check_lease(self, now: int) -> bool: ...

    def leave_if_poll_timed_out(self, now: int,
                                before_sending: Callable[[], None]) -> tuple[bool, RequestFuture[None] | None]: ...


class HeartbeatThread:
    def __init__(self, member: Beating, on_poll_timeout: Callable[[], None]) -> None:
        self.member = member
        self.on_poll_timeout = on_poll_timeout
        self._stop_event = threading.Event()
        self._wake = threading.Event()
        self._thread: ThreadHandle | None = None

    def start(self) -> None:
        name = f"groupclient-heartbeat-{self.member.config.group_id}"
        self._thread = self.member.clock.start_thread(name, self.run)

    def is_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        self._stop_event.set()
        self._wake.set()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout_s)

    def run(self) -> None:
        m = self.member
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
        """One turn: what is due now; returns how long nothing else is due (ms)."""
        m = self.member
        now = m.clock.monotonic_ms()
        if not m.heartbeat_enabled():
            # the application thread drives joins; a cooperative member keeps its partitions
            # meanwhile, so their lease is still watched here
            if m.check_lease(now):
                return m.config.retry_backoff_ms
            lease = m.time_to_lease_end(now)
            return IDLE_CHECK_MS if lease is None else max(1, min(IDLE_CHECK_MS, lease))
        left, leave = m.leave_if_poll_timed_out(now, before_sending=self.on_poll_timeout)
        if left:
            # the application is not polling, so this thread sends the LeaveGroup out itself; no
            # join can be in flight (the member was STABLE), so no assignor runs on this thread
            m.client.poll_until(leave, Timer(m.clock, min(m.config.request_timeout_ms, 5000)), wakeup=False)
            return 100
        if m.check_lease(now):
            return m.config.retry_backoff_ms
        wait = m.config.retry_backoff_ms
        if m.coordinator_unknown():
            # Java's heartbeat thread looks the coordinator up itself: a member whose application
            # is busy must not lose its place because nobody asked where the coordinator went
            # (after the backoff of the lookups that failed)
            backoff = m.coordinator.lookup_wait_ms()
            if backoff:
                wait = max(wait, backoff)
            else:
                m.coordinator.lookup()
        elif m.send_heartbeat_if_due(now) is not None:
            wait = m.config.heartbeat_interval_ms
        # poll so that answers are read even while the application is busy
        m.client.poll_until(None, Timer(m.clock, 0), wakeup=False)
        now = m.clock.monotonic_ms()
        if not m.coordinator_unknown():
            wait = m.time_to_next_heartbeat(now)
        lease = m.time_to_lease_end(now)
        if lease is not None:
            wait = min(wait, lease)
        # sleep until something is due: the next heartbeat, the lease end or the poll deadline
        return min(wait, m.time_to_poll_timeout(now) + 1)
