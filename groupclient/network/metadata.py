"""The client's view of the cluster: brokers, and the leader of each partition."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("groupclient.network")


@dataclass
class ClusterMetadata:
    metadata_max_age_ms: int
    brokers: dict[int, tuple[str, int]] = field(default_factory=dict)
    leaders: dict[str, dict[int, int]] = field(default_factory=dict)  # topic -> partition -> leader
    # for rack-aware assignment (KIP-881): each broker's rack, each partition's replica brokers
    broker_racks: dict[int, str] = field(default_factory=dict)
    replicas: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    # topic -> the error code it came with: an int, as a broker may send codes newer than ErrorCode
    unavailable: dict[str, int] = field(default_factory=dict)
    internal_topics: set[str] = field(default_factory=set)
    cluster_id: str | None = None
    last_refresh_ms: int = -(2**62)
    need_update: bool = True
    version: int = 0  # bumped by each update, so waiters can tell one happened
    # a topic answered with an error is asked about again, after a backoff that doubles up to
    # the max (Java's retry.backoff.ms / retry.backoff.max.ms), not only at metadata_max_age_ms
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000
    _retry_at: int = -(2**62)
    _failed_refreshes: int = 0

    def request_update(self) -> None:
        self.need_update = True
        self._retry_at = -(2**62)

    def needs_update(self, now: int) -> bool:
        return (self.need_update and now >= self._retry_at) or now - self.last_refresh_ms >= self.metadata_max_age_ms

    def update(self, response: Any, now: int, complete: bool) -> None:
        """Apply a Metadata response; ``complete`` means it listed every topic."""
        if response.brokers:  # an answer listing no broker at all cannot be the cluster's view
            self.brokers = {b.node_id: (b.host, b.port) for b in response.brokers}
            self.broker_racks = {b.node_id: b.rack for b in response.brokers if getattr(b, "rack", None)}
        self.cluster_id = response.cluster_id
        if complete:
            self.leaders.clear()
            self.replicas.clear()
            self.unavailable.clear()
        for topic in response.topics:
            if topic.name is None:
                continue  # answered by topic id only (v10+): this client asks by name
            if topic.error_code:
                self.unavailable[topic.name] = int(topic.error_code)
                self.leaders.pop(topic.name, None)
                self.replicas.pop(topic.name, None)
                continue
            self.unavailable.pop(topic.name, None)
            self.leaders[topic.name] = {p.partition_index: p.leader_id for p in topic.partitions}
            self.replicas[topic.name] = {p.partition_index: list(p.replica_nodes or ()) for p in topic.partitions}
            if topic.is_internal:
                self.internal_topics.add(topic.name)
        self.last_refresh_ms = now
        if any(t.error_code for t in response.topics):
            self._failed_refreshes += 1
            backoff = self.retry_backoff_ms * 2 ** min(self._failed_refreshes - 1, 16)
            self._retry_at = now + min(backoff, max(self.retry_backoff_max_ms, self.retry_backoff_ms))
            self.need_update = True
        else:
            self._failed_refreshes = 0
            self.need_update = False
        self.version += 1

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        leaders = self.leaders.get(topic)
        return None if leaders is None else set(leaders)

    def leader_for(self, topic: str, partition: int) -> int | None:
        leader = self.leaders.get(topic, {}).get(partition)
        return None if leader is None or leader < 0 else leader

    def partition_racks(self, topic: str) -> list[frozenset[str]] | None:
        """The racks of each partition's replicas (index = partition), or None if unknown."""
        replicas = self.replicas.get(topic)
        if replicas is None or not self.broker_racks:
            return None
        racks = self.broker_racks
        return [frozenset(racks[n] for n in replicas.get(p, ()) if n in racks) for p in range(len(replicas))]

    def topics(self) -> set[str]:
        return set(self.leaders)
