"""The selector-driven network client shared by the consumer's threads.

One lock guards the sockets and in-flight tables; it is never held while a future's listeners
run.  A thread that needs the lock while another sits in ``select`` interrupts it through a
socket pair, so sends from the heartbeat thread are not delayed by a long poll.  What to ask the
cluster for metadata, and when, is metadata_refresh.py's; this module waits for the first answer
(``bootstrap``) and drops the connections of brokers the answers stop naming.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..clock import Clock, Timer
from ..errors import (
    AuthenticationError, FatalGroupError, NoBrokersAvailableError, NodeNotReadyError, WakeupError,
)
from ..error_codes import ErrorCode
from .connection import BrokerConnection, Completion, ConnectionState, IoCounters
from .future import RequestFuture
from .io import EVENT_READ, EVENT_WRITE, IOBackend, SocketIO, Stream
from .metadata import ClusterMetadata
from .metadata_refresh import MetadataRefresh
from .security import PLAINTEXT, Security

log = logging.getLogger("groupclient.network")

# a bootstrap that has had no answer for this long says so at WARNING (it goes on until its timeout)
BOOTSTRAP_WARNING_MS = 5000
_WAITING = {ConnectionState.CONNECTING: "still connecting", ConnectionState.HANDSHAKING: "TLS handshake not done",
            ConnectionState.NEGOTIATING: "connected, but no answer to ApiVersions",
            ConnectionState.AUTHENTICATING: "SASL authentication not done"}


@dataclass(frozen=True)
class NetworkConfig:
    bootstrap_servers: list[tuple[str, int]]
    client_id: str
    request_timeout_ms: int = 30000
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 30000
    max_in_flight_requests_per_connection: int = 5
    metadata_max_age_ms: int = 300000
    allow_auto_create_topics: bool = True
    retry_backoff_ms: int = 100  # the first wait before asking again about a topic that errored
    security: Security = PLAINTEXT  # TLS and SASL (network/security.py)


def parse_bootstrap(servers: str | list[str]) -> list[tuple[str, int]]:
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    parsed = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep:
            host, port = item, "9092"
        try:
            parsed.append((host.strip("[]") or "localhost", int(port)))
        except ValueError:
            raise ValueError(f"bad bootstrap server {item!r}: expected HOST:PORT") from None
    if not parsed:
        raise ValueError("bootstrap_servers is empty")
    return parsed


class NetworkClient:
    def __init__(self, config: NetworkConfig, clock: Clock, rng: random.Random,
                 io: IOBackend | None = None, observer: Callable[[int, int, Any, bool], None] | None = None,
                 io_observer: Callable[[int, int], None] | None = None) -> None:
        """``rng``: every random draw of the client (the least loaded node's start, reconnect
        jitter) comes from it, so a seeded one replays them."""
        self.config = config
        self.clock = clock
        self._rng = rng
        self.metadata = ClusterMetadata(config.metadata_max_age_ms, retry_backoff_ms=config.retry_backoff_ms,
                                        rng=rng)
        self._lock = threading.Lock()
        self._io: IOBackend = io or SocketIO(config.security.ssl_context)
        self._poller = self._io.new_poller()
        self._conns: dict[int, BrokerConnection] = {}
        # node id -> (the stream registered with the poller, its event mask); the stream object
        # is kept because a connection may already have closed it when we unregister
        self._registered: dict[int, tuple[Stream, int]] = {}
        self._coordinators: dict[int, tuple[str, int]] = {}
        # bootstrap servers are nodes with negative ids until metadata names the real ones
        self._bootstrap = {-(i + 1): hp for i, hp in enumerate(config.bootstrap_servers)}
        self._closed = False
        self._wakeup_requested = threading.Event()
        # failures found under the lock outside poll() (a connect that could not start), run by
        # the next poll() outside the lock
        self._deferred: list[Completion] = []
        # told of every answered or failed request: (API key, latency ms, answer or error, failed)
        self.observer = observer
        # told of the bytes sent and received by each poll() that moved any: (sent, received)
        self.io_observer = io_observer
        self._io_counters = IoCounters()
        # the last failed authentication (TLS or SASL), raised by the application's next wait
        self._auth_failure: AuthenticationError | None = None
        self._metadata_refresh = MetadataRefresh(self, config.allow_auto_create_topics, self._locked,
                                                 self._forget_vanished_brokers)

    @property
    def request_timeout_ms(self) -> int:
        return self.config.request_timeout_ms

    # -- nodes ---------------------------------------------------------------------------
    def _known_nodes(self) -> Mapping[int, tuple[str, int]]:
        return self.metadata.brokers or self._bootstrap

    def _address(self, node_id: int) -> tuple[str, int] | None:
        return self._known_nodes().get(node_id) or self._bootstrap.get(node_id) or self._coordinators.get(node_id)

    def _connection(self, node_id: int) -> BrokerConnection | None:
        conn = self._conns.get(node_id)
        address = self._address(node_id)
        if conn is None and address is not None:
            cfg = self.config
            conn = self._conns[node_id] = BrokerConnection(
                node_id, address[0], address[1], client_id=cfg.client_id,
                request_timeout_ms=cfg.request_timeout_ms, reconnect_backoff_ms=cfg.reconnect_backoff_ms,
                reconnect_backoff_max_ms=cfg.reconnect_backoff_max_ms,
                max_in_flight=cfg.max_in_flight_requests_per_connection, rng=self._rng,
                counters=self._io_counters, sasl=cfg.security.sasl)
        return conn

    def add_node(self, node_id: int, host: str, port: int) -> None:
        """Make an address known outside metadata (the group coordinator's connection)."""
        completions: list[Completion] = []
        with self._locked():
            self._coordinators = {**self._coordinators, node_id: (host, port)}
            conn = self._conns.get(node_id)
            if conn is not None and (conn.host, conn.port) != self._address(node_id):
                # dropped, so that the next connection goes to the new address
                completions = self._forget_node(node_id)
        self._finish(completions)  # outside the lock: a listener may call this client

    def least_loaded_node(self) -> int | None:
        """Seed 002's leastLoadedNode: random start; an idle ready node wins at once; then the ready
        node with fewest in-flight; then a connecting node; then the connectable node whose last
        attempt is oldest; else None."""
        with self._locked():
            return self._least_loaded_node(self.clock.monotonic_ms())

    def _least_loaded_node(self, now: int) -> int | None:
        nodes = list(self._known_nodes())
        if not nodes:
            return None
        found_ready, found_connecting, found_can_connect = None, None, None
        best_in_flight = 2**31
        offset = self._rng.randrange(len(nodes))
        for i in range(len(nodes)):
            node_id = nodes[(offset + i) % len(nodes)]
            conn = self._connection(node_id)
            assert conn is not None
            if conn.can_send():
                count = len(conn.in_flight)
                if count == 0:
                    return node_id
                if count < best_in_flight:
                    best_in_flight, found_ready = count, node_id
            elif conn.is_connecting():
                found_connecting = node_id
            elif conn.can_connect(now):
                if found_can_connect is None or self._conns[found_can_connect].last_attempt_ms > conn.last_attempt_ms:
                    found_can_connect = node_id
        if found_ready is not None:
            return found_ready
        if found_connecting is not None:
            return found_connecting
        return found_can_connect

    def connection_count(self) -> int:
        """Connections that are up (kafka-python's connection-count)."""
        with self._locked():
            return sum(1 for conn in self._conns.values() if conn.state is ConnectionState.READY)

    # -- connecting and sending ------------------------------------------------------------
    def ready(self, node_id: int) -> bool:
        """True if a request can go to the node now; otherwise start connecting if allowed."""
        with self._locked():
            conn = self._connection(node_id)
            if conn is None:
                return False
            if conn.can_send():
                return True
            now = self.clock.monotonic_ms()
            if conn.can_connect(now):
                failed = conn.connect(now, self._io)
                self._update_interest(conn)
                if failed:
                    self._deferred.extend(failed)
            return False

    def is_ready(self, node_id: int) -> bool:
        with self._locked():
            conn = self._conns.get(node_id)
            return conn is not None and conn.can_send()

    def connection_failed(self, node_id: int) -> bool:
        """The node is disconnected and backing off after a failed attempt."""
        with self._locked():
            conn = self._conns.get(node_id)
            return conn is not None and conn.state is ConnectionState.DISCONNECTED and conn.failures > 0

    def send(self, node_id: int, request_cls: Any, response_cls: Any, build: Callable[[int], Any],
             timeout_ms: int | None = None) -> RequestFuture[Any]:
        """Send ``build(version)`` at the highest version both sides support."""
        with self._locked():
            conn = self._conns.get(node_id)
            if conn is None or not conn.can_send():
                return RequestFuture.failed_with(NodeNotReadyError(f"node {node_id} is not ready"))
            version = conn.version_for(request_cls.API_KEY)
            if version is None:
                return RequestFuture.failed_with(FatalGroupError(
                    ErrorCode.UNSUPPORTED_VERSION, f"node {node_id} does not serve {request_cls.__name__}"))
            sent_at = self.clock.monotonic_ms()
            future = conn.send(build(version), response_cls, sent_at, timeout_ms)
            self._update_interest(conn)
        observer = self.observer
        if observer is not None:
            api_key = int(request_cls.API_KEY)
            # runs where the future completes (either thread), outside the lock
            future.add_callback(lambda response: observer(api_key, self.clock.monotonic_ms() - sent_at, response, False))
            future.add_errback(lambda exc: observer(api_key, self.clock.monotonic_ms() - sent_at, exc, True))
        return future

    def version_for(self, node_id: int, api_key: int) -> int | None:
        with self._locked():
            conn = self._conns.get(node_id)
            return conn.version_for(api_key) if conn else None

    # -- polling -------------------------------------------------------------------------
    def poll(self, timeout_ms: int) -> None:
        """Do network I/O for up to ``timeout_ms``, then run the completed futures' listeners.

        The lock is not held while waiting in the poller, so the heartbeat thread can send while
        the application thread waits; a stream registered or changed meanwhile wakes the wait.
        """
        with self._locked():
            if self._closed:
                return
            now = self.clock.monotonic_ms()
            deadlines = [d for c in self._conns.values() if (d := c.next_deadline()) is not None]
            if deadlines:
                timeout_ms = max(0, min(timeout_ms, min(deadlines) - now))
            if self._deferred:
                timeout_ms = 0
        ready = self._poller.select(max(timeout_ms, 0))
        completions: list[Completion] = []
        with self._locked():
            if self._closed:
                return
            completions += self._deferred
            self._deferred = []
            for data, events in ready:
                conn, stream = data
                assert isinstance(conn, BrokerConnection)
                if conn.sock is not stream or self._conns.get(conn.node_id) is not conn:
                    continue  # closed or reconnected by another thread since the wait began
                now = self.clock.monotonic_ms()
                if events & EVENT_WRITE:
                    completions += conn.on_writable(now)
                if events & EVENT_READ and conn.sock is not None:
                    completions += conn.on_readable(now)
                self._update_interest(conn)
            now = self.clock.monotonic_ms()
            for conn in list(self._conns.values()):
                expired = conn.expire(now)
                if expired or conn.state is ConnectionState.DISCONNECTED:
                    self._update_interest(conn)
                completions += expired
                failure = conn.take_auth_failure()
                if failure is not None:
                    self._auth_failure = failure
            counters = self._io_counters
            moved = (counters.sent, counters.received)
            counters.sent = counters.received = 0
        if self.io_observer is not None and any(moved):
            self.io_observer(*moved)
        self._finish(completions)

    def poll_until(self, future: RequestFuture[Any] | None, timer: Timer, wakeup: bool = True) -> None:
        """Poll until ``future`` is done or the timer expires; one poll at least.

        With ``wakeup``, a pending ``wakeup()`` raises WakeupError (the application thread's
        calls); the heartbeat thread polls without it.
        """
        while True:
            if wakeup:
                self.maybe_trigger_wakeup()
            if future is not None and future.is_done():
                return
            self.poll(min(timer.remaining_ms(), 100) if future is not None else timer.remaining_ms())
            if wakeup:
                self.raise_failures()
            if future is None or future.is_done() or timer.expired():
                if wakeup:
                    self.maybe_trigger_wakeup()
                return

    def raise_failures(self) -> None:
        """Raise a bug of groupclient's found handling a Metadata answer (every time: it is
        fatal), else the last failed authentication (TLS or SASL) once.  Called from the
        application's waits (``poll_until`` with ``wakeup``), never from the heartbeat thread:
        Kafka's clients likewise throw these from the next ``poll()``, not from a retry loop."""
        with self._locked():
            internal = self._metadata_refresh.internal_error
            failure, self._auth_failure = self._auth_failure, None
        if internal is not None:
            raise internal
        if failure is not None:
            raise failure

    def sleep(self, ms: int, timer: Timer) -> None:
        """Back off for ``ms`` (bounded by the timer), still doing network I/O meanwhile."""
        self.poll_until(None, Timer(self.clock, min(ms, timer.remaining_ms())))

    def wakeup(self) -> None:
        """Make the application thread's current or next blocking call raise WakeupError."""
        self._wakeup_requested.set()
        self.interrupt()

    def maybe_trigger_wakeup(self) -> None:
        if self._wakeup_requested.is_set():
            self._wakeup_requested.clear()
            raise WakeupError("wakeup() was called")

    def interrupt(self) -> None:
        """Make a thread blocked in ``poll`` return early (thread-safe)."""
        self._poller.interrupt()

    def _locked(self) -> _Lock:
        return _Lock(self)

    def _update_interest(self, conn: BrokerConnection) -> None:
        node_id = conn.node_id
        registered = self._registered.get(node_id)
        if registered is not None and registered[0] is not conn.sock:
            self._unregister(node_id)
            registered = None
        if conn.sock is None:
            return
        mask = EVENT_READ | (EVENT_WRITE if conn.wants_write() else 0)
        if registered is None:
            self._poller.register(conn.sock, mask, (conn, conn.sock))
        elif registered[1] != mask:
            self._poller.modify(conn.sock, mask, (conn, conn.sock))
        self._registered[node_id] = (conn.sock, mask)

    def _unregister(self, node_id: int) -> None:
        registered = self._registered.pop(node_id, None)
        if registered is not None:
            self._poller.unregister(registered[0])

    @staticmethod
    def _finish(completions: list[Completion]) -> None:
        for future, ok, value in completions:
            if future.is_done():
                continue
            if ok:
                future.success(value)
            else:
                future.failure(value)

    def _close_node(self, node_id: int) -> list[Completion]:
        conn = self._conns.get(node_id)
        if conn is None:
            return []
        self._unregister(node_id)
        return conn.close(self.clock.monotonic_ms())

    def disconnect(self, node_id: int) -> None:
        with self._locked():
            completions = self._close_node(node_id)
        self._finish(completions)

    # -- metadata ------------------------------------------------------------------------
    def bootstrap(self, timeout_ms: int, refresh: bool = False) -> None:
        """Fetch cluster metadata once (again with ``refresh``), as kafka-python's constructor
        does; a bootstrap server that cannot be reached in time is an error, not an endless retry.
        After BOOTSTRAP_WARNING_MS without an answer it says so at WARNING, with each server's
        last error; the error at the end names them too."""
        timer = Timer(self.clock, timeout_ms)
        started = self.clock.monotonic_ms()
        warned = False
        target = self.metadata.version + 1 if refresh else 1
        if refresh:
            self.metadata.request_update()
        while self.metadata.version < target:
            future = self.maybe_update_metadata()
            # with no request out yet (connecting, or backing off) this waits for the
            # connection's events, 100 ms at most
            self.poll_until(future, Timer(self.clock, min(timer.remaining_ms(), 100)))
            if self.metadata.version >= target:
                return
            if timer.expired():
                raise NoBrokersAvailableError(f"no bootstrap server answered within {timeout_ms} ms "
                                              f"(bootstrap_timeout_ms): {'; '.join(self.bootstrap_errors())}")
            if not warned and self.clock.monotonic_ms() - started >= BOOTSTRAP_WARNING_MS:
                warned = True
                log.warning("no bootstrap server has answered for %d s (trying until bootstrap_timeout_ms, %d ms): %s",
                            BOOTSTRAP_WARNING_MS // 1000, timeout_ms, "; ".join(self.bootstrap_errors()))

    def bootstrap_errors(self) -> list[str]:
        """Each bootstrap server with why the last attempt to reach it failed."""
        with self._locked():
            found = []
            for node_id, (host, port) in self._bootstrap.items():
                conn = self._conns.get(node_id)
                error = conn.last_error if conn is not None else None
                if conn is None or conn.last_attempt_ms < 0:
                    why = "not tried yet"
                elif error is not None:  # the last failure says more than an attempt under way
                    why = getattr(error, "detail", None) or str(error)
                else:
                    why = _WAITING.get(conn.state, "no answer yet")
                found.append(f"{host}:{port} ({why})")
            return found

    def bootstrapped(self) -> bool:
        """True once a broker has answered a Metadata request."""
        return self.metadata.version > 0

    def set_topics(self, topics: set[str] | None) -> None:
        """Topics to keep metadata for; None means every topic (pattern subscriptions)."""
        self._metadata_refresh.set_topics(topics)

    def maybe_update_metadata(self) -> RequestFuture[Any] | None:
        """Send a Metadata request if one is due; return the in-flight one, if any."""
        return self._metadata_refresh.maybe_update_metadata()

    def fetch_all_topics(self, timer: Timer) -> None:
        """One Metadata request for every topic, creating none and leaving the topics this client
        keeps metadata for unchanged (``topics()``, ``partitions_for_topic()``)."""
        self._metadata_refresh.fetch_all_topics(timer)

    def _forget_vanished_brokers(self) -> None:
        """Drop the connections of nodes the metadata no longer names, or names at another
        address (a broker advertised at a bad address, then at a good one)."""
        with self._locked():
            brokers = self.metadata.brokers
            gone = [n for n in self._conns if n >= 0 and n not in brokers and n not in self._coordinators]
            moved = [n for n, c in self._conns.items() if n >= 0 and n not in gone
                     and (c.host, c.port) != self._address(n)]
            completions: list[Completion] = []
            for node_id in gone + moved + [n for n in self._conns if n < 0 and brokers]:
                completions += self._forget_node(node_id)
        self._finish(completions)

    def _forget_node(self, node_id: int) -> list[Completion]:
        completions = self._close_node(node_id)
        self._conns.pop(node_id, None)
        return completions

    def close(self) -> None:
        with self._locked():
            completions: list[Completion] = []
            for node_id in list(self._conns):
                completions += self._close_node(node_id)
            completions += self._deferred
            self._deferred = []
            self._closed = True
            self._poller.close()
        self._finish(completions)


class _Lock:
    """The client lock; a thread that must wait for it first interrupts a blocked select."""

    __slots__ = ("client",)

    def __init__(self, client: NetworkClient) -> None:
        self.client = client

    def __enter__(self) -> None:
        lock = self.client._lock
        if not lock.acquire(blocking=False):
            self.client.interrupt()
            lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self.client._lock.release()
