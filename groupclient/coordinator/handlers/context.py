"""What a request handler gets besides the decoded request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ...protocol.errors import ErrorCode

from ..runtime import Waiter

if TYPE_CHECKING:
    from ..core import ClusterCore
    from ..node import BrokerNode
    from ..storage.topic_log import PartitionLog

T = TypeVar("T")


@dataclass(frozen=True)
class RequestContext:
    node: BrokerNode
    core: ClusterCore
    api_version: int
    client_id: str
    client_host: str
    principal: str | None = None  # the SASL user name on a SASL listener

    @property
    def now(self) -> int:
        return self.core.clock.monotonic_ms()

    @property
    def wall_ms(self) -> int:
        return self.core.clock.wall_ms()

    def led_partition(self, topic: str, partition: int) -> tuple[ErrorCode, PartitionLog | None]:
        """The partition's log if it exists and this node leads it, else the error to answer."""
        log = self.core.topics.partition(topic, partition)
        if log is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        if self.core.partition_leader(partition) != self.node.node_id:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, None
        return ErrorCode.NONE, log

    async def answer_from(self, start: Callable[[Callable[[T], None]], None]) -> T:
        """Call ``start(deliver)`` and wait until the coordinator delivers the answer.

        The answer may come at once or when a rebalance completes; if the connection closed in
        the meantime the future is cancelled and a late answer is dropped.
        """
        answer: Waiter[T] = self.core.runtime.create_waiter()

        def deliver(result: T) -> None:
            if not answer.done():
                answer.set_result(result)

        start(deliver)
        self.node.kick_timers()
        return await answer


@dataclass(frozen=True)
class Handler:
    """One API key: answer a request, or build that API's answer carrying a single error."""

    handle: Callable[[RequestContext, Any], Awaitable[Any]]
    error_response: Callable[[Any, ErrorCode], Any]
