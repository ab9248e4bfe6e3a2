"""A TCP proxy in front of one Kafka broker that cuts off, resets, delays or refuses chosen clients.

A chaos run on a real cluster (tests/kafka/cluster.py) must fail one member's path to one broker
while the other clients, and the brokers' own replication, carry on.  Every client connects from
127.0.0.1, so the proxy tells them apart by the ``client_id`` of each connection's first request
(every request header starts ``int32 size, int16 api_key, int16 api_version, int32 correlation_id,
int16 length, client_id``); the bytes flow unchanged, the first request held only until then.

A rule names clients by a client_id prefix (``"m3."``: ``m3.0``, ``m3.1``; ``""``: everyone); the
longest matching prefix rules.  ``blackhole``: nothing passes either way (read and dropped), the
connection stays open, the client's requests time out, as behind a partition.  ``delay``: both ways
``delay_ms`` late.  ``refuse``: connections closed (RST) once identified.  ``reset`` is no standing
rule: the current connections closed once (RST).  ``heal`` removes rules and closes (RST) the
blackholed connections rather than resuming them: the client reconnects, as after a real partition.

One selector thread serves every socket, so a delay is a due time on each queued chunk, and a
change of rules runs on that thread between events: when ``blackhole()`` returns, it holds.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import selectors
import socket
import struct
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from types import TracebackType
from typing import TypeVar

T = TypeVar("T")

_HEADER = struct.Struct(">ihhih")  # size, api_key, api_version, correlation_id, client_id length
_CHUNK = 65536
_HIGH_WATER = 1 << 20  # bytes queued toward one side before the other side is no longer read
_MAX_REQUEST = 100 * 1024 * 1024  # the broker's socket.request.max.bytes: beyond it, no Kafka request
_RST = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends RST instead of FIN


def client_id_of(head: bytes | bytearray) -> str | None:
    """The client_id of the request ``head`` starts with; None until enough bytes arrived; ``""``
    for a null client_id, or for bytes that are no Kafka request (nobody's, so only ``""`` rules)."""
    if len(head) < _HEADER.size:
        return None
    size, _, _, _, length = _HEADER.unpack_from(head)
    if length == -1:
        return ""
    if length < -1 or not _HEADER.size - 4 + length <= size <= _MAX_REQUEST:
        return ""
    if len(head) < _HEADER.size + length:
        return None
    return bytes(head[_HEADER.size:_HEADER.size + length]).decode("utf-8", "replace")


@dataclass(frozen=True)
class Rule:
    mode: str  # "blackhole", "delay" or "refuse"
    delay_s: float = 0.0


@dataclass
class ProxyStats:
    """The counters (``stats()`` gives a copy); bytes per client_id (``""``: not identified)."""

    accepted: int = 0
    upstream_failures: int = 0  # connections closed because the broker could not be reached
    to_broker: Counter[str] = field(default_factory=Counter)
    to_client: Counter[str] = field(default_factory=Counter)
    discarded: Counter[str] = field(default_factory=Counter)  # dropped by a blackhole
    acted: Counter[tuple[str, str]] = field(default_factory=Counter)  # (mode, prefix): connections hit

    def forwarded(self, client_id: str) -> int:
        return self.to_broker.get(client_id, 0) + self.to_client.get(client_id, 0)


class _Side:  # one socket of a connection, and the chunks (due time, bytes) to write to it
    __slots__ = ("sock", "out", "queued", "eof", "events")

    def __init__(self, sock: socket.socket) -> None:
        self.sock: socket.socket | None = sock
        self.out: deque[tuple[float, bytes]] = deque()
        self.queued = 0
        self.eof = False
        self.events = 0  # what the selector watches for (0: not registered)


class _Conn:
    __slots__ = ("client", "broker", "connecting", "client_id", "head", "blackholed", "counted")

    def __init__(self, client: socket.socket, broker: socket.socket) -> None:
        self.client = _Side(client)
        self.broker = _Side(broker)
        self.connecting = True
        self.client_id: str | None = None
        self.head = bytearray()  # the client's bytes until its first request header is read
        self.blackholed = False
        self.counted: tuple[str, str] | None = None  # the rule last counted in ``acted``

    def peer(self, side: _Side) -> _Side:
        return self.broker if side is self.client else self.client


class FaultProxy:
    """Listens on 127.0.0.1 (``port``: 0 for an ephemeral one) and forwards each connection to
    127.0.0.1:``upstream_port``, applying the rules.  Serves from construction until ``close()``."""

    def __init__(self, upstream_port: int, name: str, port: int = 0, call_timeout_s: float = 5.0) -> None:
        self.upstream_port = upstream_port
        self.name = name
        self.call_timeout_s = call_timeout_s
        self.errors: list[BaseException] = []  # unexpected exceptions of the loop (a test asserts none)
        self._rules: dict[str, Rule] = {}
        self._conns: set[_Conn] = set()
        self._lock = threading.Lock()  # the counters and the queue of calls, shared with callers
        self._calls: list[Callable[[], None]] | None = []  # None once the loop has stopped
        self._stats = ProxyStats()
        self._stopping = False
        # SO_REUSEADDR (create_server's default): a fixed port can be taken again at once
        self._listener = socket.create_server(("127.0.0.1", port), backlog=128)
        self.port: int = self._listener.getsockname()[1]
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()  # wakes the loop for calls and close()
        for s in (self._listener, self._wake_r, self._wake_w):
            s.setblocking(False)
        self._sel.register(self._listener, selectors.EVENT_READ, "listener")
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wakeup")
        self._thread: threading.Thread | None = threading.Thread(
            target=self._run, name=f"fault-proxy-{name}-loop", daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    # -- the API: each change runs on the loop's thread, done when the call returns ----------------
    def blackhole(self, prefix: str) -> None:
        self._call(lambda: self._set_rule(prefix, Rule("blackhole")))

    def delay(self, prefix: str, delay_ms: float) -> None:
        self._call(lambda: self._set_rule(prefix, Rule("delay", delay_ms / 1000)))

    def refuse(self, prefix: str) -> None:
        self._call(lambda: self._set_rule(prefix, Rule("refuse")))

    def reset(self, prefix: str) -> int:
        """Close (RST) the current connections of the clients ``prefix`` names; how many."""
        def act() -> int:
            hit = [c for c in self._conns if c.client_id is not None and c.client_id.startswith(prefix)]
            for conn in hit:
                self._close(conn, abort=True)
            with self._lock:
                self._stats.acted[("reset", prefix)] += len(hit)
            return len(hit)
        return self._call(act)

    def heal(self, prefix: str | None = None) -> None:
        """Remove every rule, or the one for ``prefix``; blackholed connections are closed."""
        def act() -> None:
            for each in list(self._rules) if prefix is None else [prefix]:
                self._rules.pop(each, None)
            self._apply_all()
        self._call(act)

    def rules(self) -> dict[str, Rule]:
        return self._call(lambda: dict(self._rules))

    def connections(self) -> Counter[str]:
        """The open connections per client_id (identified ones only)."""
        return self._call(lambda: Counter(c.client_id for c in self._conns if c.client_id is not None))

    def stats(self) -> ProxyStats:
        """The counters, read on the loop's thread (between two of its steps: bytes a client has
        received are counted by then; a copy read from another thread could miss the last
        write's, which the loop counts just after sending them); after close(), as they ended."""
        def read() -> ProxyStats:
            with self._lock:
                return copy.deepcopy(self._stats)
        thread = self._thread
        if thread is None or not thread.is_alive():
            return read()
        return self._call(read)

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop: every connection and the listener closed, the thread joined (or TimeoutError)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stopping = True
        self._wake()
        thread.join(timeout_s)
        if thread.is_alive():
            raise TimeoutError(f"fault proxy {self.name}: its thread did not stop within {timeout_s} s")

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _call(self, fn: Callable[[], T]) -> T:
        thread = self._thread
        if thread is None or not thread.is_alive():
            raise RuntimeError(f"fault proxy {self.name} is closed")
        future: Future[T] = Future()

        def run() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the caller
                future.set_exception(exc)
        with self._lock:
            if self._calls is None:
                raise RuntimeError(f"fault proxy {self.name} is closed")
            self._calls.append(run)
        self._wake()
        try:
            return future.result(self.call_timeout_s)
        except FutureTimeout:
            raise TimeoutError(f"fault proxy {self.name}: no answer within {self.call_timeout_s} s") from None

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # full (a wake-up is pending anyway) or closed (stopped)
            self._wake_w.send(b"x")

    # -- rules -----------------------------------------------------------------------------------
    def _rule_for(self, client_id: str) -> tuple[str, Rule] | None:
        prefix = max((p for p in self._rules if client_id.startswith(p)), key=len, default=None)
        return None if prefix is None else (prefix, self._rules[prefix])

    def _set_rule(self, prefix: str, rule: Rule) -> None:
        self._rules[prefix] = rule
        self._apply_all()

    def _apply_all(self) -> None:
        for conn in list(self._conns):
            self._apply(conn)

    def _apply(self, conn: _Conn) -> None:
        """Make an identified connection what the rules now say."""
        if conn.client_id is None:
            return
        found = self._rule_for(conn.client_id)
        mode = found[1].mode if found else None
        if conn.blackholed and mode != "blackhole":
            self._close(conn, abort=True)  # healed: the client reconnects
            return
        if found is not None and (found[1].mode, found[0]) != conn.counted:
            conn.counted = (found[1].mode, found[0])
            with self._lock:
                self._stats.acted[conn.counted] += 1
        if mode == "refuse":
            self._close(conn, abort=True)
        elif mode == "blackhole" and not conn.blackholed:
            conn.blackholed = True
            dropped = conn.client.queued + conn.broker.queued + len(conn.head)
            for side in (conn.client, conn.broker):
                side.out.clear()
                side.queued = 0
            conn.head.clear()
            with self._lock:
                self._stats.discarded[conn.client_id] += dropped

    # -- the loop --------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._stopping:
                now = time.monotonic()
                timeout = self._watch(now)
                for key, events in self._sel.select(timeout):
                    try:
                        self._dispatch(key.data, events)
                    except Exception as exc:  # a bug here must not stop every other connection
                        self.errors.append(exc)
                        if isinstance(key.data, tuple):
                            self._close(key.data[0], abort=True)
                with self._lock:
                    calls, self._calls = self._calls or [], []
                for call in calls:
                    call()
        except Exception as exc:
            self.errors.append(exc)
        finally:
            self._teardown()

    def _watch(self, now: float) -> float | None:
        """Register each socket for what it waits for; the time until the next delayed chunk is due."""
        timeout: float | None = None
        for conn in list(self._conns):
            for side in (conn.client, conn.broker):
                if side.sock is None:
                    continue
                peer = conn.peer(side)
                events = 0
                if side is conn.broker and conn.connecting:
                    events = selectors.EVENT_WRITE  # the connect's outcome
                else:
                    # a blackholed client is read (and dropped) even with its broker side gone
                    if not side.eof and (conn.blackholed or (not peer.eof and peer.queued < _HIGH_WATER)):
                        events |= selectors.EVENT_READ
                    if side.out:
                        due = side.out[0][0]
                        if due <= now:
                            events |= selectors.EVENT_WRITE
                        else:
                            timeout = due - now if timeout is None else min(timeout, due - now)
                if events != side.events:
                    if side.events:
                        self._sel.unregister(side.sock)
                    if events:
                        self._sel.register(side.sock, events, (conn, side))
                    side.events = events
        return timeout

    def _dispatch(self, data: object, events: int) -> None:
        if data == "listener":
            self._accept()
        elif data == "wakeup":
            with contextlib.suppress(BlockingIOError):
                while self._wake_r.recv(4096):
                    pass
        else:
            assert isinstance(data, tuple)
            conn, side = data
            if conn not in self._conns or side.sock is None:
                return
            if side is conn.broker and conn.connecting:
                self._connected(conn)
                return
            if events & selectors.EVENT_WRITE:
                self._write(conn, side)
            if events & selectors.EVENT_READ and conn in self._conns and side.sock is not None:
                self._read(conn, side)

    def _accept(self) -> None:
        for _ in range(64):
            try:
                client, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of descriptors: keep the loop, try again on the next event
                self.errors.append(exc)
                return
            broker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            for s in (client, broker):
                s.setblocking(False)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # Kafka's requests are small
            with self._lock:
                self._stats.accepted += 1
            conn = _Conn(client, broker)
            self._conns.add(conn)
            code = broker.connect_ex(("127.0.0.1", self.upstream_port))
            if code == 0:
                conn.connecting = False
            elif code != errno.EINPROGRESS:
                self._upstream_failed(conn)

    def _connected(self, conn: _Conn) -> None:
        assert conn.broker.sock is not None
        if conn.broker.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
            self._upstream_failed(conn)
        else:
            conn.connecting = False

    def _upstream_failed(self, conn: _Conn) -> None:
        with self._lock:
            self._stats.upstream_failures += 1
        if conn.blackholed:
            self._close_side(conn.broker, abort=True)  # behind a partition: the client sees nothing
        else:
            self._close(conn, abort=True)  # the nearest a proxy comes to a refused connection

    def _read(self, conn: _Conn, side: _Side) -> None:
        assert side.sock is not None
        try:
            data = side.sock.recv(_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(conn, abort=True)  # the peer's reset goes on to the other side
            return
        if not data:
            self._eof(conn, side)
            return
        if side is conn.client and conn.client_id is None:
            conn.head += data
            client_id = client_id_of(conn.head)
            if client_id is None:
                return
            conn.client_id = client_id
            data, conn.head = bytes(conn.head), bytearray()
            self._apply(conn)
            if conn not in self._conns:
                return
        key = conn.client_id or ""
        if conn.blackholed:
            with self._lock:
                self._stats.discarded[key] += len(data)
            return
        found = self._rule_for(key) if conn.client_id is not None else None
        delay = found[1].delay_s if found and found[1].mode == "delay" else 0.0
        peer = conn.peer(side)
        peer.out.append((time.monotonic() + delay, data))
        peer.queued += len(data)

    def _write(self, conn: _Conn, side: _Side) -> None:
        assert side.sock is not None
        now = time.monotonic()
        key = conn.client_id or ""
        sent = 0
        while side.out and side.out[0][0] <= now:
            due, data = side.out[0]
            try:
                n = side.sock.send(data)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self._close(conn, abort=True)
                return
            sent += n
            side.queued -= n
            if n < len(data):
                side.out[0] = (due, data[n:])
                break
            side.out.popleft()
        with self._lock:
            (self._stats.to_broker if side is conn.broker else self._stats.to_client)[key] += sent
        if conn.peer(side).eof and not side.out:
            self._close(conn, abort=False)  # the other side closed and all it sent is delivered

    def _eof(self, conn: _Conn, side: _Side) -> None:
        side.eof = True
        if conn.blackholed and side is conn.broker:
            self._close_side(conn.broker, abort=False)  # a partition: the client must not notice
            return
        peer = conn.peer(side)
        side.out.clear()  # the closed side takes nothing more; what it sent is still delivered
        side.queued = 0
        if conn.blackholed or not peer.out:
            self._close(conn, abort=False)

    def _close_side(self, side: _Side, abort: bool) -> None:
        sock, side.sock = side.sock, None
        if sock is None:
            return
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(sock)
        side.events = 0
        if abort:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RST)
        sock.close()

    def _close(self, conn: _Conn, abort: bool) -> None:
        self._conns.discard(conn)
        self._close_side(conn.client, abort)
        self._close_side(conn.broker, abort)

    def _teardown(self) -> None:
        for conn in list(self._conns):
            self._close(conn, abort=False)
        with self._lock:
            calls, self._calls = self._calls or [], None
        for call in calls:  # asked before the stop: they find no connection left
            call()
        for s in (self._listener, self._wake_r, self._wake_w):
            s.close()
        self._sel.close()
