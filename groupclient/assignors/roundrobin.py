"""Round robin: all partitions, sorted, dealt to members in turn (Kafka's RoundRobinAssignor)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from kafka.structs import TopicPartition

from ..protocol.consumer_protocol import Assignment, Subscription
from .base import PartitionAssignor, member_order


class RoundRobinAssignor(PartitionAssignor):
    name = "roundrobin"

    def assign(self, partitions_per_topic: Mapping[str, int],
               subscriptions: Mapping[str, Subscription]) -> dict[str, Assignment]:
        result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        members = sorted(subscriptions, key=lambda m: member_order(m, subscriptions[m]))
        ring = itertools.cycle(members)
        for topic in sorted(partitions_per_topic):
            if not any(topic in subscriptions[m].topics for m in members):
                continue
            for partition in range(partitions_per_topic[topic]):
                # skip members that do not subscribe to this topic
                member = next(ring)
                while topic not in subscriptions[member].topics:
                    member = next(ring)
                result[member].append(TopicPartition(topic, partition))
        return {m: Assignment(parts) for m, parts in result.items()}
