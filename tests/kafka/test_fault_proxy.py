"""The fault proxy (tests/kafka/fault_proxy.py) against a tiny server speaking Kafka's framing, on
real sockets on 127.0.0.1: every exchange is bounded by a short socket timeout, nothing sleeps."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from tests.kafka.cluster import read_exactly
from tests.integration.peers import wait_until
from tests.kafka.fault_proxy import FaultProxy, client_id_of

TIMEOUT_S = 5.0  # an answer that should come
SILENCE_S = 0.4  # how long an answer that should not come is waited for


class EchoBroker:
    """Answers each request with a response frame: its correlation id, then the request's bytes
    after the header's first 8 bytes; keeps every byte it received, per connection."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.received: list[bytearray] = []
        self.socks: list[socket.socket] = []
        self.threads = [threading.Thread(target=self._accept, name="echo-broker-accept")]
        self.threads[0].start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:  # closed
                return
            got = bytearray()
            self.received.append(got)
            self.socks.append(sock)
            thread = threading.Thread(target=self._serve, args=(sock, got), name="echo-broker-conn")
            self.threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket, got: bytearray) -> None:
        try:
            while True:
                frame = read_frame(sock)
                got += frame
                correlation_id = frame[8:12]
                sock.sendall(frame_of(correlation_id + frame[4:]))
        except (OSError, EOFError):
            return

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        for sock in list(self.socks):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        for thread in list(self.threads):
            thread.join(TIMEOUT_S)


