"""The byte streams under the network client, and the poller that waits on them.

:class:`NetworkClient` speaks Kafka's framing over a :class:`Stream` and waits in a
:class:`Poller`; it never touches ``socket`` or ``selectors`` itself.  :class:`SocketIO` is the
real backend; :mod:`groupclient.testing` has an in-memory one that runs on the simulator's clock,
so the whole client, from ApiVersions negotiation to framing and timeouts, runs unchanged there.
"""

from __future__ import annotations

import errno
import selectors
import socket
import ssl
from typing import Any, Protocol

from ..errors import DisconnectedError, TlsError

EVENT_READ = selectors.EVENT_READ
EVENT_WRITE = selectors.EVENT_WRITE


class Stream(Protocol):
    """One non-blocking byte stream to a broker."""

    def connect_error(self) -> int:
        """After the stream turned writable while connecting: 0 when connected, else an errno."""

    def handshake(self) -> int:
        """Go on with the TLS handshake once connected: 0 when done (at once without TLS), else
        the event it waits for (EVENT_READ or EVENT_WRITE).  Raises TlsError when TLS fails and
        DisconnectedError when the peer went away."""

    def send(self, data: bytes | bytearray | memoryview) -> int:
        """Bytes written; raises BlockingIOError when full and OSError when broken."""

    def recv_into(self, buffer: memoryview) -> int:
        """Bytes read into ``buffer``, 0 once the peer closed; raises BlockingIOError when nothing
        is there."""

    def close(self) -> None: ...


class Poller(Protocol):
    def register(self, stream: Stream, events: int, data: Any) -> None: ...

    def modify(self, stream: Stream, events: int, data: Any) -> None: ...

    def unregister(self, stream: Stream) -> None: ...

    def select(self, timeout_ms: int) -> list[tuple[Any, int]]:
        """Wait up to ``timeout_ms`` for registered streams; (data, events) of the ready ones.
        Returns early, possibly empty, after :meth:`interrupt`."""

    def interrupt(self) -> None:
        """Make a thread blocked in :meth:`select` return (thread-safe)."""

    def close(self) -> None: ...


class IOBackend(Protocol):
    def open_stream(self, host: str, port: int) -> Stream:
        """Start connecting; raises OSError when the address cannot even be tried."""

    def new_poller(self) -> Poller: ...


class SocketStream:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def connect_error(self) -> int:
        return self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)

    def handshake(self) -> int:
        return 0

    def send(self, data: bytes | bytearray | memoryview) -> int:
        return self.sock.send(data)

    def recv_into(self, buffer: memoryview) -> int:
        return self.sock.recv_into(buffer)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class TlsStream(SocketStream):
    """A TLS connection on a non-blocking ``ssl.SSLSocket``: the handshake runs step by step as
    the socket allows, and TLS's "want read / want write" is BlockingIOError to the caller.  A
    read never leaves decrypted bytes behind in the SSL object: every read offers at least 64 KiB
    of room (the connection's receive buffer), more than one TLS record (16 KiB) holds, so a
    readable event is never missed."""

    sock: ssl.SSLSocket

    def __init__(self, sock: ssl.SSLSocket, host: str, port: int) -> None:
        super().__init__(sock)
        self._where = f"{host}:{port}"

    def handshake(self) -> int:
        try:
            self.sock.do_handshake()
        except ssl.SSLWantReadError:
            return EVENT_READ
        except ssl.SSLWantWriteError:
            return EVENT_WRITE
        except (ssl.SSLEOFError, ssl.SSLZeroReturnError):
            raise DisconnectedError(f"{self._where} closed the connection during the TLS handshake "
                                    f"(is it a TLS listener?)") from None
        except ssl.SSLCertVerificationError as exc:
            raise TlsError(f"the certificate of {self._where} does not verify: {exc.verify_message} "
                           f"(check ssl_cafile and ssl_check_hostname)") from None
        except ssl.SSLError as exc:
            raise TlsError(f"TLS handshake with {self._where} failed: {exc.reason or exc}") from None
        except OSError as exc:
            raise DisconnectedError(f"TLS handshake with {self._where} failed: {exc}") from None
        return 0

    def send(self, data: bytes | bytearray | memoryview) -> int:
        try:
            return self.sock.send(data)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise BlockingIOError() from None

    def recv_into(self, buffer: memoryview) -> int:
        try:
            return self.sock.recv_into(buffer)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise BlockingIOError() from None
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):  # the peer's close_notify, or a close without it
            return 0
        except ssl.SSLError as exc:
            # with TLS 1.3 the server checks the client's certificate after the client's side of
            # the handshake is done: its refusal is an alert read here
            raise TlsError(f"{self._where} ended TLS: {exc.reason or exc} (does it require a client "
                           f"certificate? ssl_certfile)") from None


