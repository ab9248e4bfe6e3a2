"""What the coordinator's group APIs take, decoded from any wire version."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JoinRequest:
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
    group_id: str
    member_id: str
    group_instance_id: str | None
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    assignments: dict[str, bytes]


@dataclass(frozen=True)
class LeavingMember:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None
