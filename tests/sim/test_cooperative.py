"""KIP-429 cooperative rebalancing and the eager -> cooperative upgrade, in the simulator (real
members and coordinator core on one fake clock; the invariants, including "no partition owned by
two members at the same instant", are checked after every step)."""

from __future__ import annotations

from collections.abc import Callable

from kafka.structs import TopicPartition

from groupclient.coordinator.faults import FaultKind, FaultRule
from groupclient.protocol.apis import ApiKey
from groupclient.testing import GroupSimulation

Sim = Callable[..., GroupSimulation]
COOPERATIVE = {"partition_assignment_strategy": ["cooperative-sticky"]}


def stable(sim: GroupSimulation, max_ms: int = 60_000) -> None:
    assert sim.run_until(sim.converged, max_ms), f"no convergence by t={sim.now}: {sim.describe()}"


def events(sim: GroupSimulation, name: str, kind: str, since: int = 0) -> set[TopicPartition]:
    return {tp for e in sim.members[name].events if e.kind == kind and e.at_ms > since for tp in e.partitions}


def test_scale_out_revokes_only_what_moves(make_sim: Sim) -> None:
    sim = make_sim(topics={"t": 12})
    sim.produce("t", 200)
    for name in ("a", "b", "c"):
        sim.add_member(name, **COOPERATIVE)
    stable(sim)
    before = {name: sim.members[name].owned() for name in ("a", "b", "c")}
    assert all(len(owned) == 4 for owned in before.values())
    mark = sim.now
    sim.add_member("d", **COOPERATIVE)
    stable(sim)
    for name in ("a", "b", "c"):
        after = sim.members[name].owned()
        assert len(after) == 3 and after <= before[name], (name, before[name], after)
        # the listener heard of exactly the partition that moved, and of nothing newly assigned
        assert events(sim, name, "revoked", mark) == before[name] - after
        assert events(sim, name, "assigned", mark) == set()
        assert not events(sim, name, "lost", mark)
    assert len(sim.members["d"].owned()) == 3


def test_a_cooperative_member_keeps_consuming_while_the_group_rebalances(make_sim: Sim) -> None:
    """A member that owns partitions goes on fetching them while its JoinGroup is held at the
    coordinator (waiting for a member whose application is busy); an eager one would stop."""
    sim = make_sim(topics={"t": 4})
    sim.produce("t", 40)
    sim.add_member("a", **COOPERATIVE)
    sim.add_member("busy", **COOPERATIVE)
    stable(sim)
    sim.pause("busy", 6_000)  # it rejoins only when its application polls again
    sim.add_member("new", **COOPERATIVE)
    a = sim.members["a"]

    def rebalancing() -> bool:
        return a.consumer.group_metadata().state != "stable"

    assert sim.run_until(rebalancing, 5_000)
    delivered = sum(len(v) for v in a.delivered.values())
    sim.produce("t", 400)
    assert sim.run_until(lambda: rebalancing() and sum(len(v) for v in a.delivered.values()) > delivered, 4_000), \
        f"nothing delivered to a while it rebalanced: {sim.describe()}"
    stable(sim)


def test_unsubscribing_a_topic_revokes_only_its_partitions_before_the_join(make_sim: Sim) -> None:
    sim = make_sim(topics={"t": 2, "u": 2})
    consumer = sim.consumer("solo", **COOPERATIVE)
    consumer.subscribe(["t", "u"])
    for _ in range(30):
        consumer.poll(500)
        if len(consumer.assignment()) == 4:
            break
    assert len(consumer.assignment()) == 4
    revoked: list[tuple[int, set[TopicPartition]]] = []
    generation = consumer.group_metadata().generation_id

    class Listener:
        def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
            revoked.append((consumer.group_metadata().generation_id, set(partitions)))

        def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
            pass

    consumer.subscribe(["t"], listener=Listener())
    for _ in range(30):
        consumer.poll(500)
        if consumer.assignment() == {TopicPartition("t", 0), TopicPartition("t", 1)}:
            break
    assert consumer.assignment() == {TopicPartition("t", 0), TopicPartition("t", 1)}
    # given up before the JoinGroup, in the generation they were owned in (Java's onJoinPrepare)
    assert revoked == [(generation, {TopicPartition("u", 0), TopicPartition("u", 1)})]
    consumer.close()


def test_eager_to_cooperative_upgrade_in_two_rolling_bounces(make_sim: Sim) -> None:
    sim = make_sim(topics={"t": 6})
    sim.produce("t", 300)
    names = ["a", "b", "c"]
    for name in names:
        sim.add_member(name, partition_assignment_strategy=["range"])
    stable(sim)
    for strategy in (["cooperative-sticky", "range"], ["cooperative-sticky"]):
        for name in names:
            sim.leave(name)
            assert sim.run_until(lambda: not sim.members[name].alive, 30_000)
            sim.add_member(name, partition_assignment_strategy=strategy)
            stable(sim)
    group = sim.coordinator_group()
    assert group is not None and group.protocol_name == "cooperative-sticky"
    sim.produce("t", 60)
    assert sim.run_until(lambda: sum(len(v) for v in sim.delivered.values()) >= 360, 60_000)


def test_a_rejoining_cooperative_member_lets_go_when_its_lease_ends(make_sim: Sim) -> None:
    """Its JoinGroup is stuck on the way, so the coordinator never hears of the rejoin and expires
    the member one session after its last heartbeat, giving its partitions to the other member.
    The member, still waiting for the JoinGroup answer (and still consuming), must have let its
    partitions go by then: the invariants would catch two owners."""
    sim = make_sim(topics={"t": 4})
    sim.produce("t", 100)
    a = sim.consumer("a", **COOPERATIVE)
    a.subscribe(["t"])
    sim.add_member("b", **COOPERATIVE)
    for _ in range(60):
        a.poll(500)
        if sim.converged():
            break
    assert sim.converged() and a.assignment()
    # the coordinator handles it only after two minutes: as if it never arrived
    sim.inject_fault(FaultRule(int(ApiKey.JOIN_GROUP), FaultKind.DELAY, count=1, delay_ms=120_000))
    a.enforce_rebalance("a test wants a rebalance")
    for _ in range(50):
        a.poll(1000)
    assert events(sim, "a", "lost"), sim.members["a"].events
    for _ in range(60):
        a.poll(500)
        if sim.converged():
            break
    assert sim.converged(), sim.describe()
    a.close()
