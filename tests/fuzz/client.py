"""The client's side of the fuzz tests: a BrokerConnection over an in-memory stream, a scripted
broker on a real 127.0.0.1 socket, and the ways a broker's answer can be wrong."""

from __future__ import annotations

import random
import queue
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from groupclient.network.connection import BrokerConnection, ConnectionState
from groupclient.network.io import Stream
from groupclient.protocol.apis import ApiKey
from tests.fuzz.schema import Spoil, encode_response, spoilers
from tests.memory_broker import REQUEST_HEADER, SIZE, FakeStream, api_versions_answer, take_requests

MAX_RESPONSE_BYTES = 100_000_000  # BrokerConnection's default


# -- a BrokerConnection over memory -------------------------------------------------------------------
class MemoryIO:
    """An IOBackend with one stream (BrokerConnection never asks for a poller)."""

    def __init__(self) -> None:
        self.stream = FakeStream(("broker", 9092))

    def open_stream(self, host: str, port: int) -> Stream:
        self.stream = FakeStream((host, port))
        return self.stream

    def new_poller(self) -> Any:
        raise NotImplementedError


def ready_connection(io: MemoryIO) -> BrokerConnection:
    """A BrokerConnection that negotiated ApiVersions over ``io`` and is READY."""
    conn = BrokerConnection(1, "broker", 9092, client_id="fuzz", request_timeout_ms=30_000, reconnect_backoff_ms=1,
                            reconnect_backoff_max_ms=10, max_in_flight=1000, rng=random.Random(0))
    assert conn.connect(0, io) == []
    conn.on_writable(0)
    (api_key, version, correlation_id), = take_requests(io.stream)
    assert api_key == ApiKey.API_VERSIONS
    io.stream.incoming.append(encode_response(api_versions_answer(version), correlation_id))
    conn.on_readable(0)
    assert conn.state is ConnectionState.READY
    return conn


# -- what a broker may send instead of its answer ---------------------------------------------------
@dataclass(frozen=True)
class Fault:
    """What a broker sends instead of the answer frame it owes for a correlation id:

    - ``intact``: the answer itself; ``spoil``: the answer spoilt inside its frame (read as some
      answer, or ProtocolError);
    - ``wrong id`` (the answer for ``correlation_id + value``), ``bad size`` (a size prefix of
      ``value``: negative, under 4, over the limit), ``unasked`` (the answer, then a second one
      nobody asked for): ProtocolError;
    - ``cut and closed``: ``value`` bytes of the answer, then the connection closes (a plain
      DisconnectedError: the bytes were never misread)."""

    kind: str
    spoil: Spoil | None = None
    value: int = 0

    def apply(self, answer: bytes, correlation_id: int) -> bytes:
        payload = answer[4:]
        if self.kind == "spoil":
            assert self.spoil is not None
            return self.spoil(answer)
        if self.kind == "wrong id":
            wrong = (correlation_id + self.value + 2**31) % 2**32 - 2**31
            return SIZE.pack(len(payload)) + SIZE.pack(wrong) + payload[4:]
        if self.kind == "bad size":
            return SIZE.pack(self.value) + payload
        if self.kind == "unasked":
            return answer + answer
        if self.kind == "cut and closed":
            return answer[: self.value % len(answer)]
        assert self.kind == "intact"
        return answer

    @property
    def closes(self) -> bool:
        return self.kind == "cut and closed"


def faults(closing: bool = False) -> st.SearchStrategy[Fault]:
    """Every kind of fault; ``cut and closed`` only with ``closing`` (a broker that can close)."""
    sizes = st.one_of(st.sampled_from([2**31 - 1, MAX_RESPONSE_BYTES + 1, -1, -(2**31), 0, 3]),
                      st.integers(MAX_RESPONSE_BYTES + 1, 2**31 - 1), st.integers(-(2**31), 3))
    kinds = [
        st.just(Fault("intact")),
        spoilers().map(lambda spoil: Fault("spoil", spoil)),
        st.integers(1, 2**32 - 1).map(lambda delta: Fault("wrong id", value=delta)),
        sizes.map(lambda size: Fault("bad size", value=size)),
        st.just(Fault("unasked")),
    ]
    if closing:
        kinds.append(st.integers(0, 2**16).map(lambda n: Fault("cut and closed", value=n)))
    return st.one_of(kinds)


# -- a scripted broker on a real socket --------------------------------------------------------------
Script = Callable[[int, int, int], tuple[bytes, bool]]  # (api_key, version, correlation id) -> (bytes, close after)


class ScriptedBroker:
    """A broker on 127.0.0.1 for one client connection at a time.  It answers ApiVersions itself
    (every API the client knows) and each other request with what the next queued script says.
    Every wait is bounded; ``stop`` ends the thread."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self.scripts: queue.Queue[Script] = queue.Queue()
        self.accepted = 0
        self.errors: list[BaseException] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fuzz-broker", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(10)
        self._listener.close()
        assert not self._thread.is_alive(), "the scripted broker did not stop"

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            try:
                self._serve(conn)
            except (ConnectionError, OSError):
                pass  # the client closed the connection (it found the answer unreadable)
            except BaseException as exc:  # kept for the test to fail on
                self.errors.append(exc)
            finally:
                conn.close()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(0.05)
        received = bytearray()
        while not self._stopping.is_set():
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                return
            received += chunk
            while len(received) >= 4 and len(received) >= 4 + SIZE.unpack_from(received, 0)[0]:
                size = SIZE.unpack_from(received, 0)[0]
                api_key, version, correlation_id = REQUEST_HEADER.unpack_from(received, 4)
                del received[: 4 + size]
                if api_key == ApiKey.API_VERSIONS:
                    conn.sendall(encode_response(api_versions_answer(version), correlation_id))
                    continue
                data, close = self.scripts.get(timeout=10)(api_key, version, correlation_id)
                conn.sendall(data)
                if close:
                    return
