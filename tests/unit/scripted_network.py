"""A scripted stand-in for NetworkClient: requests are answered by test-provided responders,
time moves only on the FakeClock.  No sockets, no sleeps."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from groupclient.clock import FakeClock, Timer
from groupclient.errors import DisconnectedError
from groupclient.network.connection import CLIENT_MAX_VERSIONS
from groupclient.network.future import RequestFuture
from groupclient.network.metadata import ClusterMetadata, MetadataSnapshot

Responder = Callable[[Any], Any]  # request -> response, an Exception to fail with, or None to hold


@dataclass
class Sent:
    node: int
    request: Any
    future: RequestFuture[Any]
    timeout_ms: int | None


class ScriptedClient:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.metadata = ClusterMetadata(300000)
        self.metadata.snapshot = MetadataSnapshot(brokers={0: ("127.0.0.1", 9092)})
        self.responders: dict[int, Responder] = {}
        self.sent: list[Sent] = []
        self.pending: list[Sent] = []
        self.disconnected: list[int] = []
        self.nodes: dict[int, tuple[str, int]] = {}
        self.topics: set[str] | None = set()

    def on(self, api_key: int, responder: Responder) -> None:
        self.responders[int(api_key)] = responder

    def requests(self, api_key: int) -> list[Any]:
        return [s.request for s in self.sent if s.request.API_KEY == api_key]

    # -- the Transport protocol ------------------------------------------------------------
    request_timeout_ms = 30000

    def wakeup(self) -> None:
        pass

    interrupts = 0  # interrupt() calls: what ended a wait of the application thread

    def interrupt(self) -> None:
        self.interrupts += 1

    def close(self) -> None:
        pass

    def least_loaded_node(self) -> int | None:
        return 0

    def version_for(self, node_id: int, api_key: int) -> int | None:
        return CLIENT_MAX_VERSIONS.get(api_key)

    def ready(self, node: int) -> bool:
        return True

    def connection_failed(self, node: int) -> bool:
        return False

    def add_node(self, node_id: int, host: str, port: int) -> None:
        self.nodes[node_id] = (host, port)

    def disconnect(self, node_id: int) -> None:
        self.disconnected.append(node_id)
        for s in [s for s in self.pending if s.node == node_id]:
            self.pending.remove(s)
            s.future.failure(DisconnectedError("disconnected by the test"))

    def send(self, node: int, request_cls: Any, response_cls: Any, build: Callable[[int], Any],
             timeout_ms: int | None = None) -> RequestFuture[Any]:
        request = build(CLIENT_MAX_VERSIONS[request_cls.API_KEY])
        sent = Sent(node, request, RequestFuture(), timeout_ms)
        self.sent.append(sent)
        self.pending.append(sent)
        return sent.future

    def deliver(self) -> None:
        """Answer every pending request that has a responder (in order; answers may send more)."""
        progress = True
        while progress:
            progress = False
            for s in list(self.pending):
                if s not in self.pending:
                    continue  # failed meanwhile by an answer before it (a disconnect)
                responder = self.responders.get(s.request.API_KEY)
                if responder is None:
                    continue
                answer = responder(s.request)
                if answer is None:
                    continue
                self.pending.remove(s)
                progress = True
                if isinstance(answer, BaseException):
                    s.future.failure(answer)
                else:
                    s.future.success(answer)

    def poll_until(self, future: RequestFuture[Any] | None, timer: Timer, wakeup: bool = True) -> None:
        """As NetworkClient's: without a future, one poll, which waits out the timer when
        nothing happens (here: when no pending request had an answer to deliver)."""
        while True:
            answered = len(self.pending)
            self.deliver()
            if future is None:
                if len(self.pending) == answered:
                    self.clock.advance(timer.remaining_ms())
                return
            if future.is_done() or timer.expired():
                return
            self.clock.advance(min(100, max(timer.remaining_ms(), 1)))

    def sleep(self, ms: int, timer: Timer) -> None:
        self.clock.advance(min(ms, timer.remaining_ms()))

    def set_topics(self, topics: set[str] | None) -> None:
        self.topics = topics

    def maybe_update_metadata(self) -> RequestFuture[Any] | None:
        return None
