"""What a ConsumerGroupHeartbeat states, as a pure function of the member's state (Java's
``ConsumerHeartbeatRequestManager.HeartbeatState``): every field when the member joins or after
any failure (the broker then answers with the whole assignment), afterwards only what changed since
the last heartbeat the broker took — the owned partitions also after every reconciliation, as
Java's; null or -1 means "unchanged".  No clock, no I/O, no lock."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from .states import ConsumerMemberState

TopicIdPartitions = Mapping[uuid.UUID, frozenset[int]]
NO_PARTITIONS: TopicIdPartitions = {}


@dataclass(frozen=True)
class Subscribed:
    """What the member subscribes to: topic names, or a broker-side regular expression."""

    topics: tuple[str, ...] = ()
    regex: str | None = None


@dataclass(frozen=True)
class SentFields:
    """What the last heartbeat the broker took said; a field equal to it is sent as "unchanged"."""

    subscribed: Subscribed
    owned: TopicIdPartitions
    rebalance_timeout_ms: int
    owned_version: int = 0


@dataclass(frozen=True)
class Target:
    """A target assignment to reconcile: ``version`` grows with every new target."""

    version: int
    epoch: int
    partitions: TopicIdPartitions


@dataclass(frozen=True)
class HeartbeatInputs:
    """The member's state a heartbeat is made from."""

    state: ConsumerMemberState
    group_id: str
    member_id: str
    epoch: int
    instance_id: str | None
    rebalance_timeout_ms: int
    subscribed: Subscribed
    owned: TopicIdPartitions
    server_assignor: str | None
    rack_id: str | None
    sent: SentFields | None  # None: state everything
    # grows with every reconciliation (Java's LocalAssignment.localEpoch): the owned partitions are
    # stated again after each one, even when they are the same set, so that the broker, which reads
    # a heartbeat without them as acknowledging nothing, takes the acknowledgement of a target
    # equal to what the member already owned (one that took back what the previous one added)
    owned_version: int = 0


def heartbeat_fields(m: HeartbeatInputs, version: int) -> tuple[dict[str, Any], SentFields | None]:
    """The heartbeat's fields (ConsumerGroupHeartbeatRequest keywords) and what they state."""
    fields: dict[str, Any] = {"group_id": m.group_id, "member_id": m.member_id, "member_epoch": m.epoch,
                              "instance_id": m.instance_id}
    if m.state is ConsumerMemberState.LEAVING:
        return fields, None
    joining = m.state is ConsumerMemberState.JOINING
    sent = None if joining else m.sent
    if sent is None or sent.rebalance_timeout_ms != m.rebalance_timeout_ms:
        fields["rebalance_timeout_ms"] = m.rebalance_timeout_ms
    if sent is None or sent.subscribed.topics != m.subscribed.topics:
        fields["subscribed_topic_names"] = list(m.subscribed.topics)
    if version >= 1 and ((sent is None and m.subscribed.regex is not None)
                         or (sent is not None and sent.subscribed.regex != m.subscribed.regex)):
        fields["subscribed_topic_regex"] = m.subscribed.regex if m.subscribed.regex is not None else ""
    if m.server_assignor is not None and sent is None:
        fields["server_assignor"] = m.server_assignor
    if joining and m.rack_id:
        fields["rack_id"] = m.rack_id
    owned = NO_PARTITIONS if joining else m.owned
    if sent is None or sent.owned != owned or sent.owned_version != m.owned_version:
        fields["topic_partitions"] = [
            ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=t, partitions=sorted(p))
            for t, p in sorted(owned.items(), key=lambda item: item[0].bytes)]
    return fields, SentFields(m.subscribed, owned, m.rebalance_timeout_ms, m.owned_version)
