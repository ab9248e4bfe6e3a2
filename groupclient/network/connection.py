"""One non-blocking connection to one broker, and its in-flight requests.

States: DISCONNECTED -> CONNECTING -> HANDSHAKING (TLS; passed through at once without it) ->
NEGOTIATING (ApiVersions) -> AUTHENTICATING (SaslHandshake, SaslAuthenticate; only with SASL) ->
READY, and back to DISCONNECTED on any error, after which a reconnect waits an exponential
backoff with jitter.  Everything before READY must finish within request_timeout_ms.  A failed
authentication (TLS or SASL) is kept in ``auth_failure`` for the client to raise to the caller.
The connection never runs callbacks: it returns completions for the client to run outside
its lock.
"""

from __future__ import annotations

import enum
import logging
import os
import random
import struct
from collections import deque
from dataclasses import dataclass
from typing import Any

from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
)

from ..version import __version__
from ..errors import (
    AuthenticationError, DisconnectedError, ProtocolError, RequestTimedOutError, SaslAuthenticationError, TlsError,
)
# CLIENT_MAX_VERSIONS: the newest version of each API the client builds and reads, derived from
# the one table of versions (API_TABLE); still importable from here, as tests do
from ..protocol.apis import CLIENT_MAX_VERSIONS as CLIENT_MAX_VERSIONS, ApiKey
from ..protocol.decoding import decode_response
from ..error_codes import ErrorCode, error_name
from ..protocol.sasl import SaslError
from .backoff import ExponentialBackoff
from .future import RequestFuture
from .io import EVENT_WRITE, IOBackend, Stream, TlsStream
from .security import SaslExchange, SaslSettings

log = logging.getLogger("groupclient.network")

_SIZE = struct.Struct(">i")
# the receive buffer: the least free space a read gets, reads per readable event at most, and
# when a grown buffer goes back to _MIN_ROOM (that many frames in a row using under a quarter)
_MIN_ROOM = 64 * 1024
_MAX_READS = 64
_SHRINK_ABOVE, _SHRINK_AFTER = 1 << 20, 256


def _not_kafka(first: bytes) -> str:
    """What the first bytes of an impossible answer say about the peer (an HTTP server answers
    'HTTP', whose bytes read as a size are 1213486160)."""
    if len(first) == 4 and all(32 <= b < 127 for b in first):
        text = first.decode("ascii")
        peer = "an HTTP server" if text == "HTTP" else "something else"
        return f" (the answer begins {text!r}: the peer is {peer}, not a Kafka broker)"
    return ""


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"API {api_key}"


class ConnectionState(enum.Enum):
    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    HANDSHAKING = "handshaking"
    NEGOTIATING = "negotiating"
    AUTHENTICATING = "authenticating"
    READY = "ready"


_SETTING_UP = (ConnectionState.CONNECTING, ConnectionState.HANDSHAKING, ConnectionState.NEGOTIATING,
               ConnectionState.AUTHENTICATING)


@dataclass
class IoCounters:
    """Bytes moved since the owner last took them (the client's metrics); touched under the
    client's lock only."""

    sent: int = 0
    received: int = 0


@dataclass
class InFlight:
    correlation_id: int
    response_cls: Any
    version: int
    future: RequestFuture[Any]
    deadline: int
    api_key: int


Completion = tuple[RequestFuture[Any], bool, Any]  # (future, succeeded, value or exception)


