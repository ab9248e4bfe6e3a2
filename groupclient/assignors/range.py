"""Range: per topic, consecutive partitions to members in order (Kafka's RangeAssignor)."""

from __future__ import annotations

from collections.abc import Mapping

from kafka.structs import TopicPartition

from ..protocol.consumer_protocol import Assignment, Subscription
from .base import PartitionAssignor, member_order


class RangeAssignor(PartitionAssignor):
    name = "range"

    def assign(self, partitions_per_topic: Mapping[str, int],
               subscriptions: Mapping[str, Subscription]) -> dict[str, Assignment]:
        result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        for topic in sorted(partitions_per_topic):
            members = sorted((m for m, s in subscriptions.items() if topic in s.topics),
                             key=lambda m: member_order(m, subscriptions[m]))
            if not members:
                continue
            count = partitions_per_topic[topic]
            per_member, extra = divmod(count, len(members))
            start = 0
            for i, member in enumerate(members):
                length = per_member + (1 if i < extra else 0)
                result[member] += [TopicPartition(topic, p) for p in range(start, start + length)]
                start += length
        return {m: Assignment(parts) for m, parts in result.items()}
