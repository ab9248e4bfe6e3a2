"""What membership is made of: generations, settings, the joined members a leader sees, and the
hooks through which the consumer adds its part (Java's ConsumerCoordinator overrides)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..clock import Timer
from .states import AnyMemberState

COORDINATOR_ID_BASE = 2**31 - 1  # the coordinator's connection is kept apart from the broker's
# heartbeats have a connection of their own: a broker answers one request per connection at a
# time, so on the coordinator's connection a heartbeat would wait behind a JoinGroup it holds
HEARTBEAT_ID_BASE = 2**31 - 1 - 2**24


@dataclass(frozen=True)
class Generation:
    generation_id: int = -1
    member_id: str = ""
    protocol_name: str | None = None


NO_GENERATION = Generation()


@dataclass(frozen=True)
class CommitIdentity:
    """Who an OffsetCommit (and a KIP-848 OffsetFetch) says it comes from: the member id and the
    classic group's generation or the consumer group's member epoch, as Kafka's
    ``generation_id_or_member_epoch`` field carries either.  The defaults are a commit outside any
    group (manual assignment)."""

    member_id: str = ""
    generation_id_or_member_epoch: int = -1


@dataclass(frozen=True)
class MemberSnapshot:
    """What a member shows of itself (``group_metadata()``, ``repr``): its id, its generation
    (classic) or epoch (consumer protocol), which of the two ``counter_name`` says, and its state."""

    member_id: str
    counter: int
    counter_name: str
    state: AnyMemberState


@dataclass(frozen=True)
class GroupConfig:
    group_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int  # max_poll_interval_ms
    heartbeat_interval_ms: int
    retry_backoff_ms: int
    request_timeout_ms: int


@dataclass(frozen=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class Joined:
    """A JoinGroup answer the member has taken: what the sync step needs."""

    generation: Generation
    is_leader: bool
    skip_assignment: bool  # a static leader rejoining: the coordinator keeps the assignment
    protocol: str
    members: list[JoinedMember]


class PartitionOwnership(Protocol):
    """What the member side needs of the partitions the consumer owns.  Called from either thread:
    the heartbeat thread drops them the moment the ownership lease ends."""

    def owns_partitions(self) -> bool:
        """Whether the member holds any partition now."""

    def ownership_epoch(self) -> int:
        """Changes whenever the partitions are dropped (``on_ownership_lost``)."""

    def on_ownership_lost(self, reason: str, loss: int | None = None) -> None:
        """The partitions may belong to others already: drop them at once.  ``loss`` numbers the
        member's decision to drop them: called again with the same number (the other thread
        finishing that loss), it does nothing."""


class RebalanceHooks(Protocol):
    """What the consumer adds to a join (Java's ConsumerCoordinator overrides).  Called on the
    application thread only, by :class:`~groupclient.member.join.GroupJoin`."""

    def protocols(self, generation: Generation) -> list[tuple[str, bytes]]:
        """The (assignor name, subscription metadata) pairs of a JoinGroup sent in ``generation``."""

    def perform_assignment(self, leader_id: str, protocol: str, members: list[JoinedMember]) -> dict[str, bytes]:
        """The leader's assignment: member id -> encoded assignment."""

    def watch_group(self, protocol: str, members: list[JoinedMember]) -> None:
        """A static leader was told to skip the assignment: it still learns the group's topics."""

    def on_join_prepare(self, generation: Generation, timer: Timer) -> bool:
        """Give up partitions before a JoinGroup; False when not done within the timer (the
        next poll goes on where this one stopped)."""

    def on_join_complete(self, generation: Generation, assignment: bytes, epoch: int) -> bool:
        """Apply the assignment; False, not applied, if the partitions were dropped since
        ``PartitionOwnership.ownership_epoch()`` returned ``epoch`` (the member must join again)."""
