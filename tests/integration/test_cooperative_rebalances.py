"""enforce_rebalance() under both rebalance protocols, partitions added to a subscribed topic, and
static members under cooperative rebalancing, on the embedded coordinator and Apache Kafka (the
ownership checks of tests/integration/cooperative.py)."""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from groupclient import ConsumerRebalanceListener, GroupConsumer, TopicPartition
from groupclient.coordinator import EmbeddedCluster
from tests.integration import external
from tests.integration.peers import Peer, PeerSet, all_consumed, exclusive_cover, holds_for, wait_until

from tests.integration.cooperative import (
    COOP, PARTITIONS, Step, describe, double_ownership, leader_name, ownership_events_since, revoked_since, settled,
)

pytestmark = pytest.mark.integration


# -- enforce_rebalance ---------------------------------------------------------------------------
class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, set[int]]] = []

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.calls.append(("revoked", {tp.partition for tp in revoked}))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.calls.append(("assigned", {tp.partition for tp in assigned}))

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.calls.append(("lost", {tp.partition for tp in lost}))


def poll_all(consumers: list[GroupConsumer], until: Callable[[], bool], timeout_s: float = 20) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(timeout_ms=50)
        if until():
            return True
    return False


@pytest.fixture
def two_members(cluster: EmbeddedCluster, request: pytest.FixtureRequest) -> Iterator[tuple[list[GroupConsumer], list[Recorder]]]:
    strategy: list[str] = request.param
    cluster.create_topic("enforced", 4)
    consumers = [GroupConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id="enforced-group",
                               client_id=f"enforcer-{i}", auto_offset_reset="earliest", enable_auto_commit=False,
                               session_timeout_ms=6000, heartbeat_interval_ms=300,
                               partition_assignment_strategy=strategy) for i in range(2)]
    recorders = [Recorder(), Recorder()]
    try:
        for c, r in zip(consumers, recorders):
            c.subscribe(["enforced"], listener=r)
            c.poll(timeout_ms=50)  # the first joins (and leads) before the second
        yield consumers, recorders
    finally:
        for c in consumers:
            c.close()


def stable_split(consumers: list[GroupConsumer]) -> bool:
    owned = [{tp.partition for tp in c.assignment()} for c in consumers]
    return (all(c.group_metadata().phase == "stable" for c in consumers) and exclusive_cover(owned, 4)
            and all(owned) and len({c.group_metadata().generation_id for c in consumers}) == 1)


@pytest.mark.parametrize(("two_members", "protocol"), [(["range"], "eager"), ([COOP], "cooperative")],
                         indirect=["two_members"])
def test_enforce_rebalance_under_both_protocols(cluster: EmbeddedCluster, caplog: pytest.LogCaptureFixture,
                                                 two_members: tuple[list[GroupConsumer], list[Recorder]],
                                                 protocol: str) -> None:
    consumers, recorders = two_members
    assert poll_all(consumers, lambda: stable_split(consumers)), [c.assignment() for c in consumers]
    generation = consumers[0].group_metadata().generation_id
    owned = [{tp.partition for tp in c.assignment()} for c in consumers]
    for r in recorders:
        r.calls.clear()
    reason = f"enforced by the test {uuid.uuid4().hex[:8]}"
    follower = consumers[1]
    with caplog.at_level(logging.INFO, logger="groupclient.coordinator.group"):
        follower.enforce_rebalance(reason)
        assert poll_all(consumers, lambda: stable_split(consumers)
                        and consumers[0].group_metadata().generation_id > generation), recorders[1].calls
    assert [{tp.partition for tp in c.assignment()} for c in consumers] == owned  # range and sticky keep them
    if protocol == "eager":
        for r, mine in zip(recorders, owned):
            assert r.calls == [("revoked", mine), ("assigned", mine)], r.calls
    else:
        for r in recorders:
            assert all(kind == "assigned" and not parts for kind, parts in r.calls), r.calls
    # the reason travels in JoinGroup (v8+) and the coordinator rebalances for it
    started = [rec.getMessage() for rec in caplog.records
               if rec.name == "groupclient.coordinator.group" and "-> PreparingRebalance" in rec.getMessage()]
    assert any(message.endswith(f"({reason})") for message in started), started
    assert cluster.describe_group("enforced-group")["generation"] == generation + 1  # type: ignore[index]


