"""The client's view of the cluster: brokers, and the leader of each partition.

A Metadata answer becomes a :class:`MetadataSnapshot`, which nothing changes afterwards; the
current one is swapped into :attr:`ClusterMetadata.snapshot` in one assignment.  Either thread
may apply an answer (whichever read it) while the other reads, so a reader that needs several
facts to agree (an assignor's partition counts, a fetch's leaders) takes ``snapshot`` once and
reads them all from it: it sees one answer whole, never half of the next.  When to ask again is
:class:`ClusterMetadata`'s, under its lock.
"""

from __future__ import annotations

import logging
import random
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..protocol.apis import ApiKey
from ..protocol.error_table import Action, action_for
from .backoff import ExponentialBackoff

log = logging.getLogger("groupclient.network")


@dataclass(frozen=True)
class MetadataSnapshot:
    """One view of the cluster (its maps are never changed after it is made)."""

    brokers: Mapping[int, tuple[str, int]] = field(default_factory=dict)
    leaders: Mapping[str, Mapping[int, int]] = field(default_factory=dict)  # topic -> partition -> leader
    # for rack-aware assignment (KIP-881): each broker's rack, each partition's replica brokers
    broker_racks: Mapping[int, str] = field(default_factory=dict)
    replicas: Mapping[str, Mapping[int, tuple[int, ...]]] = field(default_factory=dict)
    # topic -> the error code it came with: an int, as a broker may send codes newer than ErrorCode
    unavailable: Mapping[str, int] = field(default_factory=dict)
    internal_topics: frozenset[str] = frozenset()
    cluster_id: str | None = None
    version: int = 0  # how many answers were applied: waiters tell an update happened
    # topic -> its id (Metadata v10+); the consumer group protocol names partitions by topic id
    topic_ids: Mapping[str, uuid.UUID] = field(default_factory=dict)

    def topic_for_id(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic with this id, if this answer knows it."""
        for name, known in self.topic_ids.items():
            if known == topic_id:
                return name
        return None

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

    def applied(self, response: Any, complete: bool) -> MetadataSnapshot:
        """The view after a Metadata answer; ``complete`` means it listed every topic."""
        if response.brokers:  # an answer listing no broker at all cannot be the cluster's view
            brokers = {b.node_id: (b.host, b.port) for b in response.brokers}
            racks = {b.node_id: b.rack for b in response.brokers if getattr(b, "rack", None)}
        else:
            brokers, racks = dict(self.brokers), dict(self.broker_racks)
        leaders = {} if complete else dict(self.leaders)
        replicas = {} if complete else dict(self.replicas)
        unavailable = {} if complete else dict(self.unavailable)
        internal = set(self.internal_topics)
        topic_ids = {} if complete else dict(self.topic_ids)
        for topic in response.topics:
            if topic.name is None:
                continue  # answered by topic id only (v10+): this client asks by name
            if topic.error_code:
                unavailable[topic.name] = int(topic.error_code)
                leaders.pop(topic.name, None)
                replicas.pop(topic.name, None)
                topic_ids.pop(topic.name, None)
                continue
            unavailable.pop(topic.name, None)
            leaders[topic.name] = {p.partition_index: p.leader_id for p in topic.partitions}
            replicas[topic.name] = {p.partition_index: tuple(p.replica_nodes or ()) for p in topic.partitions}
            if topic.is_internal:
                internal.add(topic.name)
            topic_id = getattr(topic, "topic_id", None)
            if topic_id is not None and topic_id.int:
                topic_ids[topic.name] = topic_id
            else:
                topic_ids.pop(topic.name, None)
        return MetadataSnapshot(brokers, leaders, racks, replicas, unavailable, frozenset(internal),
                                response.cluster_id, self.version + 1, topic_ids)


EMPTY = MetadataSnapshot()


class ClusterMetadata:
    """The current :class:`MetadataSnapshot`, and when to ask for the next one.

    An update asked for while a Metadata request is on its way is not lost when that request's
    answer comes (Java's ``requestVersion``): each answer is applied with the count of update
    requests its request was sent after.  A topic answered with an error is asked about again
    after a backoff that grows to ``retry_backoff_max_ms`` (Java's retry.backoff.ms /
    retry.backoff.max.ms, KIP-580), not only at ``metadata_max_age_ms``."""

    def __init__(self, metadata_max_age_ms: int, retry_backoff_ms: int = 100, retry_backoff_max_ms: int = 1000,
                 rng: random.Random | None = None) -> None:
        self.metadata_max_age_ms = metadata_max_age_ms
        self.snapshot = EMPTY
        self._lock = threading.Lock()
        self._backoff = ExponentialBackoff(retry_backoff_ms, max(retry_backoff_max_ms, retry_backoff_ms))
        self._rng = rng or random.Random(0)  # the client passes its own; jitter of the retry only
        self._need_update = True
        self._requests = 0  # update requests so far (request_update)
        self._last_refresh_ms = -(2**62)
        self._retry_at = -(2**62)
        self._failed_refreshes = 0
        # topic -> error code the application must hear (the error table's RAISE for Metadata:
        # topic authorization, an invalid name, a code newer than this client), until it takes it
        self._to_raise: dict[str, int] = {}

    # -- reading (any thread; one snapshot per question) ------------------------------------
    @property
    def version(self) -> int:
        return self.snapshot.version

    @property
    def brokers(self) -> Mapping[int, tuple[str, int]]:
        return self.snapshot.brokers

    @property
    def unavailable(self) -> Mapping[str, int]:
        return self.snapshot.unavailable

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self.snapshot.partitions_for_topic(topic)

    def leader_for(self, topic: str, partition: int) -> int | None:
        return self.snapshot.leader_for(topic, partition)

    def partition_racks(self, topic: str) -> list[frozenset[str]] | None:
        return self.snapshot.partition_racks(topic)

    def topics(self) -> set[str]:
        return self.snapshot.topics()

    # -- refreshing ------------------------------------------------------------------------
    def request_update(self) -> None:
        """Ask for a refresh as soon as possible (any thread)."""
        with self._lock:
            self._need_update = True
            self._requests += 1
            self._retry_at = -(2**62)

    def needs_update(self, now: int) -> bool:
        with self._lock:
            return ((self._need_update and now >= self._retry_at)
                    or now - self._last_refresh_ms >= self.metadata_max_age_ms)

    def update_requests(self) -> int:
        """Taken when a Metadata request is sent, and given back to :meth:`update` with its answer."""
        with self._lock:
            return self._requests

    def update(self, response: Any, now: int, complete: bool, requests_when_sent: int | None = None) -> None:
        """Apply a Metadata answer; ``complete`` means it listed every topic.  An update asked for
        after the request was sent (``requests_when_sent`` is older) is still to be done."""
        snapshot = self.snapshot.applied(response, complete)
        failed = any(t.error_code for t in response.topics)
        to_raise = {t.name: int(t.error_code) for t in response.topics if t.error_code and t.name is not None
                    and action_for(t.error_code, ApiKey.METADATA) is Action.RAISE}
        with self._lock:
            self._to_raise.update(to_raise)
            self.snapshot = snapshot  # one assignment: readers see the old view or this one
            self._last_refresh_ms = now
            asked_since = requests_when_sent is not None and requests_when_sent < self._requests
            self._failed_refreshes = self._failed_refreshes + 1 if failed else 0
            self._need_update = failed or asked_since
            if failed and not asked_since:
                self._retry_at = now + self._backoff.backoff_ms(self._failed_refreshes - 1, self._rng)
            else:
                self._retry_at = -(2**62)

    def take_errors(self) -> dict[str, int]:
        """The topics whose last answer carried an error the application must hear (each once
        per answer that carries it), by error code."""
        with self._lock:
            errors, self._to_raise = self._to_raise, {}
        return errors
