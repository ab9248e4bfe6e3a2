"""In-memory byte streams between simulated members and simulated broker nodes.

Each member has its own :class:`SimIO` (the ``io`` backend of its ``GroupConsumer``), so that a
crash or a cut affects exactly that member's connections.  Bytes travel with a seeded latency and
in order per direction, as on TCP.  The broker side reads frames and answers them one at a time
per connection, through the real ``BrokerNode`` code, as the asyncio server does.
"""

from __future__ import annotations

import errno
import logging
import struct
from collections import deque
from typing import TYPE_CHECKING, Any

from ..coordinator.node import BrokerNode, DropConnection
from ..network.io import EVENT_READ, EVENT_WRITE, Poller, Stream
from ..protocol.framing import FrameError, frame_size
from .scheduler import Scheduler
from .server import SimTask

if TYPE_CHECKING:
    from ..coordinator.core import ClusterCore

log = logging.getLogger("groupclient.testing")

_SIZE = struct.Struct(">i")


class SimNetwork:
    """The wires: latency, per-link order, node addresses."""

    def __init__(self, scheduler: Scheduler, core: ClusterCore, min_latency_ms: int = 1,
                 max_latency_ms: int = 5) -> None:
        if not 1 <= min_latency_ms <= max_latency_ms:
            raise ValueError("need 1 <= min_latency_ms <= max_latency_ms")
        self.scheduler = scheduler
        self.core = core
        self.min_latency_ms = min_latency_ms
        self.max_latency_ms = max_latency_ms
        self.connections: list[ServerConnection] = []
        # every frame's bytes as they cross the wire, with the time and the ends, when recording:
        # two runs of one seed must produce the same trace, byte for byte (tests/sim/test_replay.py)
        self.trace: list[tuple[int, str, str, int, bytes]] | None = None

    def record(self, kind: str, member: str, node: int, payload: bytes) -> None:
        if self.trace is not None:
            self.trace.append((self.scheduler.now, kind, member, node, payload))

    def latency(self) -> int:
        return self.scheduler.rng.randint(self.min_latency_ms, self.max_latency_ms)

    def node_at(self, host: str, port: int) -> BrokerNode | None:
        for node in self.core.nodes.values():
            if (node.host, node.port) == (host, port):
                return node
        return None

    def close_node_connections(self, node_id: int) -> None:
        for conn in list(self.connections):
            if conn.node.node_id == node_id:
                conn.close("the node stopped")


class SimIO:
    """One member's network: the ``io`` backend its NetworkClient opens streams with."""

    def __init__(self, network: SimNetwork, owner: str) -> None:
        self.network = network
        self.owner = owner
        self.dead = False
        self.streams: list[SimStream] = []
        # nodes this member cannot reach (a partial partition): connecting is refused, while
        # the other members and the other nodes talk as before
        self.unreachable: set[int] = set()

    def open_stream(self, host: str, port: int) -> Stream:
        if self.dead:
            raise OSError(errno.ENETDOWN, "this member's process is gone")
        stream = SimStream(self)
        self.streams.append(stream)
        node = self.network.node_at(host, port)
        delay = self.network.latency()
        self.network.scheduler.call_later(delay, lambda: stream.on_connect_result(node))
        return stream

    def new_poller(self) -> Poller:
        return SimPoller(self)

    def cut(self) -> None:
        """Drop every connection of this member (both sides see a reset)."""
        for stream in list(self.streams):
            stream.reset("the simulator cut the connection")

    def kill(self) -> None:
        self.dead = True
        self.cut()

    def cut_off(self, node_id: int) -> None:
        """Reset this member's connections to ``node_id`` and refuse its new ones."""
        self.unreachable.add(node_id)
        for stream in list(self.streams):
            if stream.server is not None and stream.server.node.node_id == node_id:
                stream.reset(f"the simulator cut this member off from node {node_id}")


