"""Every cross-thread check-then-act is one locked step: the other thread's step is put at every
line of one thread's step (tests/interleave.py), and the outcome must be one that some order of
the two whole steps gives."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from kafka.protocol.consumer.group import LeaveGroupResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataResponse

from groupclient.clock import FakeClock
from groupclient.member.coordinator_lookup import CoordinatorLookup
from groupclient.member.group_member import GroupMember
from groupclient.member.heartbeat_thread import HeartbeatThread
from groupclient.member.states import ClassicMemberState
from groupclient.member.types import COORDINATOR_ID_BASE, Generation, GroupConfig
from groupclient.network.metadata import ClusterMetadata
from groupclient.protocol.apis import ApiKey

from ..interleave import Step, interleavings, locks_of
from .scripted_network import ScriptedClient

CONFIG = GroupConfig("g", None, session_timeout_ms=10_000, rebalance_timeout_ms=60_000, heartbeat_interval_ms=3_000,
                     retry_backoff_ms=100, request_timeout_ms=30_000)


# -- metadata ----------------------------------------------------------------------------------
def metadata_answer(topics: dict[str, int], brokers: int = 1) -> Any:
    R = MetadataResponse
    return R(version=12, throttle_time_ms=0, cluster_id="c", controller_id=0, brokers=[
        R.MetadataResponseBroker(node_id=n, host="127.0.0.1", port=9092 + n, rack=None) for n in range(brokers)],
        topics=[R.MetadataResponseTopic(error_code=0, name=t, topic_id=None, is_internal=False, partitions=[
            R.MetadataResponseTopic.MetadataResponsePartition(
                error_code=0, partition_index=p, leader_id=p % brokers, leader_epoch=0, replica_nodes=[p % brokers],
                isr_nodes=[p % brokers], offline_replicas=[]) for p in range(n)])
            for t, n in topics.items()])


OLD, NEW = {"a": 2}, {"a": 3, "b": 1}


@dataclass
class MetadataWorld:
    metadata: ClusterMetadata = field(default_factory=lambda: ClusterMetadata(300_000))
    seen: list[dict[str, int]] = field(default_factory=list)


def _metadata_world() -> MetadataWorld:
    world = MetadataWorld()
    world.metadata.update(metadata_answer(OLD), 1_000, complete=True)
    return world


def _read_view(world: MetadataWorld) -> None:
    """What the other thread reads: every topic with its partition count (an assignor's view)."""
    metadata = world.metadata
    world.seen.append({t: len(metadata.partitions_for_topic(t) or ()) for t in metadata.topics()})


def test_a_metadata_update_is_seen_whole_or_not_at_all() -> None:
    points, problems = interleavings(
        _metadata_world, Step("the update (either thread)", lambda w: w.metadata.update(metadata_answer(NEW), 2_000, True)),
        Step("a reader", _read_view), ["groupclient/network/metadata.py"], lambda w: locks_of(w.metadata),
        lambda w, at: None if w.seen[0] in (OLD, NEW) else f"saw {w.seen[0]}")
    assert not problems, f"{len(problems)} of {points + 2} points:\n" + "\n".join(problems)


def test_an_update_asked_for_while_a_metadata_request_is_out_is_not_lost() -> None:
    """A fetch finds a leader moved (request_update, either thread) while a Metadata request sent
    before that is answered: the answer predates the move, so another refresh must still come."""

    def setup() -> MetadataWorld:
        world = _metadata_world()
        world.seen.append({"requests when sent": world.metadata.update_requests()})
        return world

    def apply(world: MetadataWorld) -> None:
        world.metadata.update(metadata_answer(NEW), 2_000, True, world.seen[0]["requests when sent"])

    points, problems = interleavings(
        setup, Step("the answer applied", apply), Step("request_update (a fetch saw a moved leader)",
                                                       lambda w: w.metadata.request_update()),
        ["groupclient/network/metadata.py"], lambda w: locks_of(w.metadata),
        lambda w, at: None if w.metadata.needs_update(2_000) else "the requested update was dropped")
    assert not problems, f"{len(problems)} of {points + 2} points:\n" + "\n".join(problems)


# -- the coordinator ---------------------------------------------------------------------------
def find_answer(node_id: int) -> Any:
    C = FindCoordinatorResponse.Coordinator
    return lambda req: FindCoordinatorResponse(version=req.version, throttle_time_ms=0, coordinators=[
        C(key="g", node_id=node_id, host="127.0.0.1", port=9100 + node_id, error_code=0, error_message=None)])


@dataclass
class LookupWorld:
    net: ScriptedClient
    lookup: CoordinatorLookup
    futures: list[Any] = field(default_factory=list)


def _lookup_world() -> LookupWorld:
    net = ScriptedClient(FakeClock())
    return LookupWorld(net, CoordinatorLookup(net, "g", 100, random.Random(0)))


def test_two_threads_looking_the_coordinator_up_send_one_find_coordinator() -> None:
    def check(world: LookupWorld, at: int) -> str | None:
        sent = len(world.net.requests(ApiKey.FIND_COORDINATOR))
        if sent != 1 or world.futures[0] is not world.futures[1]:
            return f"{sent} FindCoordinator requests, {len({id(f) for f in world.futures})} futures"
        return None

    points, problems = interleavings(
        _lookup_world, Step("lookup (application thread)", lambda w: w.futures.append(w.lookup.lookup())),
        Step("lookup (heartbeat thread)", lambda w: w.futures.append(w.lookup.lookup())),
        ["groupclient/member/coordinator_lookup.py"], lambda w: locks_of(w.lookup), check)
    assert not problems, f"{len(problems)} of {points + 2} points:\n" + "\n".join(problems)


class FailedConnections(ScriptedClient):
    """A scripted network whose connections to the nodes in ``failed`` have failed."""

    def __init__(self, clock: FakeClock, failed: set[int]) -> None:
        super().__init__(clock)
        self.failed = failed

    def connection_failed(self, node: int) -> bool:
        return node in self.failed


def test_a_failed_connection_to_the_old_coordinator_never_forgets_the_new_one() -> None:
    """The application finds the old coordinator's connection failed while the heartbeat thread
    learns the new coordinator: the new one must stay known."""
    old, new = COORDINATOR_ID_BASE - 1, COORDINATOR_ID_BASE - 2

    def setup() -> LookupWorld:
        net = FailedConnections(FakeClock(), {old})
        lookup = CoordinatorLookup(net, "g", 100, random.Random(0))
        net.on(ApiKey.FIND_COORDINATOR, find_answer(1))
        lookup.lookup()
        net.deliver()
        assert lookup.connection == old
        net.on(ApiKey.FIND_COORDINATOR, find_answer(2))
        return LookupWorld(net, lookup)

    def found_the_new_one(world: LookupWorld) -> None:
        world.lookup.lookup()
        world.net.deliver()

    points, problems = interleavings(
        setup, Step("unknown() (application thread)", lambda w: w.lookup.unknown()),
        Step("the new coordinator found (heartbeat thread)", found_the_new_one),
        ["groupclient/member/coordinator_lookup.py"], lambda w: locks_of(w.lookup),
        lambda w, at: None if w.lookup.connection == new else f"the coordinator is now {w.lookup.connection}")
    assert not problems, f"{len(problems)} of {points + 2} points:\n" + "\n".join(problems)


# -- heartbeats and the poll timeout ------------------------------------------------------------------
class NoPartitions:
    def __init__(self) -> None:
        self.lost: list[str] = []
        self.last_loss = 0  # as SubscriptionState.mark_lost: each numbered loss applied once

    def owns_partitions(self) -> bool:
        return False

    def ownership_epoch(self) -> int:
        return len(self.lost)

    def on_ownership_lost(self, reason: str, loss: int | None = None) -> None:
        if loss is not None:
            if loss <= self.last_loss:
                return
            self.last_loss = loss
        self.lost.append(reason)


@dataclass
class MemberWorld:
    clock: FakeClock
    net: ScriptedClient
    member: GroupMember
    thread: HeartbeatThread
    generation_when_polled: list[int] = field(default_factory=list)


def _stable_member(heartbeat_due: bool = False) -> MemberWorld:
    clock = FakeClock()
    net = ScriptedClient(clock)
    net.on(ApiKey.FIND_COORDINATOR, find_answer(1))
    net.on(ApiKey.LEAVE_GROUP, lambda req: LeaveGroupResponse(version=req.version, throttle_time_ms=0, error_code=0,
                                                               members=[]))
    net.on(ApiKey.HEARTBEAT, lambda req: None)  # held: in flight
    lookup = CoordinatorLookup(net, "g", 100, random.Random(0))
    lookup.lookup()
    net.deliver()
    member = GroupMember(net, clock, CONFIG, lookup, NoPartitions())
    member.generation, member.state, member.rejoin_reason = Generation(3, "m-1", "range"), ClassicMemberState.STABLE, None
    now = clock.monotonic_ms()
    member.heartbeat.joined(now)
    member.heartbeat.poll(now)
    clock.advance(CONFIG.heartbeat_interval_ms if heartbeat_due else CONFIG.rebalance_timeout_ms + 1)
    member.heartbeat.received(clock.monotonic_ms(), clock.monotonic_ms(), group_stable=True)  # the lease holds
    return MemberWorld(clock, net, member, HeartbeatThread(member, lambda: member.ownership.on_ownership_lost("poll")))


def test_the_poll_timeout_never_leaves_after_the_application_polled() -> None:
    """The heartbeat thread finds the poll interval over while the application calls poll(): the
    member leaves only if the application's poll came after the decision (it then rejoins)."""

    def application_polls(world: MemberWorld) -> None:
        world.generation_when_polled.append(world.member.current_generation().generation_id)
        world.member.poll_heartbeat(world.clock.monotonic_ms())

    def check(world: MemberWorld, at: int) -> str | None:
        left = bool(world.net.requests(ApiKey.LEAVE_GROUP))
        polled_in_generation = world.generation_when_polled[0] >= 0
        if left and polled_in_generation:
            return "left the group although the application polled before the member gave its generation up"
        if not left and not polled_in_generation:
            return "gave the generation up without leaving"
        return None

    points, problems = interleavings(
        _stable_member, Step("the heartbeat thread's turn", lambda w: w.thread._step()),
        Step("poll() (application thread)", application_polls), ["groupclient/member/group_member.py",
                                                                  "groupclient/member/heartbeat_thread.py"],
        lambda w: locks_of(w.member, w.member.coordinator), check)
    assert not problems, f"{len(problems)} of {points + 2} points:\n" + "\n".join(problems)


def test_a_due_heartbeat_is_sent_once_whichever_threads_find_it_due() -> None:
    def heartbeat_thread(world: MemberWorld) -> None:
        world.thread._step()

    points, problems = interleavings(
        lambda: _stable_member(heartbeat_due=True),
        Step("send_heartbeat_if_due (application thread)", lambda w: w.member.send_heartbeat_if_due(w.clock.monotonic_ms())),
        Step("the heartbeat thread's turn", heartbeat_thread),
        ["groupclient/member/group_member.py", "groupclient/member/heartbeat_thread.py"],
        lambda w: locks_of(w.member, w.member.coordinator),
        lambda w, at: None if len(w.net.requests(ApiKey.HEARTBEAT)) == 1
        else f"{len(w.net.requests(ApiKey.HEARTBEAT))} heartbeats sent")
    assert not problems, f"{len(problems)} of {points + 2} points:\n" + "\n".join(problems)


def test_the_tool_finds_a_window_and_respects_locks() -> None:
    """tests/interleave.py itself: a read-then-write is broken between the two; the same under a
    lock is not."""
    import threading

    class Counter:
        def __init__(self) -> None:
            self._lock = threading.Lock()
            self.value = 0

        def racy(self) -> None:
            value = self.value
            self.value = value + 1

        def locked(self) -> None:
            with self._lock:
                value = self.value
                self.value = value + 1

    here = "tests/unit/test_interleavings.py"
    _, racy = interleavings(Counter, Step("racy", Counter.racy), Step("racy", Counter.racy), [here],
                            lambda c: [c._lock], lambda c, at: None if c.value == 2 else f"value {c.value}")
    _, locked = interleavings(Counter, Step("locked", Counter.locked), Step("locked", Counter.locked), [here],
                              lambda c: [c._lock], lambda c, at: None if c.value == 2 else f"value {c.value}")
    assert len(racy) == 1 and not locked


