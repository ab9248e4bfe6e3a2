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


def _partition_list(tps: tuple[TopicPartition, ...] | None) -> list[dict[str, Any]] | None:
    return None if tps is None else [{"topic": tp.topic, "partition": tp.partition} for tp in tps]


@dataclass(frozen=True)
class Member:
    """A group member as its coordinator describes it.

    The fields after ``assignment_bytes`` come with ConsumerGroupDescribe only: they are None for
    a member of a classic group, which DescribeGroups describes.
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    # the partitions assigned, decoded with the consumer protocol; None when the group does not
    # show them (Kafka shows assignments of Stable groups only) or they are not consumer-protocol.
    # A consumer-protocol member: the partitions it owns now (its current assignment)
    assignment: tuple[TopicPartition, ...] | None
    assignment_bytes: int = 0
    member_epoch: int | None = None  # -2: a static member that left, its partitions kept for it
    rack_id: str | None = None
    subscribed_topics: tuple[str, ...] | None = None
    subscribed_regex: str | None = None
    # what the group's assignor gave it, which it owns once it has reconciled
    target_assignment: tuple[TopicPartition, ...] | None = None
    # the epoch of the group's target assignment (its assignment_epoch), which the member's
    # epoch reaches once it has reconciled (kafka-consumer-groups.sh's TARGET-EPOCH)
    target_epoch: int | None = None
    # the protocol the member itself speaks, "consumer" or "classic" (a classic member of a
    # consumer group, as Kafka lets a group move between the protocols); None before
    # ConsumerGroupDescribe v1
    member_type: str | None = None

    @property
    def consumer_protocol(self) -> bool:
        """Whether it was described by ConsumerGroupDescribe (it has a target assignment)."""
        return self.target_assignment is not None

    @property
    def reconciling(self) -> bool:
        """A consumer-protocol member not yet at its target: its current assignment differs (it
        is to be given partitions others still own), or its epoch is behind the target's.  The
        latter is a member that still has partitions to give up: the coordinator leaves those out
        of its current assignment at once, but the member keeps its epoch until it has revoked
        them (Kafka's ``isReconciledTo``: at the target epoch, and stable)."""
        if self.target_assignment is None:
            return False
        if set(self.assignment or ()) != set(self.target_assignment):
            return True
        # epoch -2: a static member that left, whose partitions are kept for it: not behind
        return (self.member_epoch is not None and self.member_epoch >= 0 and self.target_epoch is not None
                and self.member_epoch != self.target_epoch)

    def to_json(self) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "member_id": self.member_id, "group_instance_id": self.group_instance_id,
            "client_id": self.client_id, "client_host": self.client_host,
            "assignment": _partition_list(self.assignment),
        }
        if self.consumer_protocol:  # added keys; a classic member's JSON stays as it was
            answer.update({
                "member_epoch": self.member_epoch, "rack_id": self.rack_id,
                "subscribed_topics": None if self.subscribed_topics is None else list(self.subscribed_topics),
                "subscribed_topic_regex": self.subscribed_regex,
                "target_assignment": _partition_list(self.target_assignment), "reconciling": self.reconciling,
                "member_type": self.member_type,
            })
        return answer


@dataclass(frozen=True)
class PartitionLag:
    """A partition's committed offset and lag, in records and (when asked for) in time."""

    topic: str
    partition: int
    committed: int | None  # None: no committed offset
    end: int | None  # None: the log end offset could not be had
    member_id: str | None  # the member it is assigned to, if any
    # seconds since the last record consumed was written (see time_lag.py); None: unknown or
    # not asked for
    time_lag_s: float | None = None
    # a share group's lag as its broker counts it (DescribeShareGroupOffsets v1: the records from
    # the start offset on not yet acknowledged); ``committed`` is then the start offset
    reported_lag: int | None = None

    @property
    def lag(self) -> int | None:
        if self.reported_lag is not None:
            return self.reported_lag
        if self.committed is None or self.end is None:
            return None
        return self.end - self.committed

    def to_json(self, time_lag: bool = False) -> dict[str, Any]:
        """Its JSON object; ``time_lag_s`` added with ``time_lag`` (when it was asked for)."""
        answer: dict[str, Any] = {"topic": self.topic, "partition": self.partition, "committed_offset": self.committed,
                                  "log_end_offset": self.end, "lag": self.lag, "member_id": self.member_id}
        if time_lag:
            answer["time_lag_s"] = self.time_lag_s
        return answer


@dataclass(frozen=True)
class Coordinator:
    node_id: int
    host: str
    port: int


CLASSIC = "classic"  # a group of the classic protocol (JoinGroup, SyncGroup), described by DescribeGroups
CONSUMER = "consumer"  # a KIP-848 consumer-protocol group, described by ConsumerGroupDescribe
SHARE = "share"  # a KIP-932 share group, described by ShareGroupDescribe (its offsets: start offsets)


@dataclass(frozen=True)
class GroupDescription:
    """A group, its members and (when asked for) its committed offsets and lag.

    ``group_type`` is :data:`CLASSIC` or :data:`CONSUMER`.  A consumer group's ``protocol`` is its
    server-side assignor, also in ``assignor``; its epochs are None for a classic group
    (DescribeGroups carries no generation).
    """

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    coordinator: Coordinator
    members: tuple[Member, ...]
    offsets: tuple[PartitionLag, ...] = ()
    group_type: str = CLASSIC
    group_epoch: int | None = None
    assignment_epoch: int | None = None  # the epoch of the group's target assignment
    assignor: str | None = None
    with_time_lag: bool = False  # the offsets' time lags were asked for (``--lag-seconds``)

    @property
    def total_lag(self) -> int | None:
        lags = [p.lag for p in self.offsets if p.lag is not None]
        return sum(lags) if lags else None

    @property
    def max_time_lag_s(self) -> float | None:
        """The largest time lag of the partitions whose time lag is known; None: none is."""
        lags = [p.time_lag_s for p in self.offsets if p.time_lag_s is not None]
        return max(lags) if lags else None

    def assigned(self) -> dict[TopicPartition, str]:
        """Each assigned partition's member (a consumer group: the member that owns it now)."""
        return {tp: m.member_id for m in self.members for tp in (m.assignment or ())}

    def to_json(self) -> dict[str, Any]:
        c = self.coordinator
        answer: dict[str, Any] = {
            "group_id": self.group_id, "state": self.state, "protocol_type": self.protocol_type,
            "protocol": self.protocol, "type": self.group_type,
        }
        if self.group_type in (CONSUMER, SHARE):
            answer.update({"assignor": self.assignor, "group_epoch": self.group_epoch,
                           "assignment_epoch": self.assignment_epoch})
        answer.update({
            "coordinator": {"node_id": c.node_id, "host": c.host, "port": c.port},
            "members": [m.to_json() for m in self.members],
            "offsets": [p.to_json(self.with_time_lag) for p in self.offsets], "total_lag": self.total_lag,
        })
        if self.with_time_lag:  # an added key: the JSON without --lag-seconds stays as it was
            answer["max_time_lag_s"] = self.max_time_lag_s
        return answer
