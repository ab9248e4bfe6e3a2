"""Round robin: all partitions, sorted, dealt to members in turn (Kafka's RoundRobinAssignor).

Members that do not subscribe to a partition's topic are skipped for it, so non-uniform
subscriptions work (each partition goes to the next subscriber of its topic in the ring)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from ..structs import TopicPartition

from ..protocol.consumer_protocol import Assignment, Subscription
from .base import ClusterView, PartitionAssignor, member_order


class RoundRobinAssignor(PartitionAssignor):
    name = "roundrobin"

    def assign(self, cluster: ClusterView, subscriptions: Mapping[str, Subscription]) -> dict[str, Assignment]:
        result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        members = sorted(subscriptions, key=lambda m: member_order(m, subscriptions[m]))
        topics_of = {m: set(subscriptions[m].topics) for m in members}
        ring = itertools.cycle(members)
        counts = cluster.partitions_per_topic
        for topic in sorted(counts):
            if not any(topic in topics_of[m] for m in members):
                continue
            for partition in range(counts[topic]):
                member = next(ring)
                while topic not in topics_of[member]:
                    member = next(ring)
                result[member].append(TopicPartition(topic, partition))
        return {m: Assignment(parts) for m, parts in result.items()}
