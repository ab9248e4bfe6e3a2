"""Cooperative rebalancing (KIP-429) in mixed groups, the eager -> cooperative rolling upgrade,
enforce_rebalance(), partition growth and static members, on the embedded coordinator, Tansu and
Apache Kafka.

Every peer stamps its events with CLOCK_MONOTONIC (``t``; the Java peer's System.nanoTime() reads
the same clock), so the members' assign/revoke logs merge into one history per partition, and
"no partition held by two members at once" is checked over the whole run, not only at stable
points.  A member holds a partition from the event that reports it assigned until the one that
reports it revoked or lost, or until it stops consuming ("closing", "error", its exit).
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from groupclient import ConsumerRebalanceListener, GroupConsumer, TopicPartition
from groupclient.coordinator import EmbeddedCluster
from tests.integration import external
from tests.integration.peers import (
    Peer, PeerSet, all_consumed, coordinator_assignments, exclusive_cover, holds_for, wait_until,
)

pytestmark = pytest.mark.integration

PARTITIONS = 6
COOP = "cooperative-sticky"


# -- the ownership history ---------------------------------------------------------------------
@dataclass(frozen=True)
class Holding:
    member: str
    partition: int
    start: float
    end: float


def holdings(member: Peer) -> list[Holding]:
    """What the member held, when, from its own event log."""
    out: list[Holding] = []
    held: dict[int, float] = {}

    def release(partitions: Any, t: float) -> None:
        for p in list(partitions):
            if p in held:
                out.append(Holding(member.name, p, held.pop(p), t))

    for event in member.snapshot():
        kind, t = event["event"], event["t"]
        if kind == "assigned":
            now = set(event["partitions"])
            release(set(held) - now, t)
            for p in now - set(held):
                held[p] = t
        elif kind in ("revoked", "lost"):
            release(event["partitions"], t)
        elif kind in ("closing", "closed", "error"):
            release(set(held), t)
    release(set(held), member.ended_at if member.ended_at is not None else math.inf)
    return out


def double_ownership(members: list[Peer]) -> list[str]:
    """Every instant at which two members held the same partition."""
    by_partition: dict[int, list[Holding]] = defaultdict(list)
    for m in members:
        for h in holdings(m):
            by_partition[h.partition].append(h)
    problems = []
    for partition, hs in sorted(by_partition.items()):
        hs.sort(key=lambda h: (h.start, h.end))
        latest: Holding | None = None
        for h in hs:
            if latest is not None and h.start < latest.end:
                problems.append(f"partition {partition}: {latest.member} held it {latest.start:.3f}..{latest.end:.3f} "
                                f"and {h.member} from {h.start:.3f}")
            if latest is None or h.end > latest.end:
                latest = h
    return problems


def revoked_since(member: Peer, mark: int) -> set[int]:
    return {p for e in member.snapshot()[mark:] if e["event"] in ("revoked", "lost") for p in e["partitions"]}


def ownership_events_since(member: Peer, mark: int) -> list[dict[str, Any]]:
    return [e for e in member.snapshot()[mark:] if e["event"] in ("assigned", "revoked", "lost")]


def describe(members: list[Peer]) -> list[str]:
    return [m.describe() for m in members]


class Step:
    """Before a scale event: what each member that stays holds, and where its log stands.  After
    it: under cooperative rebalancing each of them revoked exactly what it no longer holds (a
    member that keeps a partition never sees it revoked)."""

    def __init__(self, stay: list[Peer]) -> None:
        self.stay = stay
        self.before = {m.name: set(m.assignment) for m in stay}
        self.marks = {m.name: len(m.snapshot()) for m in stay}

    def check_only_moved_partitions_revoked(self) -> None:
        for m in self.stay:
            # what it held at the mark, or was handed after it (a cooperative round that was
            # still finishing when the mark was taken), and does not hold now
            gained = {p for e in ownership_events_since(m, self.marks[m.name]) if e["event"] == "assigned"
                      for p in e["partitions"]}
            moved = (self.before[m.name] | gained) - m.assignment
            revoked = revoked_since(m, self.marks[m.name])
            assert revoked == moved, (f"{m.name} held {sorted(self.before[m.name])}, now {sorted(m.assignment)}, "
                                      f"but its listener saw {sorted(revoked)} revoked: "
                                      f"{ownership_events_since(m, self.marks[m.name])}")


class _Log:
    """Stands in for a Peer in the check's own test: a name, an event log, an exit time."""

    def __init__(self, name: str, events: list[tuple[float, str, list[int]]], ended_at: float | None = None) -> None:
        self.name, self.ended_at = name, ended_at
        self.events = [{"event": kind, "partitions": parts, "t": t} for t, kind, parts in events]

    def snapshot(self) -> list[dict[str, Any]]:
        return self.events


