"""One broker node: a listener on 127.0.0.1, its connections, and its group coordinator.

Requests on a connection are answered strictly in order, one at a time, as a Kafka broker
does; a held JoinGroup therefore holds that connection, not the others.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..protocol.apis import API_SPECS, ApiKey
from ..protocol.errors import ErrorCode
from ..protocol.framing import SIZE_BYTES, FrameError, frame_size, peek_header
from .faults import FaultKind
from .group.coordinator import GroupCoordinator
from .handlers import HANDLERS, RequestContext
from .handlers.api_versions import supported_versions
from .runtime import TimerHandle

if TYPE_CHECKING:
    from .core import ClusterCore

log = logging.getLogger("groupclient.coordinator.node")


class DropConnection(Exception):
    """A fault rule asked for the connection to be closed without an answer."""


class BrokerNode:
    def __init__(self, core: ClusterCore, node_id: int, host: str, port: int) -> None:
        self.core = core
        self.node_id = node_id
        self.host = host
        self.port = port
        self.live = False
        self.coordinator = GroupCoordinator(core.config, core.group_store, node_id)
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[Any]] = set()
        self._timer: TimerHandle | None = None
        self._timer_deadline: int | None = None

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        if self.live:
            return
        self._server = await asyncio.start_server(self._serve, self.host, self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        self.live = True
        log.info("node %d listening on %s:%d", self.node_id, self.host, self.port)

    async def stop(self) -> None:
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
        self.coordinator.unload_all()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._timer_deadline = None
        log.info("node %d stopped", self.node_id)

    # -- timers --------------------------------------------------------------------------
    def kick_timers(self) -> None:
        """Run due coordinator timers and arm the loop for the next deadline."""
        now = self.core.clock.monotonic_ms()
        self.coordinator.on_timer(now)
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
        self._connections.add(task)
        peer = writer.get_extra_info("peername")
        client_host = peer[0] if peer else "unknown"
        try:
            while True:
                prefix = await reader.readexactly(SIZE_BYTES)
                payload = await reader.readexactly(frame_size(prefix, self.core.config.max_request_bytes))
                answer = await self._dispatch(payload, client_host)
                if answer is not None:
                    writer.write(answer)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away
        except FrameError as exc:
            log.warning("node %d: closing connection from %s: %s", self.node_id, peer, exc)
        except DropConnection:
            log.info("node %d: dropping connection from %s (fault rule)", self.node_id, peer)
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("node %d: closing connection from %s after an internal error", self.node_id, peer)
        finally:
            self._connections.discard(task)
            writer.close()

    async def answer_frame(self, payload: bytes, client_host: str) -> bytes | None:
        """The framed answer to one request frame (None when no answer is due); raises
        FrameError or DropConnection when the connection must close.  Used by the simulator's
        in-memory connections."""
        return await self._dispatch(payload, client_host)

    async def _dispatch(self, payload: bytes, client_host: str) -> bytes | None:
        fixed = peek_header(payload)
        try:
            key = ApiKey(fixed.api_key)
        except ValueError:
            raise FrameError(f"unknown API key {fixed.api_key}") from None
        spec = API_SPECS[key]
        version = fixed.api_version
        served = spec.min_version <= version <= spec.max_version
        if key is ApiKey.API_VERSIONS and not served:
            # KIP-511: answer with v0 so any client can read which versions we do have
            return self._encode(supported_versions(0, ErrorCode.UNSUPPORTED_VERSION), fixed.correlation_id, 0)
        if not spec.schema_knows(version):
            raise FrameError(f"{key.name} version {version} is unknown")
        try:
            request = spec.request.decode(payload, version=version, header=True)
        except Exception as exc:
            raise FrameError(f"malformed {key.name} v{version} request: {exc!r}") from None
        handler = HANDLERS[key]
        if not served:
            response = handler.error_response(request, ErrorCode.UNSUPPORTED_VERSION)
        else:
            response = await self._handle(key, handler, request, client_host)
        if key is ApiKey.PRODUCE and request.acks == 0:
            return None
        return self._encode(response, fixed.correlation_id, version)

    async def _handle(self, key: ApiKey, handler: Any, request: Any, client_host: str) -> Any:
        rule = self.core.faults.take(int(key), self.node_id)
        if rule is not None:
            if rule.kind is FaultKind.DROP:
                raise DropConnection()
            if rule.kind is FaultKind.ERROR:
                return handler.error_response(request, rule.error_code)
            await self.core.runtime.sleep(rule.delay_ms)
        header = request.header
        ctx = RequestContext(self, self.core, request.version, header.client_id or "", client_host)
        try:
            return await handler.handle(ctx, request)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("node %d: %s handler failed", self.node_id, key.name)
            return handler.error_response(request, ErrorCode.UNKNOWN_SERVER_ERROR)
        finally:
            self.kick_timers()

    @staticmethod
    def _encode(response: Any, correlation_id: int, version: int) -> bytes:
        if response.version != version:
            raise AssertionError(f"answer built at v{response.version}, request was v{version}")
        response.with_header(correlation_id=correlation_id)
        return bytes(response.encode(header=True, framed=True))