class SimStream:
    """The member's end of a connection."""

    def __init__(self, io: SimIO) -> None:
        self.io = io
        self.connecting = True
        self.error = 0
        self.closed = False
        self.eof = False
        self.inbox = bytearray()
        self.server: ServerConnection | None = None
        self._last_delivery = 0  # deliveries to the server stay in order

    def __repr__(self) -> str:
        node = self.server.node.node_id if self.server else "-"
        return f"<SimStream {self.io.owner} -> node {node}>"

    # -- the Stream protocol -------------------------------------------------------------
    def connect_error(self) -> int:
        return self.error

    def handshake(self) -> int:  # no TLS
        return 0

    def send(self, data: bytes | bytearray | memoryview) -> int:
        if self.closed or self.error or self.eof:
            raise OSError(errno.EPIPE, "broken pipe")
        if self.connecting or self.server is None:
            raise BlockingIOError()
        payload = bytes(data)
        server = self.server
        self.io.network.record("request", self.io.owner, server.node.node_id, payload)
        scheduler = self.io.network.scheduler
        when = max(scheduler.now + self.io.network.latency(), self._last_delivery)
        self._last_delivery = when
        scheduler.call_at(when, lambda: server.on_bytes(payload))
        return len(payload)

    def recv_into(self, buffer: memoryview) -> int:
        if self.closed:
            raise OSError(errno.EBADF, "closed")
        if self.inbox:
            n = min(len(buffer), len(self.inbox))
            buffer[:n] = self.inbox[:n]
            del self.inbox[:n]
            return n
        if self.eof:
            return 0
        if self.error:
            raise OSError(self.error, "connection reset")
        raise BlockingIOError()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        server = self.server
        if server is not None:
            self.io.network.scheduler.call_later(self.io.network.latency(),
                                                 lambda: server.close("the client closed the connection"))

    # -- readiness, for SimPoller ------------------------------------------------------------
    def events(self) -> int:
        if self.closed:
            return 0
        ready = 0
        if self.inbox or self.eof or self.error:
            ready |= EVENT_READ
        if not self.connecting or self.error:
            ready |= EVENT_WRITE
        return ready

    # -- the network's side ----------------------------------------------------------------
    def on_connect_result(self, node: BrokerNode | None) -> None:
        if self.closed:
            return
        self.connecting = False
        if node is None or not node.live or self.io.dead or node.node_id in self.io.unreachable:
            self.error = errno.ECONNREFUSED
            return
        self.server = ServerConnection(self.io.network, node, self)

    def deliver(self, data: bytes) -> None:
        if not self.closed:
            self.inbox += data

    def on_server_closed(self) -> None:
        self.eof = True

    def reset(self, why: str) -> None:
        if not self.closed:
            self.error = errno.ECONNRESET
        if self.server is not None:
            self.server.close(why)


class SimPoller:
    def __init__(self, io: SimIO) -> None:
        self.io = io
        self._registered: dict[int, tuple[SimStream, int, Any]] = {}
        self._interrupted = False

    def _sim_stream(self, stream: Stream) -> SimStream:
        if not isinstance(stream, SimStream):
            raise TypeError(f"a SimPoller waits on simulated streams, not on {stream!r}")
        return stream

    def register(self, stream: Stream, events: int, data: Any) -> None:
        s = self._sim_stream(stream)
        self._registered[id(s)] = (s, events, data)

    def modify(self, stream: Stream, events: int, data: Any) -> None:
        self.register(stream, events, data)

    def unregister(self, stream: Stream) -> None:
        self._registered.pop(id(stream), None)

    def _ready(self) -> list[tuple[Any, int]]:
        ready = []
        for stream, wanted, data in list(self._registered.values()):
            events = stream.events() & wanted
            if events:
                ready.append((data, events))
        return ready

    def select(self, timeout_ms: int) -> list[tuple[Any, int]]:
        scheduler = self.io.network.scheduler
        if not self._interrupted and not self._ready():
            scheduler.block(scheduler.now + max(timeout_ms, 0), lambda: self._interrupted or bool(self._ready()))
        self._interrupted = False
        return self._ready()

    def interrupt(self) -> None:
        self._interrupted = True

    def close(self) -> None:
        self._registered.clear()


class ServerConnection:
    """The broker's end: frames answered strictly in order, one at a time, like BrokerNode._serve."""

    def __init__(self, network: SimNetwork, node: BrokerNode, client: SimStream) -> None:
        self.network = network
        self.node = node
        self.client = client
        self.closed = False
        self._buffer = bytearray()
        self._frames: deque[bytes] = deque()
        self._task: SimTask | None = None
        self._last_delivery = 0
        network.connections.append(self)

    def on_bytes(self, data: bytes) -> None:
        if self.closed:
            return
        self._buffer += data
        limit = self.network.core.config.max_request_bytes
        while len(self._buffer) >= 4:
            try:
                size = frame_size(bytes(self._buffer[:4]), limit)
            except FrameError as exc:
                self.close(str(exc))
                return
            if len(self._buffer) < 4 + size:
                break
            self._frames.append(bytes(self._buffer[4 : 4 + size]))
            del self._buffer[: 4 + size]
        self._next()

    def _next(self) -> None:
        if self.closed or self._task is not None or not self._frames:
            return
        payload = self._frames.popleft()
        self._task = SimTask(self.node.answer_frame(payload, "127.0.0.1"), self._answered)
        self._task.start()

    def _answered(self, answer: bytes | None, error: BaseException | None) -> None:
        self._task = None
        if self.closed:
            return  # the client went away while the request was held: the answer is dropped
        if error is not None:
            if not isinstance(error, (DropConnection, FrameError)):
                log.error("node %d: closing a simulated connection after an internal error: %r",
                          self.node.node_id, error)
            self.close(f"{error!r}")
            return
        if answer is not None:
            self.network.record("answer", self.client.io.owner, self.node.node_id, answer)
            scheduler = self.network.scheduler
            when = max(scheduler.now + self.network.latency(), self._last_delivery)
            self._last_delivery = when
            client = self.client
            scheduler.call_at(when, lambda: client.deliver(answer))
        self._next()

    def close(self, why: str) -> None:
        if self.closed:
            return
        self.closed = True
        if self in self.network.connections:
            self.network.connections.remove(self)
        if self._task is not None:
            self._task.cancel()
            self._task = None
        client = self.client
        scheduler = self.network.scheduler
        scheduler.call_at(max(scheduler.now + self.network.latency(), self._last_delivery), client.on_server_closed)
        log.debug("node %d: simulated connection closed (%s)", self.node.node_id, why)
