"""What the classic group APIs (JoinGroup, SyncGroup, LeaveGroup) take, decoded from any wire
version, and what they answer.  Both kinds of group answer them: a classic group, and a consumer
group that has classic members (:mod:`..consumer_group.classic_members`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...error_codes import ErrorCode


@dataclass(frozen=True)
class JoinRequest:
    """A JoinGroup, as every version of it reads."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    require_known_member_id: bool = True  # JoinGroup v4+
    supports_skip_assignment: bool = False  # JoinGroup v9+
    reason: str | None = None
    principal: str | None = None  # the SASL user sending it


@dataclass(frozen=True)
class SyncRequest:
    """A SyncGroup, as every version of it reads (the leader's carries the assignments)."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    assignments: dict[str, bytes]


@dataclass(frozen=True)
class LeavingMember:
    """One member a LeaveGroup removes (v3+ names several)."""

    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class JoinedMember:
    """What the leader learns about each member in its JoinGroup response."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinResult:
    """A JoinGroup's answer."""

    error: ErrorCode
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: tuple[JoinedMember, ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True)
class SyncResult:
    """A SyncGroup's answer."""

    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


# how an answer that waits for a rebalance reaches its caller
JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]
