"""The client's side of the fuzz tests: a BrokerConnection over an in-memory stream, a scripted
broker on a real 127.0.0.1 socket, and the ways a broker's answer can be wrong."""

from __future__ import annotations

import queue
import socket
import struct
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from kafka.protocol.metadata.api_versions import ApiVersionsResponse

from groupclient.network.connection import CLIENT_MAX_VERSIONS, BrokerConnection, ConnectionState
from groupclient.network.io import Stream
from groupclient.protocol.apis import ApiKey
from tests.fuzz.schema import Spoil, encode_response, spoilers

_SIZE = struct.Struct(">i")
_REQUEST_HEADER = struct.Struct(">hhi")  # api_key, api_version, correlation_id
MAX_RESPONSE_BYTES = 100_000_000  # BrokerConnection's default


# -- a BrokerConnection over memory -------------------------------------------------------------------
class MemoryStream:
    """A connected stream: the test reads what the client ``sent`` and queues what it reads."""

    def __init__(self) -> None:
        self.sent = bytearray()
        self.incoming: deque[bytes] = deque()  # one recv_into() reads one chunk at most
        self.eof = False
        self.closed = False

    def connect_error(self) -> int:
        return 0

    def handshake(self) -> int:
        return 0

    def send(self, data: bytes | bytearray | memoryview) -> int:
        self.sent += data
        return len(data)

    def recv_into(self, buffer: memoryview) -> int:
        if self.incoming:
            chunk = self.incoming.popleft()
            if len(chunk) > len(buffer):
                self.incoming.appendleft(chunk[len(buffer):])
                chunk = chunk[:len(buffer)]
            buffer[:len(chunk)] = chunk
            return len(chunk)
        if self.eof:
            return 0
        raise BlockingIOError()

    def close(self) -> None:
        self.closed = True


class MemoryIO:
    """An IOBackend with one stream (BrokerConnection never asks for a poller)."""

    def __init__(self) -> None:
        self.stream = MemoryStream()

    def open_stream(self, host: str, port: int) -> Stream:
        self.stream = MemoryStream()
        return self.stream

    def new_poller(self) -> Any:
        raise NotImplementedError


def broker_answers(stream: MemoryStream) -> list[tuple[int, int, int]]:
    """(api_key, version, correlation_id) of each whole request in ``stream.sent``; consumes them."""
    found = []
    while len(stream.sent) >= 4:
        size = _SIZE.unpack_from(stream.sent, 0)[0]
        if len(stream.sent) < 4 + size:
            break
        found.append(_REQUEST_HEADER.unpack_from(stream.sent, 4))
        del stream.sent[: 4 + size]
    return found


def api_versions_answer(version: int) -> Any:
    """Every API the client knows, up to the version it knows: it then asks at its own maximum."""
    keys = [ApiVersionsResponse.ApiVersion(api_key=int(k), min_version=0, max_version=v)
            for k, v in sorted(CLIENT_MAX_VERSIONS.items())]
    return ApiVersionsResponse(version=version, error_code=0, api_keys=keys, throttle_time_ms=0)


def ready_connection(io: MemoryIO) -> BrokerConnection:
    """A BrokerConnection that negotiated ApiVersions over ``io`` and is READY."""
    conn = BrokerConnection(1, "broker", 9092, client_id="fuzz", request_timeout_ms=30_000, reconnect_backoff_ms=1,
                            reconnect_backoff_max_ms=10, max_in_flight=1000)
    assert conn.connect(0, io) == []
    conn.on_writable(0)
    (api_key, version, correlation_id), = broker_answers(io.stream)
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
            return _SIZE.pack(len(payload)) + _SIZE.pack(wrong) + payload[4:]
        if self.kind == "bad size":
            return _SIZE.pack(self.value) + payload
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
            while len(received) >= 4 and len(received) >= 4 + _SIZE.unpack_from(received, 0)[0]:
                size = _SIZE.unpack_from(received, 0)[0]
                api_key, version, correlation_id = _REQUEST_HEADER.unpack_from(received, 4)
                del received[: 4 + size]
                if api_key == ApiKey.API_VERSIONS:
                    conn.sendall(encode_response(api_versions_answer(version), correlation_id))
                    continue
                data, close = self.scripts.get(timeout=10)(api_key, version, correlation_id)
                conn.sendall(data)
                if close:
                    return
