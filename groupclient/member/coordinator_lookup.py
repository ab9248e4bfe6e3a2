"""Where the group's coordinator is: FindCoordinator, its connections, and forgetting it.

Either thread may look the coordinator up (the heartbeat thread does so by itself while the
application is busy, as Java's does) and either may find it dead (a failed request, an answer
that says it moved).  The coordinator gets two connections of its own, apart from the broker's:
one for group requests and one for heartbeats, because a broker answers one request per
connection at a time, so on the first a heartbeat would wait behind a JoinGroup the coordinator
holds for up to the rebalance timeout.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Any

from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse

from ..attempts import reason
from ..clock import Timer
from ..error_codes import ErrorCode
from ..errors import DisconnectedError, NodeNotReadyError, ProtocolError, RequestTimedOutError, RetriableError
from ..network.backoff import ExponentialBackoff
from ..network.future import RequestFuture
from ..network.transport import Transport
from ..protocol.apis import ApiKey
from ..protocol.error_table import error_for
from .types import COORDINATOR_ID_BASE, HEARTBEAT_ID_BASE

log = logging.getLogger("groupclient.member")

# the longest wait between two lookups that failed or found a coordinator that cannot be reached
# (Java's retry.backoff.max.ms default, which groupclient does not make a setting of its own)
RETRY_BACKOFF_MAX_MS = 1000


def heartbeat_connection(coordinator_connection: int) -> int:
    """The connection id heartbeats to this coordinator go over."""
    return HEARTBEAT_ID_BASE - (COORDINATOR_ID_BASE - coordinator_connection)


class CoordinatorLookup:
    """The coordinator of one group, as this member knows it (``connection`` is None while unknown)."""

    def __init__(self, client: Transport, group_id: str, retry_backoff_ms: int, rng: random.Random) -> None:
        self.client = client
        self.group_id = group_id
        self._backoff = ExponentialBackoff(retry_backoff_ms, max(retry_backoff_ms, RETRY_BACKOFF_MAX_MS))
        self._rng = rng  # the consumer's (seeded in the simulator): the jitter of the waits only
        self._lock = threading.Lock()
        self._connection: int | None = None
        self._find_future: RequestFuture[int] | None = None
        # lookups that failed, or found a coordinator whose connection then failed, since the
        # coordinator last answered or was seen connected; no lookup before ``_retry_at`` (Java's
        # ensureCoordinatorReady sleeps the same backoff: without it a member cut off from its
        # coordinator's broker alone, whom the others keep naming, asked for it every few ms)
        self._failures = 0
        self._retry_at = 0
        # why the coordinator was last lost or not found: what a call that ran out of time
        # while waiting for it says (``problem``)
        self._problem: str | None = None

    @property
    def connection(self) -> int | None:
        """The connection id of the coordinator, or None while it is unknown."""
        with self._lock:
            return self._connection

    @property
    def problem(self) -> str | None:
        """Why the coordinator was last forgotten or not found (None if it never was)."""
        with self._lock:
            return self._problem

    def _note_problem(self, problem: str) -> None:
        with self._lock:
            self._problem = problem

    def unknown(self) -> bool:
        """True when no coordinator is known, or its connection failed (then it is forgotten)."""
        with self._lock:
            coordinator = self._connection
        if coordinator is None:
            return True
        if self.client.connection_failed(coordinator):
            # only that one: the other thread may have found the next coordinator meanwhile
            if self.mark_dead("the connection to the coordinator failed", coordinator):
                self._back_off()
            return self.connection is None
        return False

    def _back_off(self) -> None:
        """One more failure in a row: the next lookup waits the backoff that follows it."""
        now = self.client.clock.monotonic_ms()
        with self._lock:
            wait = self._backoff.backoff_ms(self._failures, self._rng)
            self._failures += 1
            self._retry_at = now + wait

    def _reached(self) -> None:
        """The coordinator is connected, or answered: the next failure backs off from the start
        (whichever thread saw it; a poll that finds the coordinator known does not look again)."""
        with self._lock:
            self._failures = 0

    def lookup_wait_ms(self) -> int:
        """How long until the next lookup may go out (0: now)."""
        now = self.client.clock.monotonic_ms()
        with self._lock:
            return max(0, self._retry_at - now)

    def mark_dead(self, reason: str, connection: int | None = None) -> bool:
        """Forget the coordinator and close its connections; the next request looks it up again.
        With ``connection``, only if that is still the coordinator's (a failure seen on an old
        coordinator's connection must not forget a newer one).  True if this call forgot it."""
        with self._lock:
            coordinator = self._connection
            if connection is not None and coordinator != connection:
                return False
            self._connection = None
            self._problem = reason
        if coordinator is not None:
            log.info("group %s: coordinator %d is unavailable (%s); rediscovering", self.group_id,
                     COORDINATOR_ID_BASE - coordinator, reason)
            self.client.disconnect(coordinator)
            self.client.disconnect(heartbeat_connection(coordinator))
        return coordinator is not None

    def ensure_ready(self, timer: Timer) -> bool:
        """Find the coordinator and connect to it, within the timer; False if it ran out.  A
        non-retriable FindCoordinator answer is raised.

        Connected, not only known, as Java's ensureCoordinatorReady: a JoinGroup sent before the
        connection is up would only fail and be retried after a backoff."""
        while True:
            if not self._find(timer):
                return False
            coordinator = self.connection
            if coordinator is None:
                continue
            if self.client.ready(coordinator):
                self._reached()
                return True
            if timer.expired():
                return False
            # connecting (or backing off): a connect or ApiVersions event ends the wait early
            self.client.poll_until(None, Timer(self.client.clock, min(timer.remaining_ms(), 100)))

    def _find(self, timer: Timer) -> bool:
        while self.unknown():
            wait = self.lookup_wait_ms()
            if wait > 0:
                self.client.sleep(wait, timer)
                if timer.expired():
                    return not self.unknown()
                continue
            future = self.lookup()
            self.client.poll_until(future, timer)
            if not future.is_done():
                return False
            if future.failed():
                exc = future.exception
                assert exc is not None
                if not isinstance(exc, RetriableError):
                    raise exc
                self._note_problem(f"FindCoordinator: {reason(exc)}")
                self.client.metadata.request_update()
                if isinstance(exc, NodeNotReadyError):
                    # not sent: no broker is connected yet, the wait is for a connection (a
                    # failure that was sent backs off in lookup(), for either thread)
                    self.client.sleep(self._backoff.initial_ms, timer)
            if timer.expired():
                return not self.unknown()
        return True

    def lookup(self) -> RequestFuture[int]:
        """Send FindCoordinator, or return the one in flight: either thread may call this, and
        the two get the same lookup (one locked step decides who sends it)."""
        with self._lock:
            find = self._find_future
            if find is not None and not find.is_done():
                return find
            find = self._find_future = RequestFuture()
        find.add_errback(self._lookup_failed)
        # sent outside the lock (never I/O under it); the other thread meanwhile waits on ``find``
        self._send_find_coordinator().chain(find)
        return find

    def _lookup_failed(self, exc: BaseException) -> None:
        """A lookup that went out and failed backs off, whichever thread sent it; one not sent
        (no broker connected yet) waits for a connection instead."""
        if isinstance(exc, RetriableError) and not isinstance(exc, NodeNotReadyError):
            self._back_off()

    def _send_find_coordinator(self) -> RequestFuture[int]:
        node = self.client.least_loaded_node()
        if node is None:
            return RequestFuture.failed_with(NodeNotReadyError("no broker is available"))
        if not self.client.ready(node):
            return RequestFuture.failed_with(NodeNotReadyError(f"node {node} is not connected yet"))
        group_id = self.group_id

        def build(version: int) -> Any:
            if version >= 4:
                return FindCoordinatorRequest(version=version, key_type=0, coordinator_keys=[group_id])
            return FindCoordinatorRequest(version=version, key=group_id, key_type=0)

        future = self.client.send(node, FindCoordinatorRequest, FindCoordinatorResponse, build)
        return future.compose(self._handle_find_coordinator)

    def _handle_find_coordinator(self, response: Any, future: RequestFuture[int]) -> None:
        if response.version >= 4:
            if len(response.coordinators or ()) != 1:
                raise ProtocolError(f"a FindCoordinator answer for one group has "
                                    f"{len(response.coordinators or ())} coordinators")
            found = response.coordinators[0]
            error, node_id, host, port = found.error_code, found.node_id, found.host, found.port
        else:
            error, node_id, host, port = response.error_code, response.node_id, response.host, response.port
        if error:
            return future.failure(error_for(error, ApiKey.FIND_COORDINATOR))
        connection = COORDINATOR_ID_BASE - node_id
        self.client.add_node(connection, host, port)
        self.client.add_node(heartbeat_connection(connection), host, port)
        with self._lock:
            self._connection = connection
        log.info("group %s: coordinator is node %d at %s:%d", self.group_id, node_id, host, port)
        self.client.ready(connection)
        self.client.ready(heartbeat_connection(connection))
        future.success(connection)

    def send(self, request_cls: Any, response_cls: Any, build: Callable[[int], Any], timeout_ms: int | None = None,
             heartbeat: bool = False) -> RequestFuture[Any]:
        """Send to the coordinator (over its heartbeat connection with ``heartbeat``); a request that
        fails on the connection (closed, timed out) marks the coordinator dead."""
        coordinator = self.connection
        if coordinator is None:
            return RequestFuture.failed_with(RetriableError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no coordinator"))
        node = heartbeat_connection(coordinator) if heartbeat else coordinator
        if not self.client.ready(node):
            return RequestFuture.failed_with(NodeNotReadyError("the coordinator is not connected yet"))
        future = self.client.send(node, request_cls, response_cls, build, timeout_ms)

        def on_failure(exc: BaseException) -> None:
            if isinstance(exc, (DisconnectedError, RequestTimedOutError)):
                self.mark_dead(str(exc), coordinator)  # that coordinator, not one found since

        future.add_callback(lambda _: self._reached()).add_errback(on_failure)
        return future
