"""What docs/testing.md shows a user: their own assignor and listener in a simulated group."""

from __future__ import annotations

from collections.abc import Mapping

from kafka.structs import TopicPartition

from groupclient.assignors import ClusterView, PartitionAssignor
from groupclient.protocol.consumer_protocol import Assignment, Subscription
from groupclient.testing import GroupSimulation


class EvenOdd(PartitionAssignor):
    """Even partitions to the first member, odd ones to the second (a deliberately odd assignor)."""

    name = "even-odd"

    def assign(self, cluster: ClusterView, subscriptions: Mapping[str, Subscription]) -> dict[str, Assignment]:
        members = sorted(subscriptions)
        result: dict[str, list[TopicPartition]] = {m: [] for m in members}
        for topic, count in sorted(cluster.partitions_per_topic.items()):
            for p in range(count):
                result[members[p % len(members)]].append(TopicPartition(topic, p))
        return {m: Assignment(parts) for m, parts in result.items()}


class CommitOnRevoke:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.calls.append("revoked")

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.calls.append("assigned")


def test_a_custom_assignor_and_listener_through_a_crash() -> None:
    sim = GroupSimulation(seed=7, topics={"orders": 6})
    try:
        sim.produce("orders", 100)
        listener = CommitOnRevoke()
        a = sim.add_member("a", listener=listener, partition_assignment_strategy=[EvenOdd])
        sim.add_member("b", partition_assignment_strategy=[EvenOdd])
        assert sim.run_until(sim.converged, max_ms=60_000)
        assert sorted(len(m.owned()) for m in sim.live_members()) == [3, 3]
        sim.crash("b")
        assert sim.run_until(sim.converged, max_ms=60_000)
        assert a.owned() == sim.partitions()
        assert listener.calls[-2:] == ["revoked", "assigned"]
        assert [e.kind for e in a.events][-2:] == ["revoked", "assigned"]
        sim.run_for(5_000)
        # every record reached an application at least once, nothing was skipped
        assert {tp: len(offsets) for tp, offsets in sim.delivered.items()} == sim.end_offsets()
    finally:
        sim.close()
