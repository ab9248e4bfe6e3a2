"""KIP-848's consumer protocol in the simulator: real ``GroupConsumer(group_protocol="consumer")``
members against the coordinator's consumer groups, alone and with classic members in one group.
Every invariant (docs/testing.md, the KIP-848 ones included) is checked after every step."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groupclient.structs import TopicPartition
from groupclient.testing import GroupSimulation, SimMember

Sim = Callable[..., GroupSimulation]
CONSUMER: dict[str, Any] = {"group_protocol": "consumer"}
SESSION_MS = 10_000  # the simulator's group_consumer_session_timeout_ms


def settle(sim: GroupSimulation, condition: Callable[[], bool] | None = None, max_ms: int = 60_000) -> None:
    done = condition or sim.converged
    assert sim.run_until(lambda: done() and sim.converged(), max_ms), \
        f"no convergence by t={sim.now}:\n  {sim.describe()}"


def owned(sim: GroupSimulation) -> dict[str, set[TopicPartition]]:
    return {m.name: m.owned() for m in sim.live_members()}


def kinds(member: SimMember) -> set[str]:
    return {e.kind for e in member.events}


def epochs(sim: GroupSimulation) -> dict[str, int]:
    return {m.name: m.consumer.group_metadata().generation_id for m in sim.live_members()}


def test_consumer_protocol_members_scale_out_crash_and_scale_in(make_sim: Sim) -> None:
    """One member, then three, one crashed, one closed: the broker moves exactly what must move
    (revoked before anyone is given it), a crashed member's partitions wait for its session to end,
    and every record is delivered and committed in the end."""
    sim = make_sim(seed=11, topics={"orders": 6})
    sim.produce("orders", 300)
    a = sim.add_member("a", **CONSUMER)
    settle(sim)
    assert a.owned() == sim.partitions()
    group = sim.consumer_group()
    # a group starts at epoch 1 (Kafka 4.3): the first member's join moves it to 2
    assert group is not None and sim.coordinator_group() is None and group.epoch == 2

    b, c = sim.add_member("b", **CONSUMER), sim.add_member("c", **CONSUMER)  # scale out
    settle(sim)
    assert sorted(len(p) for p in owned(sim).values()) == [2, 2, 2]
    assert set(epochs(sim).values()) == {sim.consumer_group().epoch}  # type: ignore[union-attr]
    # a gave up exactly what moved, and was never asked to give up what it kept
    revoked = set().union(*(e.partitions for e in a.events if e.kind == "revoked"))
    assert revoked == sim.partitions() - a.owned()
    assert "lost" not in kinds(a) | kinds(b) | kinds(c)

    sim.produce("orders", 300)
    crashed_at, orphans = sim.now, b.owned()
    sim.crash("b")
    settle(sim)
    assert set().union(*owned(sim).values()) == sim.partitions()
    # nobody was given b's partitions before the coordinator's session of b ended
    taken = [e.at_ms for m in (a, c) for e in m.events
             if e.kind == "assigned" and e.partitions & orphans and e.at_ms >= crashed_at]
    assert taken and min(taken) >= crashed_at + SESSION_MS

    sim.leave("c")  # scale in
    settle(sim, lambda: c.state == "closed")
    assert a.owned() == sim.partitions()
    assert c.events[-1].kind == "revoked" and c.events[-1].partitions  # given up, committed on close
    assert "lost" not in kinds(a) | kinds(c)
    assert sim.run_until(lambda: sim.committed() == sim.end_offsets(), 30_000), sim.committed()
    for tp, end in sim.end_offsets().items():
        assert set(range(end)) <= sim.delivered.get(tp, set()), f"{tp}: not every record was delivered"


def test_a_consumer_group_keeps_its_epochs_across_a_coordinator_move(make_sim: Sim) -> None:
    """The coordinator's node stops: the group moves with its offsets partition at the epochs it
    had, and its members keep their partitions without a rebalance."""
    sim = make_sim(seed=5, nodes=3, topics={"orders": 6})
    members = [sim.add_member(name, **CONSUMER) for name in ("a", "b", "c")]
    settle(sim)
    sim.run_for(1_000)  # the listener calls of the last reconciliation are made
    before = {m.name: (m.owned(), m.consumer.group_metadata().generation_id) for m in members}
    epoch = sim.consumer_group().epoch  # type: ignore[union-attr]
    node = sim.core.coordinator_node_for(sim.group_id)
    assert node is not None
    calls = sum(len(m.events) for m in members)
    sim.stop_node(node.node_id)
    sim.run_for(5_000)
    settle(sim)
    assert sim.core.coordinator_node_for(sim.group_id) is not node
    assert sim.consumer_group().epoch == epoch  # type: ignore[union-attr]
    assert {m.name: (m.owned(), m.consumer.group_metadata().generation_id) for m in members} == before
    assert sum(len(m.events) for m in members) == calls  # no listener call at all


def test_a_static_consumer_protocol_member_comes_back_to_its_partitions(make_sim: Sim) -> None:
    """A static member that closes leaves at epoch -2 and keeps its partitions for its session: the
    same instance back in time gets them again, and nobody else ever had them."""
    sim = make_sim(seed=3, topics={"orders": 4})
    a = sim.add_member("a", group_instance_id="instance-a", **CONSUMER)
    b = sim.add_member("b", group_instance_id="instance-b", **CONSUMER)
    settle(sim)
    kept = b.owned()
    sim.leave("b")
    assert sim.run_until(lambda: b.state == "closed", 10_000)
    sim.run_for(2_000)
    assert not a.owned() & kept
    b2 = sim.add_member("b", group_instance_id="instance-b", **CONSUMER)
    settle(sim)
    assert b2.owned() == kept
    assert not any(e.partitions & kept for e in a.events)


def test_a_mixed_group_upgrades_and_runs_with_both_protocols(make_sim: Sim) -> None:
    """Classic members (cooperative and eager assignors) and consumer-protocol members in one group:
    the first consumer-protocol member upgrades the live classic group; classic members stay in it
    as classic members, given partitions by the broker's assignor; one of each kind goes, and the
    group goes on as a consumer group (one consumer-protocol member is left)."""
    sim = make_sim(seed=1, topics={"orders": 6, "refunds": 3})
    sim.produce("orders", 200)
    sim.produce("refunds", 100)
    a = sim.add_member("a", partition_assignment_strategy=["cooperative-sticky"])
    settle(sim)
    assert sim.coordinator_group() is not None and sim.consumer_group() is None

    b = sim.add_member("b", **CONSUMER)
    settle(sim)
    group = sim.consumer_group()
    assert group is not None and sim.coordinator_group() is None  # upgraded
    c = sim.add_member("c", **CONSUMER)
    d = sim.add_member("d", partition_assignment_strategy=["cooperative-sticky", "range"])
    settle(sim)
    group = sim.consumer_group()
    assert group is not None
    classic = {m.client_id for m in group.members.values() if m.classic is not None}
    assert classic == {"a", "d"} and len(group.members) == 4
    assert all(m.owned() for m in (a, b, c, d))

    sim.crash("d")
    settle(sim)
    sim.leave("c")
    settle(sim, lambda: c.state == "closed")
    group = sim.consumer_group()
    assert group is not None and {m.client_id for m in group.members.values()} == {"a", "b"}
    assert a.owned() | b.owned() == sim.partitions()
    assert "lost" not in kinds(a) | kinds(b)
    assert sim.run_until(lambda: sim.committed() == sim.end_offsets(), 30_000), sim.committed()
