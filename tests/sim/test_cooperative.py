"""KIP-429 cooperative rebalancing and the eager -> cooperative upgrade, in the simulator (real
members and coordinator core on one fake clock; the invariants, including "no partition owned by
two members at the same instant", are checked after every step)."""

from __future__ import annotations

from collections.abc import Callable

from kafka.structs import TopicPartition

from groupclient.coordinator.faults import FaultKind, FaultRule
from groupclient.protocol.apis import ApiKey
from groupclient import GroupConsumer
from groupclient.testing import GroupSimulation
from tests.sim.polling import poll_until

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
    assert sim.run_until(lambda: sim.converged() and len(sim.members["d"].owned()) == 3, 60_000), sim.describe()
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
        return a.consumer.group_metadata().phase != "stable"

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
    assert poll_until(consumer, lambda: len(consumer.assignment()) == 4, 30)
    revoked: list[tuple[int, set[TopicPartition]]] = []
    generation = consumer.group_metadata().generation_id

    class Listener:
        def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
            revoked.append((consumer.group_metadata().generation_id, set(partitions)))

        def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
            pass

    consumer.subscribe(["t"], listener=Listener())
    assert poll_until(consumer, lambda: consumer.assignment() == {TopicPartition("t", 0), TopicPartition("t", 1)}, 30)
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


def settled_pair(make_sim: Sim) -> tuple[GroupSimulation, GroupConsumer]:
    """A driven cooperative member "a" and a running one "b", stable, sharing 4 partitions."""
    sim = make_sim(topics={"t": 4})
    sim.produce("t", 100)
    a = sim.consumer("a", **COOPERATIVE)
    a.subscribe(["t"])
    sim.add_member("b", **COOPERATIVE)
    assert poll_until(a, sim.converged, 60) and a.assignment()
    return sim, a


def stuck_join(sim: GroupSimulation) -> None:
    # the coordinator handles the next JoinGroup only after two minutes: as if it never arrived
    sim.inject_fault(FaultRule(int(ApiKey.JOIN_GROUP), FaultKind.DELAY, count=1, delay_ms=120_000))


def test_a_rejoining_cooperative_member_keeps_its_partitions_while_heartbeats_get_through(make_sim: Sim) -> None:
    """While its JoinGroup waits, the member's heartbeats (on their own connection) keep proving
    it is in the group, so it keeps its partitions and goes on consuming them."""
    sim, a = settled_pair(make_sim)
    owned = a.assignment()
    stuck_join(sim)
    a.enforce_rebalance("a test wants a rebalance")
    for _ in range(30):
        a.poll(1000)
        assert a.assignment() >= owned
    assert not events(sim, "a", "lost")
    a.close()


def test_a_rejoining_cooperative_member_lets_go_when_its_lease_ends(make_sim: Sim) -> None:
    """Its JoinGroup and its heartbeats are stuck on the way, so the coordinator expires it one
    session after its last heartbeat and gives its partitions to the other member.  The member,
    still waiting for the JoinGroup answer (and still consuming), must have let its partitions
    go by then: the invariants would catch two owners."""
    sim, a = settled_pair(make_sim)
    stuck_join(sim)
    sim.inject_fault(FaultRule(int(ApiKey.HEARTBEAT), FaultKind.DELAY, count=100, delay_ms=120_000))
    a.enforce_rebalance("a test wants a rebalance")
    for _ in range(50):
        a.poll(1000)
    assert events(sim, "a", "lost"), sim.members["a"].events
    sim.core.faults.clear()
    assert poll_until(a, sim.converged, 120), sim.describe()
    a.close()


def test_partitions_revoked_cooperatively_are_committed_up_to_what_was_delivered(make_sim: Sim) -> None:
    """A cooperative member goes on consuming while the group rebalances, so the commit before
    its JoinGroup does not cover what it was given of the partitions it then has to give up;
    they are committed when revoked, and the listener sees them committed."""
    sim = make_sim(topics={"t": 4})
    sim.produce("t", 2_000)
    a = sim.consumer("a", **COOPERATIVE, enable_auto_commit=True, auto_commit_interval_ms=600_000,
                     max_poll_records=5)
    at_revoke: dict[TopicPartition, tuple[int | None, int]] = {}

    class Listener:
        def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
            for tp in revoked:
                delivered = max(sim.members["a"].delivered.get(tp, [-1])) + 1
                committed = a.committed(tp)
                at_revoke[tp] = (committed if isinstance(committed, int) else None, delivered)

        def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
            pass

    a.subscribe(["t"], listener=Listener())
    poll_until(a, lambda: len(a.assignment()) == 4 and bool(sim.members["a"].delivered), 60)
    sim.add_member("b", **COOPERATIVE)
    for _ in range(400):
        a.poll(100)
        sim.run_for(50)  # polls that find records return at once; let the others move meanwhile
        if at_revoke and sim.converged():
            break
    assert at_revoke and sim.converged(), sim.describe()
    assert all(committed == delivered for committed, delivered in at_revoke.values()), at_revoke
    a.close()