def test_the_double_ownership_check() -> None:
    a = _Log("a", [(1, "assigned", [0, 1]), (2, "revoked", [1]), (5, "closing", [])], ended_at=6)
    b = _Log("b", [(3, "assigned", [1]), (5.5, "assigned", [0, 1])])
    assert double_ownership([a, b]) == []  # type: ignore[list-item]
    c = _Log("c", [(4, "assigned", [0]), (4.5, "lost", [0])], ended_at=4.6)
    assert double_ownership([a, b, c]) == ["partition 0: a held it 1.000..5.000 and c from 4.000"]  # type: ignore[list-item]
    killed = _Log("killed", [(1, "assigned", [2])], ended_at=7)  # no event: held until it exited
    assert len(double_ownership([killed, _Log("d", [(6.9, "assigned", [2])])])) == 1  # type: ignore[list-item]


# -- the embedded coordinator ------------------------------------------------------------------
def settled(cluster: EmbeddedCluster, group: str, topic: str, members: list[Peer], partitions: int = PARTITIONS,
            timeout_s: float = 45) -> bool:
    """The coordinator has the group Stable with exactly these members, its assignment and the
    members' own views are exact covers, and every member holds some partition."""
    def ok() -> bool:
        held = coordinator_assignments(cluster, group, topic)
        if held is None or len(held) != len(members) or not exclusive_cover(held.values(), partitions):
            return False
        views = [set(m.assignment) for m in members]
        return exclusive_cover(views, partitions) and all(views[:partitions])
    return wait_until(ok, timeout_s)


def member_names(cluster: EmbeddedCluster, group: str) -> list[str]:
    described = cluster.describe_group(group)
    return [m["client_id"] for m in described["members"].values()] if described else []


def leader_name(cluster: EmbeddedCluster, group: str) -> str | None:
    described = cluster.describe_group(group)
    if described is None or described["leader"] not in described["members"]:
        return None
    return described["members"][described["leader"]]["client_id"]


