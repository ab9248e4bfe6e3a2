"""Defects that consumer-protocol members in the simulator found (seeds 37, 88, 241, 370: the
downgrade; 247: the unstated acknowledgement; 424: the static rejoin), each reproduced on a
fixed seed and fixed since; the constants say what was wrong.  What a scenario needs to show its
defect is checked with ``require``, which fails the test outright if a change elsewhere keeps the
scenario from reaching it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from groupclient.member.consumer_member import ConsumerGroupMember
from groupclient.structs import TopicPartition
from groupclient.testing import GroupSimulation
from tests.sim.switches import DropAfterASwitch

Sim = Callable[..., GroupSimulation]
CONSUMER: dict[str, Any] = {"group_protocol": "consumer"}
SESSION_MS = 10_000  # the simulator's group_consumer_session_timeout_ms


def require(condition: bool, what: str) -> None:
    """The scenario reached what it needs to show its defect (pytest.fail otherwise: not an
    AssertionError, so not taken for the expected failure)."""
    if not condition:
        pytest.fail(f"the scenario no longer sets up its defect: {what}", pytrace=False)


DOWNGRADE = (  # fixed: consumer_group/migration.py builds a Stable group at the epoch before the removal
    "coordinator: a consumer group turned back into a classic group (its last consumer-protocol member "
    "gone, consumer_group/service.py:237) is handed to GroupCoordinator.adopt_classic (group/coordinator.py:138) "
    "as an Empty group (consumer_group/migration.py:63), so _prepare_rebalance (group/coordinator.py:347) takes "
    "it for a new group's first rebalance: it waits only group_initial_rebalance_delay_ms (0 here, 3 s by "
    "default) and then removes every member that has not rejoined, i.e. the classic members at once; the "
    "first to rejoin gets every partition while the others still hold theirs.  And its generation is the "
    "epoch after the leaving member's removal (consumer_group/group.py:355), one past the classic members' "
    "own, so their heartbeats are answered ILLEGAL_GENERATION and their partitions are lost.  Kafka "
    "(ClassicGroup.fromConsumerGroup) converts to a Stable group at the consumer group's epoch, leaving out "
    "the member that left (whose removal never moves the epoch), and its rebalance gives the members their "
    "rebalance timeout to rejoin")
UNSTATED_ACK = (  # fixed: the owned partitions are stated again after every reconciliation
    "member: an acknowledgement of a target whose partitions equal what the member already stated does not "
    "state them again (member/consumer_heartbeat_fields.py:83 compares the partitions only; Java's "
    "HeartbeatState sends them again whenever the local assignment, its local epoch included, changed), "
    "and the broker reads no owned partitions as no acknowledgement (Kafka's CurrentAssignmentBuilder, "
    "here consumer_group/reconciliation.py:69): after a target that added partitions is overtaken by one "
    "that takes them away again before the application reconciled it, the coordinator waits for a "
    "revocation that never comes, fences the member after its rebalance timeout, and gives its partitions "
    "away while it still holds them")
STATIC_REJOIN = (  # fixed: reconciliation.py revokes only what the heartbeat says the member owns
    "coordinator: a static member that takes the place of its predecessor (which left at epoch -2) "
    "starts at epoch 0 with the predecessor's partitions (consumer_group/group.py:266), and when its target "
    "no longer has all of them, _compute (consumer_group/reconciliation.py:80) keeps it at epoch 0 in "
    "UNREVOKED_PARTITIONS although it owns none of them (it joined stating none): the join is answered "
    "member epoch 0 with the rest of the partitions, the member owns them at epoch 0, and its next heartbeat, "
    "at epoch 0 without the join's fields, is refused INVALID_REQUEST ('RebalanceTimeoutMs must be provided "
    "in first request.'): FatalGroupError, the member is gone.  Kafka's CurrentAssignmentBuilder."
    "computeNextAssignment asks for a revocation only if the member still owns one of the partitions "
    "(ownsRevokedPartitions), and otherwise moves it to the target's epoch")


def test_classic_members_keep_their_membership_when_a_mixed_group_turns_classic(make_sim: Sim) -> None:
    """a and b (classic) and c (consumer protocol) in one group; c closes, and the group turns
    classic: a and b rejoin it in its rebalance, keeping their ids and, cooperative, what they own."""
    sim = make_sim(seed=1, topics={"orders": 6})
    a = sim.add_member("a", partition_assignment_strategy=["cooperative-sticky"])
    b = sim.add_member("b", partition_assignment_strategy=["cooperative-sticky"])
    require(sim.run_until(sim.converged, 30_000), "a classic group")
    c = sim.add_member("c", **CONSUMER)  # upgrades the group
    require(sim.run_until(lambda: sim.consumer_group() is not None and sim.converged(), 30_000), "upgraded")
    ids = {m.consumer.group_metadata().member_id for m in (a, b)}
    sim.leave("c")  # the last consumer-protocol member: the group turns classic again
    require(sim.run_until(lambda: sim.coordinator_group() is not None, 30_000), "turned classic")
    group = sim.coordinator_group()
    assert group is not None
    assert set(group.members) == ids, f"{group.state.value}, members {sorted(group.members)}: a and b were removed"
    assert sim.run_until(lambda: c.state == "closed" and sim.converged(), 60_000)
    assert not [e for m in (a, b) for e in m.events if e.kind == "lost"]


def test_a_slow_member_acknowledges_a_target_equal_to_what_it_owns(make_sim: Sim) -> None:
    """a owns one partition of two; its application stops polling; b leaves (a's target: both),
    b2 joins (a's target: its own partition again) before a's application reconciled anything."""
    sim = make_sim(seed=1, topics={"t": 2})
    settings = {**CONSUMER, "group_remote_assignor": "range"}
    a = sim.add_member("a", **settings)
    sim.add_member("b", **settings)
    require(sim.run_until(sim.converged, 30_000), "a group of two")
    kept = a.owned()
    resumes_at = sim.now + 20_000
    sim.pause("a", 20_000)
    sim.leave("b")
    sim.run_for(4_000)
    sim.add_member("b2", **settings)
    sim.run_for(4_000)
    group = sim.consumer_group()
    member = group.members.get(a.consumer.group_metadata().member_id) if group is not None else None
    require(member is not None and bool(member.assignment.revoking) and a.owned() == kept,
            "a asked back a partition it never took")
    sim.run_for(resumes_at - sim.now)
    # a polls again and acknowledges: the group is whole within a few heartbeats, a keeps its partition
    assert sim.run_until(sim.converged, 10_000), sim.describe()
    assert a.owned() == kept
    assert not [e for e in a.events if e.kind == "lost"]


def test_a_static_member_back_after_its_target_changed_joins_at_the_target_epoch(make_sim: Sim) -> None:
    """b (static) closes, keeping its partitions for its session; c joins and takes one of them
    in the target; b comes back in time with a new member id."""
    sim = make_sim(seed=1, topics={"t": 6})
    sim.add_member("a", group_instance_id="instance-a", **CONSUMER)
    sim.add_member("b", group_instance_id="instance-b", **CONSUMER)
    require(sim.run_until(sim.converged, 30_000), "a group of two")
    sim.leave("b")
    sim.run_for(1_000)
    sim.add_member("c", group_instance_id="instance-c", **CONSUMER)
    sim.run_for(3_000)
    group = sim.consumer_group()
    left = next((m for m in group.members.values() if m.instance_id == "instance-b"), None) if group else None
    require(group is not None and left is not None and left.assignment.epoch == -2 and any(
        partitions - group.target.get(left.member_id, {}).get(topic, frozenset())
        for topic, partitions in left.assignment.assigned.items()), "b's target lost some of what b kept")
    b = sim.add_member("b", group_instance_id="instance-b", **CONSUMER)
    assert sim.run_until(lambda: b.consumer.group_metadata().generation_id != 0 or not b.alive, 5_000)
    assert b.alive and b.consumer.group_metadata().generation_id > 0, b.errors
    assert sim.run_until(sim.converged, 30_000), sim.describe()


UNDROPPED_LOSS = (  # fixed: ConsumerGroupMember numbers each loss it decides; the next step of either thread drops it
    "member: a loss the heartbeat thread decides (the lease ran out after a SIGSTOP past the session, a "
    "fence, a refusal) is two steps: under the member's lock it forgets the assignment and joins again "
    "(member/consumer_member.py check_lease, _handle_heartbeat, reset_generation_if), and only after "
    "releasing it does it drop the partitions (ownership.on_ownership_lost).  A poll() of the application "
    "thread in between finds the member joining and owning nothing, so its own check_lease sees no lease "
    "to end, and it hands out records of partitions the coordinator has given to another member, before "
    "on_partitions_lost (or reconciles the rejoin's target against them, as revoked); the drop lands only "
    "after.  Java's ConsumerMembershipManager.transitionToFenced keeps the member FENCED, not joining, "
    "until onPartitionsLost has run and the subscription is cleared")


def test_a_member_resumed_past_its_session_hands_out_nothing_it_owned_before_the_loss(make_sim: Sim) -> None:
    """a and b own three partitions each; a is frozen (SIGSTOP) past its session and b is given
    a's partitions.  On resuming, a's heartbeat thread ends the lease first and is switched out
    between deciding the loss and dropping the partitions (here: it blocks there for 200 ms); a's
    application polls meanwhile.  That poll must not return a record of what a owned before."""
    sim = make_sim(seed=1, topics={"t": 6}, check_invariants=False)
    a = sim.add_member("a", **CONSUMER)
    b = sim.add_member("b", **CONSUMER)
    require(sim.run_until(sim.converged, 30_000), "a group of two")
    sim.produce("t", 600)
    require(sim.run_until(lambda: all(sum(len(v) for v in m.delivered.values()) > 0 for m in (a, b)), 10_000),
            "both members consuming")
    before = set(a.owned())
    member = a.consumer._group.member if a.consumer._group is not None else None
    require(isinstance(member, ConsumerGroupMember) and member.session.timeout_ms == SESSION_MS,
            "a knows the group's session timeout")
    assert isinstance(member, ConsumerGroupMember)
    batches: list[tuple[int, set[TopicPartition]]] = []
    a.on_batch = lambda m, batch: batches.append((sim.now, set(batch)))
    switch = DropAfterASwitch(sim, member.ownership)
    held_up = switch.held_up
    member.ownership = switch
    # a's application is between polls when it is stopped, and polls again 100 ms after it resumes:
    # its heartbeat thread, which sees the lease ended, runs first
    frozen_ms = SESSION_MS + 5_000
    resumed_at = sim.now + frozen_ms
    sim.pause("a", frozen_ms + 100)
    sim.run_for(1_500)
    sim.stall("a", frozen_ms - 1_500)
    require(sim.run_until(lambda: before <= b.owned(), frozen_ms - 1_500), "b was given a's partitions")
    sim.produce("t", 60)
    sim.run_for(resumed_at - sim.now + 2_000)
    require(bool(held_up) and held_up[0] >= resumed_at, "a's heartbeat thread ended the lease on resuming")
    lost_at = min((e.at_ms for e in a.events if e.kind == "lost" and e.at_ms >= resumed_at), default=None)
    stale = [(at, sorted(tp.partition for tp in partitions & before)) for at, partitions in batches
             if at >= resumed_at and (lost_at is None or at < lost_at) and partitions & before]
    assert not stale, (f"a resumed at {resumed_at} and handed out records of partitions b owns: {stale} "
                       f"(on_partitions_lost at {lost_at})\n{UNDROPPED_LOSS}")
    assert lost_at is not None and lost_at < held_up[0] + 200, "the loss waited for the heartbeat thread"
