"""What the member logic, the fetcher and the consumer need from the network: one protocol.

:class:`~groupclient.network.client.NetworkClient` implements it over an
:class:`~groupclient.network.io.IOBackend` (sockets for real, in-memory streams in the
simulator); unit tests may implement it directly with scripted answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..clock import Clock, Timer
from .future import RequestFuture
from .metadata import ClusterMetadata


class Transport(Protocol):
    @property
    def metadata(self) -> ClusterMetadata: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def request_timeout_ms(self) -> int: ...

    def least_loaded_node(self) -> int | None: ...

    def ready(self, node_id: int) -> bool:
        """True if a request can go to the node now; otherwise start connecting if allowed."""

    def connection_failed(self, node_id: int) -> bool: ...

    def add_node(self, node_id: int, host: str, port: int) -> None: ...

    def disconnect(self, node_id: int) -> None: ...

    def send(self, node_id: int, request_cls: Any, response_cls: Any, build: Callable[[int], Any],
             timeout_ms: int | None = None) -> RequestFuture[Any]: ...

    def version_for(self, node_id: int, api_key: int) -> int | None:
        """The version of ``api_key`` both sides speak on the node's connection (None: none, or
        not connected yet)."""

    def poll_until(self, future: RequestFuture[Any] | None, timer: Timer, wakeup: bool = True) -> None: ...

    def sleep(self, ms: int, timer: Timer) -> None: ...

    def set_topics(self, topics: set[str] | None) -> None: ...

    def maybe_update_metadata(self) -> RequestFuture[Any] | None: ...

    def wakeup(self) -> None: ...

    def interrupt(self) -> None:
        """End the application thread's current wait for network events at once, without an
        error (thread-safe): something it acts on arrived on another thread."""

    def close(self) -> None: ...