def test_mixed_cooperative_group_on_the_embedded_coordinator(cluster: EmbeddedCluster, peers: PeerSet) -> None:
    """groupclient, kafka-python and confluent-kafka on cooperative-sticky; each leads in turn
    (the coordinator hands leadership to the next member in join order when the leader leaves),
    and each leader runs a scale-out and a scale-in."""
    group, topic = "coop-mixed", "coop-mixed-topic"
    cluster.create_topic(topic, PARTITIONS)
    produced = set(cluster.produce(topic, [f"a{i}".encode() for i in range(120)]))
    everyone: list[Peer] = []

    def start(kind: str) -> Peer:
        """Start a member and wait until it is in the group, so that join order is start order."""
        peer = peers.start(kind, cluster.bootstrap_servers, group, topic, COOP)
        everyone.append(peer)
        assert wait_until(lambda: peer.name in member_names(cluster, group), 30), peer.describe()
        return peer

    gc1 = start("groupclient")
    assert gc1.wait_for(lambda p: len(p.assignment) == PARTITIONS, 30), gc1.describe()
    live = [gc1, start("kafka-python"), start("confluent")]
    assert settled(cluster, group, topic, live), describe(live)
    assert leader_name(cluster, group) == gc1.name
    assert cluster.describe_group(group)["protocol"] == COOP  # type: ignore[index]

    # (leader at the scale-out, kind added, leader after the old leader left)
    for round_no, (leader_kind, added_kind, next_leader_kind) in enumerate(
            [("groupclient", "groupclient", "kafka-python"),
             ("kafka-python", "kafka-python", "confluent"),
             ("confluent", "confluent", "groupclient")]):
        leader = live[0]
        assert leader.kind == leader_kind and leader_name(cluster, group) == leader.name, describe(live)

        step = Step(list(live))  # scale out: the newcomer gets what the others give up, nothing more moves
        live.append(start(added_kind))
        assert settled(cluster, group, topic, live), describe(live)
        assert leader_name(cluster, group) == leader.name
        step.check_only_moved_partitions_revoked()
        assert sum(len(step.before[m.name] - m.assignment) for m in step.stay) == len(live[-1].assignment)

        step = Step(live[1:])  # scale in: the leader leaves; its partitions go to the others
        assert leader.terminate() == 0, leader.describe()
        live = live[1:]
        assert settled(cluster, group, topic, live), describe(live)
        assert live[0].kind == next_leader_kind and leader_name(cluster, group) == live[0].name, describe(live)
        step.check_only_moved_partitions_revoked()
        assert all(step.before[m.name] <= m.assignment for m in live)

        more = set(cluster.produce(topic, [f"r{round_no}-{i}".encode() for i in range(60)]))
        assert {p for p, _ in more} == set(range(PARTITIONS))
        produced |= more
        assert wait_until(lambda: all_consumed(everyone, produced), 30), describe(everyone)

    assert double_ownership(everyone) == []
    end = {(topic, p): o for p, o in cluster.end_offsets(topic).items()}
    assert wait_until(lambda: cluster.committed_offsets(group) == end, 20), cluster.committed_offsets(group)
    assert not any(m.errors for m in everyone), describe(everyone)


