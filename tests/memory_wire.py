"""A client test's wire, in memory: an ``IOBackend`` (``FakeIO`` with its ``FakePoller``) whose
streams are :class:`tests.memory_broker.FakeStream`s, a client made on it with a fake clock, and
the broker's side of a heartbeat.  Shared by the network robustness tests (no sockets, no sleeps;
only addresses the fake does not know go to the real SocketIO, which must refuse them)."""

from __future__ import annotations

import random
from typing import Any

from kafka.protocol.consumer.group import HeartbeatRequest, HeartbeatResponse

from groupclient.clock import FakeClock
from groupclient.network.client import NetworkClient, NetworkConfig
from groupclient.network.connection import CLIENT_MAX_VERSIONS, ConnectionState
from groupclient.network.future import RequestFuture
from groupclient.network.io import EVENT_READ, EVENT_WRITE, SocketIO, Stream
from groupclient.protocol.apis import ApiKey
from tests.memory_broker import FakeStream, api_versions_answer, take_requests

LIMIT = 100_000_000  # BrokerConnection's default max_response_bytes
BROKER = ("broker", 9092)



# -- an in-memory IOBackend ------------------------------------------------------------------
class FakePoller:
    """Level-triggered: a stream is always writable, readable while it has bytes or its EOF."""

    def __init__(self) -> None:
        self.registered: dict[int, tuple[FakeStream, int, Any]] = {}

    @staticmethod
    def _fake(stream: Stream) -> FakeStream:
        assert isinstance(stream, FakeStream)
        return stream

    def register(self, stream: Stream, events: int, data: Any) -> None:
        assert id(stream) not in self.registered
        self.registered[id(stream)] = (self._fake(stream), events, data)

    def modify(self, stream: Stream, events: int, data: Any) -> None:
        assert id(stream) in self.registered
        self.registered[id(stream)] = (self._fake(stream), events, data)

    def unregister(self, stream: Stream) -> None:
        self.registered.pop(id(stream), None)

    def select(self, timeout_ms: int) -> list[tuple[Any, int]]:
        ready = []
        for stream, mask, data in list(self.registered.values()):
            events = (mask & EVENT_WRITE) | (mask & EVENT_READ if stream.readable() else 0)
            if events:
                ready.append((data, events))
        return ready

    def interrupt(self) -> None:
        pass

    def close(self) -> None:
        self.registered.clear()


class FakeIO:
    def __init__(self, brokers: set[tuple[str, int]]) -> None:
        self.brokers = brokers
        self.streams: list[FakeStream] = []

    def open_stream(self, host: str, port: int) -> Stream:
        if (host, port) not in self.brokers:
            # the real backend must refuse an impossible address with OSError, and nothing else
            stream = SocketIO().open_stream(host, port)
            stream.close()
            raise AssertionError(f"SocketIO tried to connect to {host!r}:{port!r}")
        stream = FakeStream((host, port))
        self.streams.append(stream)
        return stream

    def new_poller(self) -> FakePoller:
        return FakePoller()


# -- the broker's side -----------------------------------------------------------------------
def frame(response: Any, correlation_id: int) -> bytes:
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))


def heartbeat_request(version: int) -> Any:
    return HeartbeatRequest(version=version, group_id="g", generation_id=1, member_id="m", group_instance_id=None)


def heartbeat_answer() -> Any:
    return HeartbeatResponse(version=CLIENT_MAX_VERSIONS[ApiKey.HEARTBEAT], throttle_time_ms=0, error_code=0)


def new_client(brokers: set[tuple[str, int]] | None = None,
               bootstrap: list[tuple[str, int]] | None = None) -> tuple[NetworkClient, FakeIO, FakeClock]:
    clock = FakeClock()
    io = FakeIO({BROKER} if brokers is None else brokers)
    client = NetworkClient(NetworkConfig(bootstrap or [BROKER], "t"), clock, random.Random(0), io=io)
    return client, io, clock


def connect(client: NetworkClient, io: FakeIO, node: int) -> FakeStream:
    """Connect to ``node`` and answer its ApiVersions request; the stream of the ready connection."""
    for _ in range(10):
        if client.ready(node):
            return io.streams[-1]
        client.poll(0)
        if io.streams:
            for api_key, version, correlation_id in take_requests(io.streams[-1]):
                assert api_key == ApiKey.API_VERSIONS
                io.streams[-1].incoming.append(frame(api_versions_answer(version), correlation_id))
    raise AssertionError(f"node {node} never became ready")


def send_heartbeat(client: NetworkClient, stream: FakeStream, node: int) -> tuple[RequestFuture[Any], int]:
    """A Heartbeat in flight to ``node``, written to the wire; the future and correlation id."""
    future = client.send(node, HeartbeatRequest, HeartbeatResponse, heartbeat_request)
    client.poll(0)
    (api_key, _, correlation_id), = take_requests(stream)
    assert api_key == ApiKey.HEARTBEAT and not future.is_done()
    return future, correlation_id


def feed(client: NetworkClient, stream: FakeStream, chunks: list[bytes], eof: bool = False) -> None:
    """Deliver the chunks (one per recv) and poll until the client read them or closed the stream."""
    stream.incoming.extend(chunks)
    stream.eof = eof
    for _ in range(len(chunks) + 2):
        if stream.closed or not stream.readable():
            break
        client.poll(0)


def state(client: NetworkClient, node: int) -> ConnectionState:
    return client._conns[node].state


def heartbeat_frame(correlation_id: int) -> bytes:
    return frame(heartbeat_answer(), correlation_id)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = [0, *sorted(c for c in set(cuts) if 0 < c < len(data)), len(data)]
    return [data[a:b] for a, b in zip(points, points[1:]) if b > a]


NODE = -1  # the bootstrap server's node id