def _socket_of(stream: Stream) -> socket.socket:
    if not isinstance(stream, SocketStream):
        raise TypeError(f"a SelectorPoller waits on sockets, not on {stream!r}")
    return stream.sock


class SelectorPoller:
    """``selectors`` plus a socket pair through which other threads interrupt a select."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)

    def register(self, stream: Stream, events: int, data: Any) -> None:
        self._selector.register(_socket_of(stream), events, data)

    def modify(self, stream: Stream, events: int, data: Any) -> None:
        self._selector.modify(_socket_of(stream), events, data)

    def unregister(self, stream: Stream) -> None:
        try:
            self._selector.unregister(_socket_of(stream))
        except (KeyError, ValueError, OSError):
            pass  # already closed

    def select(self, timeout_ms: int) -> list[tuple[Any, int]]:
        try:
            ready = self._selector.select(max(timeout_ms, 0) / 1000)
        except (OSError, ValueError):
            return []  # closed by another thread, or a stream closed under us
        result = []
        for key, events in ready:
            if key.data is None:
                self._drain_wakeups()
            else:
                result.append((key.data, events))
        return result

    def interrupt(self) -> None:
        try:
            self._wake_w.send(b"\x00")
        except (BlockingIOError, OSError):
            pass  # already pending, or closed

    def _drain_wakeups(self) -> None:
        try:
            while self._wake_r.recv(1024):
                pass
        except (BlockingIOError, OSError):
            pass

    def close(self) -> None:
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()


class SocketIO:
    """Sockets to brokers; TLS ones when given an ``ssl.SSLContext``."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self.ssl_context = ssl_context

    def open_stream(self, host: str, port: int) -> Stream:
        # Addresses come from brokers (Metadata, FindCoordinator) and may be anything a broker
        # can encode: a null or empty host, a port out of range.  Each is refused as OSError,
        # so the caller counts a failed attempt; socket would raise TypeError or OverflowError.
        # An empty host would mean this machine to socket; Kafka uses it for "no node".
        if not isinstance(host, str) or not host:
            raise OSError(errno.EINVAL, f"bad host {host!r}")
        if not isinstance(port, int) or not 0 < port < 65536:
            raise OSError(errno.EINVAL, f"port {port!r} is out of range")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            if self.ssl_context is not None:
                # wrapped before connecting: connect_ex then sets up TLS, and the handshake runs
                # once the connection is up (TlsStream.handshake)
                sock = self.ssl_context.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            code = sock.connect_ex((host, port))
        except (OSError, OverflowError, ValueError, TypeError) as exc:  # TypeError: a NUL in the host
            sock.close()
            raise OSError(errno.EINVAL, f"cannot connect to {host!r}:{port}: {exc}") from None
        if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY):
            sock.close()
            raise OSError(code, f"connect to {host}:{port} failed: {errno.errorcode.get(code, code)}")
        if isinstance(sock, ssl.SSLSocket):
            return TlsStream(sock, host, port)
        return SocketStream(sock)

    def new_poller(self) -> Poller:
        return SelectorPoller()
