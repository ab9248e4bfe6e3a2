"""What a request handler gets besides the decoded request: the node answering it and the
cluster it belongs to, as the two protocols below (``BrokerNode`` and ``ClusterCore`` implement
them; the handlers, and the node, see no more of either than these)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ...clock import Clock
from ...error_codes import ErrorCode
from ..config import CoordinatorConfig
from ..consumer_group.group import ConsumerGroup
from ..faults import FaultInjector
from ..group.coordinator import GroupCoordinator
from ..memory_pool import RequestMemoryPool
from ..runtime import ServerRuntime, Waiter
from ..share_group.service import ShareGroups
from ..storage.group_store import GroupStore
from ..storage.topic_log import PartitionLog, TopicStore

T = TypeVar("T")


class Node(Protocol):
    """One broker of the cluster, as a handler sees the node that answers it."""

    node_id: int
    host: str
    port: int
    coordinator: GroupCoordinator

    def kick_timers(self) -> None:
        """Re-arm the node's timer after the group coordinator's deadlines changed."""


class Cluster(Protocol):
    """What nodes and handlers use of the cluster they belong to."""

    config: CoordinatorConfig
    clock: Clock
    runtime: ServerRuntime
    cluster_id: str
    topics: TopicStore
    group_store: GroupStore[ConsumerGroup]
    share_groups: ShareGroups
    faults: FaultInjector
    request_memory: RequestMemoryPool

    def new_member_id(self, client_id: str) -> str:
        """A classic member id."""

    def new_consumer_member_id(self) -> str:
        """A consumer-protocol member id."""

    def live_nodes(self) -> Sequence[Node]:
        """The nodes up, by id."""

    def controller_id(self) -> int:
        """The node Metadata names the controller (-1: none up)."""

    def partition_leader(self, partition: int) -> int | None:
        """The node leading a partition (None: no node up)."""

    def coordinator_node_for(self, group_id: str) -> Node | None:
        """The node coordinating a group id (None: its offsets partition has no leader)."""

    async def wait_for_append(self, keys: list[tuple[str, int]], timeout_ms: int) -> None:
        """Return once one of the partitions is appended to, or after ``timeout_ms``."""


@dataclass(frozen=True)
class RequestContext:
    """What a handler knows of the request it answers: the node, the cluster, the client."""

    node: Node
    core: Cluster
    api_version: int
    client_id: str
    client_host: str
    principal: str | None = None  # the SASL user name on a SASL listener
    connection: object = None  # the connection it came on (its identity only)

    @property
    def now(self) -> int:
        """Monotonic ms."""
        return self.core.clock.monotonic_ms()

    @property
    def wall_ms(self) -> int:
        """Wall-clock ms (commit timestamps)."""
        return self.core.clock.wall_ms()

    def foreign_member(self, group_id: str, member_id: str | None, instance_id: str | None = None) -> ErrorCode:
        """On a SASL listener a member id, and a static member's instance id, belong to the user
        whose JoinGroup created them; a request from another user that names them is refused:
        UNKNOWN_MEMBER_ID for a member id (it then joins as itself), FENCED_INSTANCE_ID for an
        instance id.  Kafka has no such rule (member ids show in DescribeGroups, and any user
        allowed into the group may send LeaveGroup or OffsetCommit for them).  A consumer-protocol
        group's members (ConsumerGroupHeartbeat's, and classic members that joined it) likewise."""
        if self.principal is None:
            return ErrorCode.NONE
        holder_principal, member_principal = self._owners(group_id, member_id, instance_id)
        if holder_principal not in (None, self.principal):
            return ErrorCode.FENCED_INSTANCE_ID
        if member_principal not in (None, self.principal):
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    def _owners(self, group_id: str, member_id: str | None,
                instance_id: str | None) -> tuple[str | None, str | None]:
        """The users owning the member holding the instance id, and the member of that id (None:
        no such member, or nobody's)."""
        consumer_group = self.node.coordinator.consumer.get(group_id)
        if consumer_group is not None:
            holder = next((m for m in consumer_group.members.values()
                           if instance_id and m.instance_id == instance_id), None)
            own = consumer_group.members.get(member_id) if member_id else None
            return (holder.principal if holder else None), (own.principal if own else None)
        group = self.node.coordinator.groups.get(group_id)
        if group is None:
            return None, None
        owner_id = group.static_members.get(instance_id) if instance_id else None
        owner = group.members.get(owner_id) if owner_id else None
        member = group.members.get(member_id) if member_id else None
        return (owner.principal if owner else None), (member.principal if member else None)

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
