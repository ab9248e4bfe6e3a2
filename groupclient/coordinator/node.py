"""One broker node: a listener on 127.0.0.1, its connections, and its group coordinator.

Requests on a connection are answered strictly in order, one at a time, as a Kafka broker
does; a held JoinGroup therefore holds that connection, not the others.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..protocol.apis import API_SPECS, ApiKey
from ..error_codes import ErrorCode
from ..protocol.framing import SIZE_BYTES, FrameError, frame_size, peek_header
from .faults import FaultKind
from .group.coordinator import GroupCoordinator
from .handlers import HANDLERS, RequestContext
from .handlers.context import Cluster
from .handlers.api_versions import supported_versions
from .handlers.sasl import authenticate_response, handshake_response
from .memory_pool import Grant
from .runtime import TimerHandle
from .sasl_session import Gate, SaslSession
from .telemetry import GROUPS_UNTOUCHED, CoordinatorTelemetry

log = logging.getLogger("groupclient.coordinator.node")

_SASL_MAX_RECEIVE = 524_288  # sasl.server.max.receive.size
_UNMETERED_FRAME = 256 * 1024  # frames up to this size are not counted against queued_max_request_bytes
_NO_GRANT = Grant(None, 0)


class DropConnection(Exception):
    """A fault rule asked for the connection to be closed without an answer."""


class CloseAfter(Exception):
    """Authentication failed: send ``answer`` (None: nothing) after the failed-authentication
    delay, then close."""

    def __init__(self, answer: bytes | None) -> None:
        super().__init__("authentication failed")
        self.answer = answer


class BrokerNode:
    def __init__(self, core: Cluster, node_id: int, host: str, port: int,
                 telemetry: CoordinatorTelemetry | None = None) -> None:
        """``telemetry``: the cluster's metrics (None: none are recorded, at the cost of a check per request)."""
        self.core = core
        self.node_id = node_id
        self.host = host
        self.port = port
        self.live = False
        self.telemetry = telemetry
        self.coordinator = GroupCoordinator(core.config, core.group_store, node_id, core.new_member_id,
                                            core.new_consumer_member_id,
                                            telemetry.rebalanced if telemetry is not None else None,
                                            core.topics.ids_and_counts)
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[Any]] = set()
        self._timer: TimerHandle | None = None
        self._timer_deadline: int | None = None

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        if self.live:
            return
        security = self.core.config.security
        tls = security.server_context() if security.uses_tls else None
        # a client that never finishes the TLS handshake is dropped after 10 s
        self._server = await asyncio.start_server(self._serve, self.host, self.port, reuse_address=True, ssl=tls,
                                                  ssl_handshake_timeout=10.0 if tls else None)
        self.port = self._server.sockets[0].getsockname()[1]
        self.live = True
        log.info("node %d listening on %s:%d (%s)", self.node_id, self.host, self.port, security.protocol)

    async def stop(self, shutting_down: bool = False) -> None:
        """Stop serving.  ``shutting_down``: the whole cluster stops, so the groups here are
        not moving anywhere, and this is logged at DEBUG (ClusterCore.stop logs the shutdown)."""
        if not self.live:
            return
        self.live = False
        assert self._server is not None
        self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None
        self.coordinator.unload_all(shutting_down)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._timer_deadline = None
        log.log(logging.DEBUG if shutting_down else logging.INFO, "node %d stopped", self.node_id)

    # -- timers --------------------------------------------------------------------------
    def kick_timers(self, api: ApiKey | None = None) -> None:
        """Run due coordinator timers and arm the loop for the next deadline.  ``api``: the API of
        the request just handled, if that is the caller; unless it is one that never changes a
        group, the metrics look at the groups again (as after timers that ran)."""
        now = self.core.clock.monotonic_ms()
        ran = self.coordinator.on_timer(now)
        if self.telemetry is not None and (ran or api not in GROUPS_UNTOUCHED):
            self.telemetry.observe_groups(self.node_id, self.coordinator)
        deadline = self.coordinator.next_deadline()
        if deadline == self._timer_deadline and self._timer is not None:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_deadline = deadline
        if deadline is not None and self.live:
            self._timer = self.core.runtime.call_later(max(deadline - now, 0), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_deadline = None
        self.kick_timers()

    # -- connections ---------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        peer = writer.get_extra_info("peername")
        client_host = peer[0] if peer else "unknown"
        refusal = self._admit_connection(client_host)
        if refusal is not None:
            log.warning("node %d: refusing connection from %s: %s", self.node_id, peer, refusal)
            writer.close()
            return
        self._connections.add(task)
        config = self.core.config

        def close_idle() -> None:
            log.info("node %d: closing connection from %s: no request for %d ms (connections_max_idle_ms)",
                     self.node_id, peer, config.connections_max_idle_ms)
            writer.close()  # the pending read then ends like a client that went away

        idle = _IdleTimeout(config.connections_max_idle_ms / 1000, close_idle)
        connection = object()  # who sent a request, for what a closed connection ends (share sessions)
        session = SaslSession(config.security, f"{client_host}:{peer[1] if peer else '?'}") \
            if config.security.uses_sasl else None
        try:
            while True:
                prefix = await reader.readexactly(SIZE_BYTES)
                # before authentication a frame is held to Kafka's sasl.server.max.receive.size
                limit = config.max_request_bytes if session is None or session.complete else _SASL_MAX_RECEIVE
                size = frame_size(prefix, limit)
                # a big frame is read only once the process-wide budget has room for it; small
                # ones (every group request) are not held up behind big ones, nor behind a
                # client that declared a big frame and sends it slowly
                grant = await self.core.request_memory.acquire(size) if size > _UNMETERED_FRAME else _NO_GRANT
                try:
                    payload = await reader.readexactly(size)
                    idle.request_started()
                    answer = await self._dispatch(payload, client_host, session, grant.release, connection)
                finally:
                    grant.release()
                if answer is not None:
                    writer.write(answer)
                    await writer.drain()
                idle.request_done()
        except CloseAfter as failed:
            await self.core.runtime.sleep(config.connection_failed_authentication_delay_ms)
            if failed.answer is not None:
                writer.write(failed.answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away, or the connection was idle
        except FrameError as exc:
            log.warning("node %d: closing connection from %s: %s", self.node_id, peer, exc)
        except DropConnection:
            log.info("node %d: dropping connection from %s (fault rule)", self.node_id, peer)
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("node %d: closing connection from %s after an internal error", self.node_id, peer)
        finally:
            idle.cancel()
            self._connections.discard(task)
            self._release_connection(client_host)
            writer.close()
            try:
                self.core.share_groups.connection_closed(connection)  # Kafka releases its share sessions
            except Exception:  # a journal that cannot be written: the records wait for their locks
                log.exception("node %d: releasing the share sessions of a closed connection failed", self.node_id)

    async def answer_frame(self, payload: bytes, client_host: str) -> bytes | None:
        """The framed answer to one request frame (None when no answer is due); raises
        FrameError or DropConnection when the connection must close.  Used by the simulator's
        in-memory connections."""
        return await self._dispatch(payload, client_host)

    async def _dispatch(self, payload: bytes, client_host: str, session: SaslSession | None = None,
                        decoded: Callable[[], None] | None = None, connection: object = None) -> bytes | None:
        """``decoded`` is called once the frame's bytes are no longer needed: after decoding,
        except for Produce, whose records are kept until appended (as Kafka keeps the buffer)."""
        fixed = peek_header(payload)
        telemetry = self.telemetry
        try:
            key = ApiKey(fixed.api_key)
        except ValueError:
            if session is not None and not session.complete:
                raise CloseAfter(None) from None
            raise FrameError(f"unknown API key {fixed.api_key}") from None
        spec = API_SPECS[key]
        version = fixed.api_version
        served = spec.min_version <= version <= spec.max_version
        gate = Gate.SERVE if session is None else session.gate(key, served)
        if gate is Gate.CLOSE:
            raise CloseAfter(None)
        if key is ApiKey.API_VERSIONS and not served:
            # KIP-511: answer with v0 so any client can read which versions we do have
            listed = supported_versions(0, ErrorCode.UNSUPPORTED_VERSION, self.core.config.serves_consumer_protocol)
            started = telemetry.now() if telemetry is not None else 0  # from the header, all there is decoded
            return self._reply(key, listed, fixed.correlation_id, 0, started)
        if not spec.schema_knows(version):
            raise FrameError(f"{key.name} version {version} is unknown")
        try:
            request = spec.request.decode(payload, version=version, header=True)
        except Exception as exc:
            raise FrameError(f"malformed {key.name} v{version} request: {exc!r}") from None
        started = telemetry.now() if telemetry is not None else 0
        if decoded is not None and key is not ApiKey.PRODUCE:
            decoded()
        handler = HANDLERS[key]
        if gate is Gate.REFUSE:
            raise CloseAfter(self._reply(key, handler.error_response(request, ErrorCode.ILLEGAL_SASL_STATE),
                                         fixed.correlation_id, version, started))
        if gate is Gate.SASL:
            assert session is not None
            if not served:  # Kafka closes on a SaslAuthenticate version it does not know
                raise CloseAfter(None)
            answer = self._reply(key, self._authenticate(session, key, request), fixed.correlation_id, version, started)
            if session.failed:
                raise CloseAfter(answer)
            return answer
        if not served:
            response = handler.error_response(request, ErrorCode.UNSUPPORTED_VERSION)
        else:
            response = await self._handle(key, handler, request, client_host,
                                          session.principal if session is not None else None, connection)
        if key is ApiKey.PRODUCE and request.acks == 0:
            if telemetry is not None:
                telemetry.answered(key, response, started)  # handled, though nothing is sent back
            return None
        return self._reply(key, response, fixed.correlation_id, version, started)

    @staticmethod
    def _authenticate(session: SaslSession, key: ApiKey, request: Any) -> Any:
        if key is ApiKey.SASL_HANDSHAKE:
            code, mechanisms = session.handshake(request.mechanism)
            return handshake_response(request, code, mechanisms)
        code, message, token = session.authenticate(bytes(request.auth_bytes or b""))
        return authenticate_response(request, code, message, token)

    async def _handle(self, key: ApiKey, handler: Any, request: Any, client_host: str,
                      principal: str | None = None, connection: object = None) -> Any:
        rule = self.core.faults.take(int(key), self.node_id)
        if rule is not None:
            if rule.kind is FaultKind.DROP:
                raise DropConnection()
            if rule.kind is FaultKind.ERROR:
                return handler.error_response(request, rule.error_code)
            await self.core.runtime.sleep(rule.delay_ms)
        header = request.header
        ctx = RequestContext(self, self.core, request.version, header.client_id or "", client_host, principal,
                             connection)
        try:
            return await handler.handle(ctx, request)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("node %d: %s handler failed", self.node_id, key.name)
            return handler.error_response(request, ErrorCode.UNKNOWN_SERVER_ERROR)
        finally:
            self.kick_timers(key)

    def _reply(self, key: ApiKey, response: Any, correlation_id: int, version: int, started: int) -> bytes:
        """The answer's bytes; the metrics count it (``started``: ``telemetry.now()`` at the request)."""
        answer = self._encode(response, correlation_id, version)
        if self.telemetry is not None:
            self.telemetry.answered(key, response, started)
        return answer

    @staticmethod
    def _encode(response: Any, correlation_id: int, version: int) -> bytes:
        if response.version != version:
            raise AssertionError(f"answer built at v{response.version}, request was v{version}")
        response.with_header(correlation_id=correlation_id)
        return bytes(response.encode(header=True, framed=True))

    # -- connection limits (max.connections, max.connections.per.ip) ---------------------
    # Open connections per peer host; made on first use (see _admit_connection).
    _connections_per_host: Counter[str] | None = None

    def _admit_connection(self, client_host: str) -> str | None:
        """Count a new connection in, or say why it is refused.

        A refused connection is closed at once, as Kafka does over max.connections.per.ip
        (over max.connections Kafka stops accepting for a while instead).
        """
        config = self.core.config
        if self._connections_per_host is None:
            self._connections_per_host = Counter()
        per_host = self._connections_per_host
        if len(self._connections) >= config.max_connections:
            return f"{len(self._connections)} connections are open (max_connections={config.max_connections})"
        if per_host[client_host] >= config.max_connections_per_ip:
            return (f"{per_host[client_host]} connections from {client_host} are open "
                    f"(max_connections_per_ip={config.max_connections_per_ip})")
        per_host[client_host] += 1
        return None

    def _release_connection(self, client_host: str) -> None:
        per_host = self._connections_per_host
        if per_host is not None:
            per_host[client_host] -= 1
            if per_host[client_host] <= 0:
                del per_host[client_host]


class _IdleTimeout:
    """connections.max.idle.ms for one connection: ``close`` is called once no request has come
    for ``idle_s`` seconds since the last answer.  A request being answered (a JoinGroup held for
    a rebalance) is not idleness.  One timer per connection, re-armed only when it fires, so a
    request costs two attribute writes rather than a timer."""

    def __init__(self, idle_s: float, close: Callable[[], None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._idle_s = idle_s
        self._close = close
        self._busy = False
        self._last_answer = self._loop.time()
        self._timer = self._loop.call_later(idle_s, self._check)

    def request_started(self) -> None:
        self._busy = True

    def request_done(self) -> None:
        self._busy = False
        self._last_answer = self._loop.time()

    def cancel(self) -> None:
        self._timer.cancel()

    def _check(self) -> None:
        remaining = self._idle_s - (self._loop.time() - self._last_answer)
        if self._busy:
            self._timer = self._loop.call_later(self._idle_s, self._check)
        elif remaining > 0:
            self._timer = self._loop.call_later(remaining, self._check)
        else:
            self._close()
