"""What the group commands find out, as plain values (and their JSON form)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..structs import TopicPartition


@dataclass(frozen=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str | None  # None: the broker's ListGroups version has no state (before v4)
    group_type: str | None  # None: before ListGroups v5
    coordinator: int  # the broker that listed it (each broker lists the groups it coordinates)

    def to_json(self) -> dict[str, Any]:
        return {"group_id": self.group_id, "protocol_type": self.protocol_type, "state": self.state,
                "type": self.group_type, "coordinator": self.coordinator}


@dataclass(frozen=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    # the partitions assigned, decoded with the consumer protocol; None when the group does not
    # show them (Kafka shows assignments of Stable groups only) or they are not consumer-protocol
    assignment: tuple[TopicPartition, ...] | None
    assignment_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id, "group_instance_id": self.group_instance_id,
            "client_id": self.client_id, "client_host": self.client_host,
            "assignment": None if self.assignment is None
            else [{"topic": tp.topic, "partition": tp.partition} for tp in self.assignment],
        }


@dataclass(frozen=True)
class PartitionLag:
    topic: str
    partition: int
    committed: int | None  # None: no committed offset
    end: int | None  # None: the log end offset could not be had
    member_id: str | None  # the member it is assigned to, if any

    @property
    def lag(self) -> int | None:
        if self.committed is None or self.end is None:
            return None
        return self.end - self.committed

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "committed_offset": self.committed,
                "log_end_offset": self.end, "lag": self.lag, "member_id": self.member_id}


@dataclass(frozen=True)
class Coordinator:
    node_id: int
    host: str
    port: int


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    coordinator: Coordinator
    members: tuple[Member, ...]
    offsets: tuple[PartitionLag, ...] = ()

    @property
    def total_lag(self) -> int | None:
        lags = [p.lag for p in self.offsets if p.lag is not None]
        return sum(lags) if lags else None

    def assigned(self) -> dict[TopicPartition, str]:
        """Each assigned partition's member."""
        return {tp: m.member_id for m in self.members for tp in (m.assignment or ())}

    def to_json(self) -> dict[str, Any]:
        c = self.coordinator
        return {
            "group_id": self.group_id, "state": self.state, "protocol_type": self.protocol_type,
            "protocol": self.protocol, "coordinator": {"node_id": c.node_id, "host": c.host, "port": c.port},
            "members": [m.to_json() for m in self.members],
            "offsets": [p.to_json() for p in self.offsets], "total_lag": self.total_lag,
        }
