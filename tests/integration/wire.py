"""A raw Kafka-wire client for tests: one socket, requests encoded by kafka.protocol."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

from groupclient.protocol.apis import API_SPECS, ApiKey


class WireClient:
    def __init__(self, address: str, timeout_s: float = 10.0) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self._correlation = 0

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._read_exactly(4))[0]
        return self._read_exactly(size)

    def _read_exactly(self, n: int) -> bytes:
        chunks = b""
        while len(chunks) < n:
            chunk = self.sock.recv(n - len(chunks))
            if not chunk:
                raise ConnectionError("closed by the server")
            chunks += chunk
        return chunks

    def request(self, req: Any) -> Any:
        self._correlation += 1
        req.with_header(correlation_id=self._correlation, client_id="wire-test")
        self.sock.sendall(bytes(req.encode(header=True, framed=True)))
        payload = self.read_frame()
        response_cls = API_SPECS[ApiKey(req.API_KEY)].response
        response = response_cls.decode(payload, version=req.version, header=True)
        assert response.header.correlation_id == self._correlation
        return response

    def is_closed_by_server(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except (ConnectionError, socket.timeout):
            return True


@contextlib.contextmanager
def http_like_server() -> Iterator[int]:
    """A listener on 127.0.0.1 that answers whatever it is sent with an HTTP 400, at once (as web
    servers do to a request they cannot parse) and closes: its port.  Not a Kafka broker."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, name="http-like-server", daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        listener.close()
