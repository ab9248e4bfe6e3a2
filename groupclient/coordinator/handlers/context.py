"""What a request handler gets besides the decoded request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...protocol.errors import ErrorCode

if TYPE_CHECKING:
    from ..core import ClusterCore
    from ..node import BrokerNode


@dataclass(frozen=True)
class RequestContext:
    node: BrokerNode
    core: ClusterCore
    api_version: int
    client_id: str
    client_host: str

    @property
    def now(self) -> int:
        return self.core.clock.monotonic_ms()

    @property
    def wall_ms(self) -> int:
        return self.core.clock.wall_ms()


@dataclass(frozen=True)
class Handler:
    """One API key: answer a request, or build that API's answer carrying a single error."""

    handle: Callable[[RequestContext, Any], Awaitable[Any]]
    error_response: Callable[[Any, ErrorCode], Any]