def frame_of(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def request(client_id: str | None, correlation_id: int, payload: bytes = b"", api_key: int = 18) -> bytes:
    """A request frame: header v1 (api_key, version 3, correlation id, client_id), then ``payload``."""
    name = b"\xff\xff" if client_id is None else struct.pack(">h", len(client_id)) + client_id.encode()
    return frame_of(struct.pack(">hhi", api_key, 3, correlation_id) + name + payload)


def read_frame(sock: socket.socket) -> bytes:
    size = struct.unpack(">i", read_exactly(sock, 4))[0]
    return struct.pack(">i", size) + read_exactly(sock, size)


def connect(proxy: FaultProxy, timeout_s: float = TIMEOUT_S) -> socket.socket:
    return socket.create_connection(("127.0.0.1", proxy.port), timeout=timeout_s)


def exchange(sock: socket.socket, client_id: str, correlation_id: int, payload: bytes = b"x") -> bytes:
    """Send a request; the answer's bytes after its size and correlation id (the request's body)."""
    sent = request(client_id, correlation_id, payload)
    sock.sendall(sent)
    answer = read_frame(sock)
    assert answer[4:8] == struct.pack(">i", correlation_id)
    assert answer[8:] == sent[4:]
    return answer


def assert_silent(sock: socket.socket) -> None:
    sock.settimeout(SILENCE_S)
    with pytest.raises(socket.timeout):
        sock.recv(1)
    sock.settimeout(TIMEOUT_S)


def assert_closed(sock: socket.socket) -> None:
    """The proxy closed it: a reset (RST), or an end of stream."""
    try:
        sock.sendall(request("probe", 99))
        assert sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        pass


@pytest.fixture
def broker() -> Iterator[EchoBroker]:
    b = EchoBroker()
    yield b
    b.close()


@pytest.fixture
def proxy(broker: EchoBroker) -> Iterator[FaultProxy]:
    with FaultProxy(broker.port, "unit") as p:
        yield p
        assert not p.errors


def test_client_id_of_reads_the_request_header() -> None:
    full = request("m3.0", 1, b"body")
    assert client_id_of(full) == "m3.0"
    assert all(client_id_of(full[:n]) is None for n in range(len(full) - 4))  # until the name is in
    assert client_id_of(request(None, 1)) == ""  # a null client_id
    assert client_id_of(b"GET / HTTP/1.1\r\n\r\n") == ""  # no Kafka request: nobody's


def test_forwards_every_byte_unchanged_both_ways(broker: EchoBroker, proxy: FaultProxy) -> None:
    big = bytes(range(256)) * 12_000  # 3 MB: partial writes, and the queue's high-water mark
    with connect(proxy) as sock:
        sent = b"".join(request("a", n, big if n == 2 else b"p%d" % n) for n in range(5))
        sock.sendall(sent)  # pipelined, one frame split over many reads
        answers = b"".join(read_frame(sock) for _ in range(5))
    assert bytes(broker.received[0]) == sent
    stats = proxy.stats()
    assert stats.accepted == 1 and stats.to_broker == {"a": len(sent)} and stats.to_client == {"a": len(answers)}


def test_a_header_sent_byte_by_byte_identifies_the_client(proxy: FaultProxy) -> None:
    with connect(proxy) as a, connect(proxy) as b:
        first = request("m3.0", 1, b"body")
        for i in range(len(first)):
            a.send(first[i:i + 1])
        assert read_frame(a)[8:] == first[4:]
        exchange(b, "x", 1)
        assert proxy.connections() == {"m3.0": 1, "x": 1}


def test_blackhole_cuts_off_the_clients_of_the_prefix_only(proxy: FaultProxy) -> None:
    with connect(proxy) as m30, connect(proxy) as m40:
        exchange(m30, "m3.0", 1)
        exchange(m40, "m4.0", 1)
        proxy.blackhole("m3.")
        m30.sendall(request("m3.0", 2))
        assert_silent(m30)  # no answer, and no close either
        exchange(m40, "m4.0", 2)
        with connect(proxy) as m31:  # a new connection is accepted, then blackholed once identified
            m31.sendall(request("m3.1", 1))
            assert_silent(m31)
            # identified once the proxy's loop has read that request (no answer says when)
            assert wait_until(lambda: proxy.stats().discarded["m3.1"] > 0, 10, 0.01), proxy.stats()
            stats = proxy.stats()
            assert stats.acted[("blackhole", "m3.")] == 2
            assert stats.discarded["m3.0"] > 0 and stats.discarded["m3.1"] > 0
            proxy.heal()  # blackholed connections are closed, not resumed
            assert_closed(m30)
            assert_closed(m31)
        exchange(m40, "m4.0", 3)
    with connect(proxy) as again:
        exchange(again, "m3.0", 3)


def test_reset_closes_the_current_connections_once(proxy: FaultProxy) -> None:
    with connect(proxy) as r1, connect(proxy) as other:
        exchange(r1, "r.1", 1)
        exchange(other, "s.1", 1)
        assert proxy.reset("r.") == 1
        with pytest.raises((ConnectionResetError, EOFError)):  # RST: no orderly end of stream
            r1.sendall(request("r.1", 2))
            read_frame(r1)
        exchange(other, "s.1", 2)
    with connect(proxy) as r1:  # the reset acted once: a new connection works
        exchange(r1, "r.1", 3)
    assert proxy.stats().acted == {("reset", "r."): 1}


def test_delay_holds_both_directions(proxy: FaultProxy) -> None:
    delay_s = 0.25
    with connect(proxy) as slow, connect(proxy) as fast:
        exchange(slow, "d.1", 1)
        exchange(fast, "f.1", 1)
        proxy.delay("d.", delay_s * 1000)
        started = time.monotonic()
        exchange(slow, "d.1", 2)
        assert time.monotonic() - started >= 2 * delay_s  # there and back
        started = time.monotonic()
        exchange(fast, "f.1", 2)
        assert time.monotonic() - started < delay_s
        proxy.heal("d.")
        started = time.monotonic()
        exchange(slow, "d.1", 3)
        assert time.monotonic() - started < delay_s
    assert proxy.stats().acted == {("delay", "d."): 1}


def test_refuse_closes_new_and_existing_connections(proxy: FaultProxy) -> None:
    with connect(proxy) as existing, connect(proxy) as other:
        exchange(existing, "x.1", 1)
        exchange(other, "y.1", 1)
        proxy.refuse("x.")
        assert_closed(existing)
        with connect(proxy) as new:
            new.sendall(request("x.2", 1))
            with pytest.raises((ConnectionResetError, EOFError)):
                read_frame(new)
        exchange(other, "y.1", 2)
        assert proxy.stats().acted == {("refuse", "x."): 2}
        proxy.heal()
        with connect(proxy) as new:
            exchange(new, "x.2", 2)


def test_the_longest_prefix_rules(proxy: FaultProxy) -> None:
    proxy.blackhole("m")
    proxy.delay("m3.", 1)
    with connect(proxy) as m3, connect(proxy) as m4:
        exchange(m3, "m3.0", 1)
        m4.sendall(request("m4.0", 1))
        assert_silent(m4)
    assert proxy.rules().keys() == {"m", "m3."}


def test_a_broker_that_is_down_resets_the_client() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # bound, never listening: connections are refused
        with FaultProxy(port, "down") as proxy:
            with pytest.raises((ConnectionResetError, EOFError)), connect(proxy) as sock:
                sock.sendall(request("a", 1))  # (the reset may come before connect() returns)
                read_frame(sock)
            assert proxy.stats().upstream_failures == 1


def test_close_stops_its_thread_and_closes_every_connection(broker: EchoBroker) -> None:
    before = set(threading.enumerate())
    proxy = FaultProxy(broker.port, "closing")
    assert any(t.name == "fault-proxy-closing-loop" for t in threading.enumerate())
    with connect(proxy) as plain, connect(proxy) as cut, connect(proxy) as slow:
        exchange(plain, "a", 1)
        proxy.blackhole("b")
        cut.sendall(request("b", 1))
        proxy.delay("c", 10_000)
        slow.sendall(request("c", 1))  # a chunk still queued at close
        # a connection is named once the proxy's loop has read its first request, which b's and
        # c's clients do not wait for (no answer comes)
        assert wait_until(lambda: proxy.connections() == {"a": 1, "b": 1, "c": 1}, 10, 0.01), proxy.connections()
        proxy.close()
        for sock in (plain, cut, slow):
            assert sock.recv(1) == b""
    assert not [t for t in threading.enumerate() if t not in before and t.name.startswith("fault-proxy-")]
    proxy.close()  # again: nothing to do
    with pytest.raises(RuntimeError):
        proxy.blackhole("a")
    assert not proxy.errors