# -- partitions added to a subscribed topic --------------------------------------------------
@pytest.mark.kafka
@pytest.mark.parametrize("strategy", ["range", COOP])
def test_leader_rebalances_partitions_added_to_its_topic(kafka_broker: Any, peers: PeerSet, strategy: str) -> None:
    """The embedded coordinator has no CreatePartitions; Kafka does.  Kafka leaves it to the
    leader to notice the new partitions in its metadata and rebalance."""
    from kafka.admin import KafkaAdminClient, NewPartitions

    bootstrap = kafka_broker.bootstrap
    topic, group = external.new_topic(bootstrap, 4), f"g-{uuid.uuid4().hex[:6]}"
    leader = peers.start("groupclient", bootstrap, group, topic, strategy)
    assert leader.wait_for(lambda p: len(p.assignment) == 4, 60), leader.describe()
    follower = peers.start("groupclient", bootstrap, group, topic, strategy)
    assert external.peer_cover([leader, follower], 4, 60), describe([leader, follower])
    step = Step([leader, follower])
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_partitions({topic: NewPartitions(total_count=PARTITIONS)})
    finally:
        admin.close()
    assert external.peer_cover([leader, follower], PARTITIONS, 60), describe([leader, follower])
    assert all(len(m.assignment) == PARTITIONS // 2 for m in (leader, follower))
    if strategy == COOP:
        step.check_only_moved_partitions_revoked()  # nothing moves: both only gain
        assert not revoked_since(leader, step.marks[leader.name]) and not revoked_since(follower, step.marks[follower.name])
    else:
        for m in (leader, follower):  # eager: everything is given up first
            assert revoked_since(m, step.marks[m.name]) == step.before[m.name]
    counts: Counter[int] = Counter()
    produced = external.produce(bootstrap, topic, 60, PARTITIONS, counts)
    assert {p for p, _ in produced} == set(range(PARTITIONS))
    assert wait_until(lambda: all_consumed([leader, follower], produced), 60), describe([leader, follower])
    assert double_ownership([leader, follower]) == []
    assert not leader.errors and not follower.errors


# -- static members under cooperative rebalancing ------------------------------------------------
def test_static_cooperative_members_restart_and_close_without_rebalance(cluster: EmbeddedCluster,
                                                                       peers: PeerSet) -> None:
    """groupclient static members on cooperative-sticky: a crash and a close() (no LeaveGroup) of
    either member, the leader included, followed by a restart within the session timeout, change
    nothing for the group; a static member that stays away is removed at its session timeout."""
    group, topic, session_ms = "static-coop", "static-coop-topic", 8000
    cluster.create_topic(topic, 4)
    everyone: list[Peer] = []

    def start(instance: str) -> Peer:
        peer = peers.start("groupclient", cluster.bootstrap_servers, group, topic, COOP, instance_id=instance,
                           session_ms=session_ms)
        everyone.append(peer)
        return peer

    a = start("inst-a")
    assert a.wait_for(lambda p: len(p.assignment) == 4, 30), a.describe()
    b = start("inst-b")
    assert settled(cluster, group, topic, [a, b], 4), describe([a, b])
    before = cluster.describe_group(group)
    assert before is not None and leader_name(cluster, group) == a.name

    def unchanged() -> bool:
        now = cluster.describe_group(group)
        return (now is not None and now["generation"] == before["generation"] and now["state"] == "Stable"
                and sorted(m["instance_id"] for m in now["members"].values()) == ["inst-a", "inst-b"])

    # a follower crashes and comes back; then the leader closes (no LeaveGroup) and comes back
    for action, instance in (("kill", "inst-b"), ("close", "inst-a")):
        gone = b if instance == "inst-b" else a
        other = a if gone is b else b
        partitions, mark = set(gone.assignment), len(other.snapshot())
        if action == "kill":
            gone.kill()
        else:
            assert gone.terminate() == 0 and gone.has_event("closed"), gone.describe()
            # a LeaveGroup would have started a rebalance within a second
            assert holds_for(unchanged, 1.0), cluster.describe_group(group)
        back = start(instance)
        assert back.wait_for(lambda p: p.assignment == partitions, 30), back.describe()
        assert unchanged(), cluster.describe_group(group)
        assert ownership_events_since(other, mark) == [], other.describe()
        if gone is b:
            b = back
        else:
            a = back
        expected = set(cluster.produce(topic, [f"{instance}-{i}".encode() for i in range(40)]))
        assert wait_until(lambda: all_consumed([a, b], expected), 30), describe([a, b])

    # b closes for good: the group waits for its session to expire, then a takes its partitions
    step = Step([a])
    closed_at = time.monotonic()
    assert b.terminate() == 0, b.describe()
    assert holds_for(unchanged, session_ms / 2000), cluster.describe_group(group)
    assert a.wait_for(lambda p: len(p.assignment) == 4, session_ms / 1000 + 20), a.describe()
    assert time.monotonic() - closed_at >= session_ms / 1000 * 0.9
    described = cluster.describe_group(group)
    assert described is not None and described["generation"] > before["generation"]
    assert [m["instance_id"] for m in described["members"].values()] == ["inst-a"]
    step.check_only_moved_partitions_revoked()
    assert double_ownership(everyone) == []
    assert not any(m.errors for m in everyone), describe(everyone)


def test_static_cooperative_member_fenced_by_a_second_instance(cluster: EmbeddedCluster, peers: PeerSet) -> None:
    group, topic = "static-fence", "static-fence-topic"
    cluster.create_topic(topic, 4)

    def start(instance: str) -> Peer:
        return peers.start("groupclient", cluster.bootstrap_servers, group, topic, COOP, instance_id=instance)

    other = start("inst-other")
    assert other.wait_for(lambda p: len(p.assignment) == 4, 30), other.describe()
    first = start("dup")
    assert settled(cluster, group, topic, [other, first], 4), describe([other, first])
    generation = cluster.describe_group(group)["generation"]  # type: ignore[index]
    partitions, mark = set(first.assignment), len(other.snapshot())

    second = start("dup")
    assert second.wait_for(lambda p: p.assignment == partitions, 30), second.describe()
    assert first.wait_for(lambda p: bool(p.errors), 30), first.describe()
    error = first.errors[0]
    assert error["type"] == "FatalGroupError" and "FENCED_INSTANCE_ID" in error["message"], error
    assert first.proc.wait(10) == 2  # poll() raised: the application stopped
    described = cluster.describe_group(group)
    assert described is not None and described["generation"] == generation
    assert sorted(m["instance_id"] for m in described["members"].values()) == ["dup", "inst-other"]
    assert ownership_events_since(other, mark) == [], other.describe()
    expected = set(cluster.produce(topic, [f"f{i}".encode() for i in range(40)]))
    assert wait_until(lambda: all_consumed([other, second], expected), 30), describe([other, second])
    # the fenced member held its partitions until it heard of the fence (by design, as in Kafka):
    # only the others are checked for double ownership
    assert double_ownership([other, second]) == []
    assert not other.errors and not second.errors