class BrokerConnection:
    def __init__(self, node_id: int, host: str, port: int, *, client_id: str, request_timeout_ms: int,
                 reconnect_backoff_ms: int, reconnect_backoff_max_ms: int, max_in_flight: int, rng: random.Random,
                 max_response_bytes: int = 100_000_000, counters: IoCounters | None = None,
                 sasl: SaslSettings | None = None) -> None:
        self.node_id = node_id
        self.sasl = sasl
        self._sasl_exchange: SaslExchange | None = None
        self._handshake_wants = 0  # the event a TLS handshake waits for
        # the last failed authentication, until the client takes it (take_auth_failure)
        self.auth_failure: AuthenticationError | None = None
        self.counters = counters or IoCounters()
        self.host = host
        self.port = port
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.max_in_flight = max_in_flight
        self.max_response_bytes = max_response_bytes
        self.state = ConnectionState.DISCONNECTED
        self.sock: Stream | None = None
        self.in_flight: deque[InFlight] = deque()
        self.api_versions: dict[int, tuple[int, int]] = {}
        self.last_attempt_ms = -(2**62)
        self.failures = 0
        # why the connection last closed (None: it never failed): bootstrap errors name it
        self.last_error: BaseException | None = None
        self._next_attempt_ms = -(2**62)
        self._reconnect_backoff = ExponentialBackoff(reconnect_backoff_ms, reconnect_backoff_max_ms)
        self._rng = rng  # the client's: reconnect jitter replays with its seed
        self._send_buffer = bytearray()
        # received bytes, read straight into one buffer kept for the connection (no allocation
        # and no join per read): frames are parsed from _rstart to _rend; see _room and _frames
        self._rbuf = bytearray(_MIN_ROOM)
        self._rstart = self._rend = 0
        self._small_frames = 0  # frames in a row under a quarter of the buffer (shrinking it)
        self._correlation = 0
        self._connect_deadline = 0

    def __repr__(self) -> str:
        return f"<BrokerConnection node={self.node_id} {self.host}:{self.port} {self.state.value}>"

    # -- connecting ----------------------------------------------------------------------
    def can_connect(self, now: int) -> bool:
        return self.state is ConnectionState.DISCONNECTED and now >= self._next_attempt_ms

    def is_connecting(self) -> bool:
        return self.state in _SETTING_UP

    def is_ready(self) -> bool:
        return self.state is ConnectionState.READY

    def can_send(self) -> bool:
        return self.is_ready() and len(self.in_flight) < self.max_in_flight

    def connect(self, now: int, io: IOBackend) -> list[Completion]:
        self.last_attempt_ms = now
        self._connect_deadline = now + self.request_timeout_ms
        self.state = ConnectionState.CONNECTING
        try:
            self.sock = io.open_stream(self.host, self.port)
        except OSError as exc:
            # an address that cannot even be tried (bad port, bad host) is a failed attempt,
            # backed off like any other, never an exception out of poll()
            return self.close(now, DisconnectedError(f"cannot connect to node {self.node_id}: {exc}"))
        return []

    def _handshake(self, now: int) -> list[Completion]:
        """One step of the TLS handshake (none without TLS); on to ApiVersions once it is done."""
        assert self.sock is not None
        self.state = ConnectionState.HANDSHAKING
        try:
            self._handshake_wants = self.sock.handshake()
        except AuthenticationError as exc:
            return self._auth_failed(now, exc)
        except DisconnectedError as exc:
            return self.close(now, exc)
        if not self._handshake_wants:
            self._on_connected(now)
        return []

    def _negotiating(self) -> bool:  # a method: mypy narrows self.state across calls otherwise
        return self.state is ConnectionState.NEGOTIATING

    def _on_connected(self, now: int) -> None:
        self.state = ConnectionState.NEGOTIATING
        request = ApiVersionsRequest(version=CLIENT_MAX_VERSIONS[ApiKey.API_VERSIONS],
                                     client_software_name="groupclient", client_software_version=__version__)
        self._enqueue(request, ApiVersionsResponse, now).add_errback(lambda exc: None)

    def _on_api_versions(self, response: Any, asked: int, now: int) -> list[Completion]:
        if response.error_code == ErrorCode.UNSUPPORTED_VERSION and asked > 0:
            # KIP-511: the refusal comes as v0 and names the broker's own range: ask again within
            # it (and always lower than before, so this cannot loop)
            broker_max = next((k.max_version for k in response.api_keys or () if k.api_key == ApiKey.API_VERSIONS), 0)
            retry = ApiVersionsRequest(version=max(0, min(broker_max, asked - 1)), client_software_name="groupclient",
                                       client_software_version=__version__)
            self._enqueue(retry, ApiVersionsResponse, now).add_errback(lambda exc: None)
            return []
        if response.error_code:
            return self.close(now, DisconnectedError(f"ApiVersions failed with {error_name(response.error_code)}"))
        if response.api_keys is None:  # a null array decodes, but leaves nothing to negotiate with
            return self.close(now, ProtocolError("ApiVersions answer without api_keys"))
        self.api_versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        if self.sasl is not None:
            return self._start_sasl(now)
        return self._on_ready()

    def _on_ready(self) -> list[Completion]:
        self.state = ConnectionState.READY
        self.failures = 0
        self.last_error = None
        log.debug("node %d at %r:%s is ready", self.node_id, self.host, self.port)
        return []

    # -- SASL (KIP-152: SaslHandshake v1, then tokens in SaslAuthenticate) ----------------------
    def _start_sasl(self, now: int) -> list[Completion]:
        assert self.sasl is not None
        self.state = ConnectionState.AUTHENTICATING
        handshake, authenticate = (self.version_for(k) for k in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE))
        if handshake != 1 or authenticate is None:
            return self._auth_failed(now, SaslAuthenticationError(
                f"node {self.node_id} does not serve SASL authentication (SaslHandshake v1 and SaslAuthenticate); "
                f"is this a SASL listener?", self.node_id, ErrorCode.ILLEGAL_SASL_STATE))
        self._sasl_exchange = self.sasl.exchange()
        self._enqueue(SaslHandshakeRequest(version=1, mechanism=self.sasl.mechanism), SaslHandshakeResponse,
                      now).add_errback(lambda exc: None)
        return []

    def _on_sasl(self, api_key: int, response: Any, now: int) -> list[Completion]:
        exchange, sasl = self._sasl_exchange, self.sasl
        assert exchange is not None and sasl is not None
        if response.error_code:
            if api_key == ApiKey.SASL_HANDSHAKE and response.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
                message = (f"SASL mechanism {sasl.mechanism} is not enabled on node {self.node_id}; it has "
                           f"{', '.join(sorted(response.mechanisms or ())) or 'none'}")
            else:
                message = getattr(response, "error_message", None) or error_name(response.error_code)
            return self._auth_failed(now, SaslAuthenticationError(message, self.node_id, response.error_code))
        try:
            if api_key == ApiKey.SASL_HANDSHAKE:
                token: bytes | None = exchange.first()
            else:
                token = exchange.step(bytes(response.auth_bytes or b""))
        except SaslError as exc:
            return self._auth_failed(now, SaslAuthenticationError(
                f"SASL {sasl.mechanism} with node {self.node_id} failed: {exc}", self.node_id))
        if token is None:
            self._sasl_exchange = None
            log.debug("node %d: authenticated as %r with %s", self.node_id, sasl.username, sasl.mechanism)
            return self._on_ready()
        version = self.version_for(ApiKey.SASL_AUTHENTICATE)
        assert version is not None
        self._enqueue(SaslAuthenticateRequest(version=version, auth_bytes=token), SaslAuthenticateResponse,
                      now).add_errback(lambda exc: None)
        return []

    def _auth_failed(self, now: int, error: AuthenticationError) -> list[Completion]:
        """Authentication failed: not worth retrying until the settings change, so it is kept for
        the caller (NetworkClient raises it from the application's next wait)."""
        log.error("node %d (%r:%s): %s", self.node_id, self.host, self.port, error)
        self.auth_failure = error
        return self.close(now, error)

    def take_auth_failure(self) -> AuthenticationError | None:
        failure, self.auth_failure = self.auth_failure, None
        return failure

    def version_for(self, api_key: int) -> int | None:
        """The highest version both sides support, or None."""
        broker = self.api_versions.get(api_key)
        ours = CLIENT_MAX_VERSIONS.get(api_key)
        if broker is None or ours is None:
            return None
        version = min(broker[1], ours)
        return version if version >= broker[0] else None

    # -- sending -------------------------------------------------------------------------
    def send(self, request: Any, response_cls: Any, now: int, timeout_ms: int | None = None) -> RequestFuture[Any]:
        return self._enqueue(request, response_cls, now, timeout_ms)

    def _enqueue(self, request: Any, response_cls: Any, now: int, timeout_ms: int | None = None) -> RequestFuture[Any]:
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        request.with_header(correlation_id=self._correlation, client_id=self.client_id)
        self._send_buffer += request.encode(header=True, framed=True)
        future: RequestFuture[Any] = RequestFuture()
        if response_cls is None:  # no answer expected (Produce acks=0); done once written
            future.success(None)
        else:
            timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
            self.in_flight.append(InFlight(self._correlation, response_cls, request.version, future,
                                           now + timeout, request.API_KEY))
        return future

    def wants_write(self) -> bool:
        if self.state is ConnectionState.HANDSHAKING:
            return self._handshake_wants == EVENT_WRITE
        return self.state is ConnectionState.CONNECTING or bool(self._send_buffer)

    # -- I/O -----------------------------------------------------------------------------
    def on_writable(self, now: int) -> list[Completion]:
        assert self.sock is not None
        if self.state is ConnectionState.CONNECTING:
            code = self.sock.connect_error()
            if code:
                return self.close(now, DisconnectedError(f"connect failed: {os.strerror(code)}"))
        if self.state in (ConnectionState.CONNECTING, ConnectionState.HANDSHAKING):
            failed = self._handshake(now)
            if not self._negotiating():
                return failed  # handshake still going, or failed
            # done: ApiVersions is queued, and goes out below
        if self._send_buffer:
            try:
                sent = self.sock.send(self._send_buffer)
            except (BlockingIOError, InterruptedError):
                return []
            except OSError as exc:
                return self.close(now, DisconnectedError(f"send failed: {exc}"))
            del self._send_buffer[:sent]
            self.counters.sent += sent
        return []

    def on_readable(self, now: int) -> list[Completion]:
        assert self.sock is not None
        if self.state is ConnectionState.HANDSHAKING:
            return self._handshake(now)
        completions: list[Completion] = []
        for _ in range(_MAX_READS):  # bounded: a peer that never stops sending cannot hold this thread
            room = self._room()
            wanted = len(room)
            try:
                received = self.sock.recv_into(room)
            except (BlockingIOError, InterruptedError):
                break
            except AuthenticationError as exc:  # a TLS alert (TlsStream)
                return completions + self._auth_failed(now, exc)
            except OSError as exc:
                return completions + self.close(now, DisconnectedError(f"receive failed: {exc}"))
            if not received:
                if self.state is ConnectionState.NEGOTIATING and isinstance(self.sock, TlsStream):
                    # closed right after the TLS handshake, before answering anything: with TLS
                    # 1.3 that is how a broker refuses this client's certificate (or its lack)
                    return completions + self._auth_failed(now, TlsError(
                        f"node {self.node_id} closed the connection right after the TLS handshake: it probably "
                        f"requires a client certificate it can verify (ssl_certfile, ssl_keyfile)", self.node_id))
                return completions + self.close(now, DisconnectedError("connection closed by the broker"))
            self._rend += received
            self.counters.received += received
            completions += self._frames(now)
            if self.state is ConnectionState.DISCONNECTED or received < wanted:
                break  # closed, or nothing more waiting in the socket
        return completions

    def _room(self) -> memoryview:
        """The free end of the receive buffer, at least _MIN_ROOM and the rest of the frame being
        received.  A buffer too small is replaced, never resized: a view may still be out on it."""
        pending = self._rend - self._rstart
        need = _MIN_ROOM
        if pending >= 4:
            size = _SIZE.unpack_from(self._rbuf, self._rstart)[0]
            if 4 <= size <= self.max_response_bytes:  # a bad size is reported by _frames
                need = max(need, 4 + size - pending)
        if len(self._rbuf) - self._rend < need:
            if self._rstart and len(self._rbuf) - pending >= need:
                # room enough once the partial frame moves to the front (a short copy: the rest
                # of a long frame always had room reserved when its size arrived)
                self._rbuf[:pending] = self._rbuf[self._rstart:self._rend]
            else:
                grown = bytearray(pending + need)
                grown[:pending] = self._rbuf[self._rstart:self._rend]
                self._rbuf = grown
            self._rstart, self._rend = 0, pending
        return memoryview(self._rbuf)[self._rend:]

    def _frames(self, now: int) -> list[Completion]:
        """Hand out every complete frame in the buffer.  Each is decoded from a view of the buffer;
        decoding copies what it keeps (kafka-python's decoders copy every bytes field), so the
        bytes can be overwritten once it returns.  The buffer is never resized in place, so a view
        left over (in a traceback, say) can never make this fail."""
        completions: list[Completion] = []
        buf, pos, end = self._rbuf, self._rstart, self._rend
        view = memoryview(buf)
        while end - pos >= 4:
            size = _SIZE.unpack_from(buf, pos)[0]
            if size < 4 or size > self.max_response_bytes:  # < 4: no room for a correlation id
                return completions + self.close(now, ProtocolError(
                    f"bad response size {size}{_not_kafka(bytes(buf[pos:pos + 4]))}"))
            if end - pos < 4 + size:
                break
            self._small_frames = self._small_frames + 1 if 4 * (4 + size) <= len(buf) else 0
            completions += self._on_response(view[pos + 4 : pos + 4 + size], now)
            pos += 4 + size
            if self.state is ConnectionState.DISCONNECTED:
                return completions
        if pos < end:
            self._rstart = pos
            return completions
        self._rstart = self._rend = 0
        if len(buf) > _SHRINK_ABOVE and self._small_frames >= _SHRINK_AFTER:
            # a burst of large answers is over: give back the memory they needed
            self._rbuf, self._small_frames = bytearray(_MIN_ROOM), 0
        return completions

    def _on_response(self, payload: memoryview, now: int) -> list[Completion]:
        """One whole frame (``payload`` has 4 bytes at least).  Bytes this client cannot read close
        the connection with ProtocolError for every request in flight: once one answer is
        misread, the ones after it cannot be trusted either."""
        correlation_id = _SIZE.unpack_from(payload, 0)[0]
        if not self.in_flight or self.in_flight[0].correlation_id != correlation_id:
            return self.close(now, ProtocolError(f"unexpected correlation id {correlation_id}"))
        entry = self.in_flight[0]
        try:
            # read in place, in time linear in the frame (protocol/decoding.py)
            response = decode_response(entry.response_cls, payload, entry.version)
        except Exception as exc:  # MalformedMessage; anything else kafka-python's classes may raise
            return self.close(now, ProtocolError(f"undecodable {_api_name(entry.api_key)} v{entry.version} "
                                                 f"response: {exc!r}"))
        self.in_flight.popleft()
        if entry.api_key == ApiKey.API_VERSIONS and self.state is ConnectionState.NEGOTIATING:
            return [(entry.future, True, response)] + self._on_api_versions(response, entry.version, now)
        if self.state is ConnectionState.AUTHENTICATING and entry.api_key in (ApiKey.SASL_HANDSHAKE,
                                                                              ApiKey.SASL_AUTHENTICATE):
            return [(entry.future, True, response)] + self._on_sasl(entry.api_key, response, now)
        return [(entry.future, True, response)]

    def expire(self, now: int) -> list[Completion]:
        """Close the connection if a request or the connect attempt ran out of time."""
        if self.is_connecting() and now >= self._connect_deadline:
            return self.close(now, RequestTimedOutError(
                f"connecting to {self.host}:{self.port} did not finish within {self.request_timeout_ms} ms"))
        late = next((f for f in self.in_flight if now >= f.deadline), None)
        if late is not None:
            return self.close(now, RequestTimedOutError(
                f"{_api_name(late.api_key)} to {self.host}:{self.port} got no answer in time (request_timeout_ms)"))
        return []

    def next_deadline(self) -> int | None:
        if self.is_connecting():
            return self._connect_deadline
        return min(f.deadline for f in self.in_flight) if self.in_flight else None

    def close(self, now: int, error: BaseException | None = None) -> list[Completion]:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if error is not None:
            self.last_error = error
        if self.state is not ConnectionState.DISCONNECTED:
            if error is not None:
                # %r and %s: a broker may have advertised a host or port of any shape
                log.info("node %d (%r:%s): %s", self.node_id, self.host, self.port, error)
            if self.state is not ConnectionState.READY:
                self.failures += 1
            self._next_attempt_ms = now + self._backoff_ms()
        self.state = ConnectionState.DISCONNECTED
        self._sasl_exchange = None
        self._handshake_wants = 0
        self._send_buffer.clear()
        self._rstart = self._rend = 0
        if len(self._rbuf) > _MIN_ROOM:
            self._rbuf = bytearray(_MIN_ROOM)
        failed = [(f.future, False, error or DisconnectedError("connection closed")) for f in self.in_flight]
        self.in_flight.clear()
        return failed

    def _backoff_ms(self) -> int:
        """reconnect_backoff_ms doubling per failed attempt up to the max, with Kafka's 20% jitter."""
        return self._reconnect_backoff.backoff_ms(max(self.failures, 1) - 1, self._rng)
