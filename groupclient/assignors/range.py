"""Range: per topic, consecutive partitions to members in order (Kafka's RangeAssignor).

Rack-aware (KIP-881) when members send a rack and the metadata knows the partitions' replica
racks: each member first takes, up to its share, the partitions with a replica in its rack; the
rest are handed out in ranges as usual.  The shares are the same as without racks, so balance
does not suffer.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..structs import TopicPartition

from ..protocol.consumer_protocol import Assignment, Subscription
from .base import ClusterView, PartitionAssignor, member_order


class RangeAssignor(PartitionAssignor):
    name = "range"

    def assign(self, cluster: ClusterView, subscriptions: Mapping[str, Subscription]) -> dict[str, Assignment]:
        result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        counts = cluster.partitions_per_topic
        for topic in sorted(counts):
            members = sorted((m for m, s in subscriptions.items() if topic in s.topics),
                             key=lambda m: member_order(m, subscriptions[m]))
            if not members:
                continue
            count = counts[topic]
            per_member, extra = divmod(count, len(members))
            given: dict[str, list[int]] = {m: [] for m in members}
            left = list(range(count))
            racks = {m: rack for m in members if (rack := subscriptions[m].rack_id)}
            if racks and topic in cluster.partition_racks:
                extra = self._rack_matches(cluster, topic, members, racks, per_member, extra, given, left)
            taken = set().union(*given.values()) if racks else set()
            rest = iter(p for p in left if p not in taken)
            for member in members:
                if len(given[member]) > per_member:
                    continue  # took its extra partition in its rack
                share = per_member
                if extra > 0:
                    share, extra = per_member + 1, extra - 1
                while len(given[member]) < share:
                    given[member].append(next(rest))
            for member in members:
                result[member] += [TopicPartition(topic, p) for p in sorted(given[member])]
        return {m: Assignment(parts) for m, parts in result.items()}

    @staticmethod
    def _rack_matches(cluster: ClusterView, topic: str, members: list[str], racks: dict[str, str],
                      per_member: int, extra: int, given: dict[str, list[int]], left: list[int]) -> int:
        """Each member in turn takes the partitions with a replica in its rack, up to its share;
        returns how many members may still take one more than ``per_member``.  A member without a
        rack matches every partition (Java's racksMatch), so when every partition has a replica
        in every member's rack this is the rack-unaware assignment."""
        taken: set[int] = set()
        for member in members:
            rack = racks.get(member)
            for p in left:
                limit = per_member + (1 if extra > 0 else 0)
                if len(given[member]) >= limit:
                    break
                if p not in taken and (rack is None or rack in cluster.racks_of(topic, p)):
                    given[member].append(p)
                    taken.add(p)
            if len(given[member]) > per_member:
                extra -= 1
        return extra