def test_cooperative_member_keeps_its_partitions_through_a_long_join(peers: PeerSet) -> None:
    """Member a rejoins at once when a newcomer arrives; member s is busy (does not poll) for
    2.5 session timeouts, so the join phase waits for it.  a keeps its partitions under KIP-429:
    its heartbeats, on their own connection, go on proving it is in the group while its JoinGroup
    waits (this once failed: no heartbeats while rejoining, so the lease ran out and the member
    reported its partitions lost, then got them straight back)."""
    session_ms = 2000
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=1000) as cluster:
        group, topic = "long-join", "long-join-topic"
        cluster.create_topic(topic, 4)
        a = peers.start("groupclient", cluster.bootstrap_servers, group, topic, COOP, session_ms=session_ms)
        assert a.wait_for(lambda p: len(p.assignment) == 4, 30), a.describe()
        s = peers.start("groupclient", cluster.bootstrap_servers, group, topic, COOP, session_ms=session_ms,
                        extra=["--stall-after", "1", "--stall-ms", str(session_ms * 5 // 2),
                               "--max-poll-interval-ms", "60000"])
        assert settled(cluster, group, topic, [a, s], 4), describe([a, s])
        cluster.produce(topic, [b"x"] * 8)
        assert s.wait_for(lambda p: p.has_event("stalling"), 20), s.describe()
        step = Step([a])
        n = peers.start("groupclient", cluster.bootstrap_servers, group, topic, COOP, session_ms=session_ms)
        assert settled(cluster, group, topic, [a, s, n], 4, 30), describe([a, s, n])
        assert double_ownership([a, s, n]) == []
        step.check_only_moved_partitions_revoked()


# -- brokers we only reach over the wire -------------------------------------------------------
def mixed_group_on(bootstrap: str, peers: PeerSet, leader: str, kinds: list[str], timeout_s: float,
                   lenient_commits: bool = False) -> None:
    """The first member to join leads (the broker keeps a leader that rejoins); it leads the
    group's formation, a scale-out (a groupclient member joins) and a scale-in (a follower leaves)."""
    topic, group = external.new_topic(bootstrap, PARTITIONS), f"g-{uuid.uuid4().hex[:6]}"
    counts: Counter[int] = Counter()
    produced = external.produce(bootstrap, topic, 120, PARTITIONS, counts)
    everyone: list[Peer] = []

    def start(kind: str) -> Peer:
        peer = peers.start(kind, bootstrap, group, topic, COOP)
        everyone.append(peer)
        return peer

    first = start(leader)
    assert first.wait_for(lambda p: len(p.assignment) == PARTITIONS, timeout_s), first.describe()
    live = [first, *(start(kind) for kind in kinds if kind != leader)]
    assert external.peer_cover(live, PARTITIONS, timeout_s), describe(live)
    assert wait_until(lambda: all_consumed(everyone, produced), timeout_s), describe(everyone)

    step = Step(list(live))
    live.append(start("groupclient"))
    assert external.peer_cover(live, PARTITIONS, timeout_s), describe(live)
    step.check_only_moved_partitions_revoked()

    leaving = live[1]
    step = Step([m for m in live if m is not leaving])
    assert leaving.terminate() == 0, leaving.describe()
    live.remove(leaving)
    assert external.peer_cover(live, PARTITIONS, timeout_s), describe(live)
    step.check_only_moved_partitions_revoked()

    produced |= external.produce(bootstrap, topic, 120, PARTITIONS, counts)
    assert wait_until(lambda: all_consumed(everyone, produced), timeout_s), describe(everyone)
    assert double_ownership(everyone) == []
    if not lenient_commits:
        if not external.commits_match(bootstrap, group, topic, PARTITIONS, counts):
            for m in everyone:  # whole event logs, to stdout: pytest shortens the assertion message
                print(m.describe(), json.dumps(m.events))
            raise AssertionError(f"committed {external.committed(bootstrap, group, topic, PARTITIONS)}, "
                                 f"records per partition {dict(counts)}")
    assert not any(m.errors for m in everyone), describe(everyone)


@pytest.mark.tansu
@pytest.mark.parametrize("leader", ["groupclient", "kafka-python", "confluent"])
def test_mixed_cooperative_group_on_tansu(tansu_broker: Any, peers: PeerSet, leader: str) -> None:
    # the committed offsets are not compared on Tansu: after the scale-in, one partition that the
    # confluent-kafka member took over sometimes keeps its first batch's committed offset there
    # although the member consumed the second batch (seen 4 runs of 4 with a groupclient leader;
    # cause not found); the same run on Kafka compares them
    mixed_group_on(tansu_broker.bootstrap, peers, leader, ["groupclient", "kafka-python", "confluent"], 60,
                   lenient_commits=True)


@pytest.mark.kafka
@pytest.mark.parametrize("leader", ["groupclient", "kafka-python", "confluent", "java"])
def test_mixed_cooperative_group_on_kafka(kafka_broker: Any, peers: PeerSet, leader: str) -> None:
    mixed_group_on(kafka_broker.bootstrap, peers, leader, ["groupclient", "kafka-python", "confluent", "java"], 90)


# -- eager -> cooperative rolling upgrade --------------------------------------------------------
class Producer:
    """Appends a record to every partition every 100 ms, in the background, while the group is
    bounced; ``send(batch)`` returns where the batch's records went."""

    def __init__(self, send: Callable[[int], list[tuple[int, int]]]) -> None:
        self._send = send
        self._placed: list[tuple[int, int]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        batch = 0
        while not self._stop.wait(0.1):
            placed = self._send(batch)
            with self._lock:
                self._placed += placed
            batch += 1

    def placed(self) -> set[tuple[int, int]]:
        with self._lock:
            return set(self._placed)

    def stop(self) -> set[tuple[int, int]]:
        self._stop.set()
        self._thread.join(10)
        return self.placed()


def rolling_upgrade(peers: PeerSet, bootstrap: str, group: str, topic: str, producer: Producer,
                    settle: Callable[[list[Peer]], bool], protocol: Callable[[], str | None]) -> None:
    """["range"] -> ["cooperative-sticky", "range"] -> ["cooperative-sticky"], one member at a
    time (Kafka's documented two-bounce upgrade) while records keep coming: they keep being
    consumed, none is lost, no partition has two owners, and the group ends up cooperative."""
    everyone: list[Peer] = []
    strategies: dict[str, str] = {}

    def start(strategy: str) -> Peer:
        peer = peers.start("groupclient", bootstrap, group, topic, strategy)
        everyone.append(peer)
        strategies[peer.name] = strategy
        return peer

    def flowing() -> None:
        # what was produced up to now is consumed: the group keeps up through every bounce
        so_far = producer.placed()
        assert wait_until(lambda: all_consumed(everyone, so_far), 30), (len(so_far), describe(everyone))

    try:
        live = [start("range")]
        assert live[0].wait_for(lambda p: len(p.assignment) == PARTITIONS, 60), live[0].describe()
        live += [start("range"), start("range")]
        assert settle(live), describe(live)
        assert wait_until(lambda: protocol() == "range", 10), protocol()
        flowing()
        # while a "range"-only member is left, range is the one protocol all members support;
        # then the group votes for cooperative-sticky, which its members run EAGER (they also list
        # range) until they list cooperative-sticky alone
        for strategy, protocols_seen in ((f"{COOP},range", ["range", "range", COOP]), (COOP, [COOP, COOP, COOP])):
            for i in range(len(live)):
                old = live[i]
                # the members that stay and run COOPERATIVE revoke only what moves
                step = Step([m for m in live if m is not old and strategies[m.name] == COOP])
                assert old.terminate() == 0, old.describe()
                live[i] = start(strategy)
                assert settle(live), describe(everyone)
                step.check_only_moved_partitions_revoked()
                assert wait_until(lambda: protocol() == protocols_seen[i], 10), (strategy, i, protocol())
                flowing()
    finally:
        produced = producer.stop()
    assert wait_until(lambda: all_consumed(everyone, produced), 30), (len(produced), describe(everyone))
    # the group runs COOPERATIVE now: a newcomer takes partitions without a full revoke
    step = Step(list(live))
    live.append(start(COOP))
    assert settle(live), describe(live)
    step.check_only_moved_partitions_revoked()
    assert wait_until(lambda: protocol() == COOP, 10), protocol()
    assert double_ownership(everyone) == []
    assert not any(m.errors for m in everyone), describe(everyone)


def test_rolling_upgrade_from_eager_to_cooperative(cluster: EmbeddedCluster, peers: PeerSet) -> None:
    group, topic = "upgrade", "upgrade-topic"
    cluster.create_topic(topic, PARTITIONS)
    producer = Producer(lambda batch: cluster.produce(topic, [f"b{batch}-{i}".encode() for i in range(PARTITIONS)]))
    rolling_upgrade(peers, cluster.bootstrap_servers, group, topic, producer,
                    lambda live: settled(cluster, group, topic, live),
                    lambda: cluster.describe_group(group)["protocol"])  # type: ignore[index]


@pytest.mark.kafka
def test_rolling_upgrade_from_eager_to_cooperative_on_kafka(kafka_broker: Any, peers: PeerSet) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient

    bootstrap = kafka_broker.bootstrap
    topic, group = external.new_topic(bootstrap, PARTITIONS), f"g-{uuid.uuid4().hex[:6]}"
    kafka_producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)

    def send(batch: int) -> list[tuple[int, int]]:
        futures = [kafka_producer.send(topic, f"b{batch}-{p}".encode(), partition=p) for p in range(PARTITIONS)]
        return [(m.partition, m.offset) for m in (f.get(10) for f in futures)]

    def protocol() -> str | None:
        # DescribeGroups; Kafka fills in the protocol only while the group is Stable
        return admin.describe_groups([group]).get(group, {}).get("protocol_data") or None

    try:
        rolling_upgrade(peers, bootstrap, group, topic, Producer(send),
                        lambda live: external.peer_cover(live, PARTITIONS, 60), protocol)
    finally:
        kafka_producer.close()
        admin.close()


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
