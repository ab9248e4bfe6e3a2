"""A raw Kafka-wire client for tests: one socket, requests encoded by kafka.protocol."""

from __future__ import annotations

import socket
import struct
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
