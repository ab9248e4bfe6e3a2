"""Member-side response handlers with a scripted network and a fake clock."""

from __future__ import annotations

import random
from typing import Any

import pytest
from kafka.protocol.consumer.group import HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse, SyncGroupResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorResponse

from groupclient.clock import FakeClock, Timer
from groupclient.errors import FatalGroupError
from groupclient.member.states import ClassicMemberState
from groupclient.member.coordinator_lookup import CoordinatorLookup
from groupclient.member.group_member import GroupMember
from groupclient.member.join import GroupJoin
from groupclient.member.types import COORDINATOR_ID_BASE, HEARTBEAT_ID_BASE, Generation, GroupConfig, JoinedMember
from groupclient.protocol.apis import ApiKey
from groupclient.error_codes import ErrorCode

from .scripted_network import ScriptedClient

E = ErrorCode


class Hooks:
    def __init__(self) -> None:
        self.prepared: list[Generation] = []
        self.completed: list[tuple[Generation, bytes]] = []
        self.assign_calls: list[tuple[str, str, list[JoinedMember]]] = []
        self.fail_assignment: Exception | None = None
        self.watched: list[list[JoinedMember]] = []
        self.lost: list[str] = []
        self.last_loss = 0  # as SubscriptionState.mark_lost: each numbered loss applied once

    def protocols(self, generation: Generation) -> list[tuple[str, bytes]]:
        return [("range", b"sub")]

    def perform_assignment(self, leader_id: str, protocol: str, members: list[JoinedMember]) -> dict[str, bytes]:
        self.assign_calls.append((leader_id, protocol, members))
        if self.fail_assignment is not None:
            raise self.fail_assignment
        return {m.member_id: f"asg-{m.member_id}".encode() for m in members}

    def watch_group(self, protocol: str, members: list[JoinedMember]) -> None:
        self.watched.append(members)

    def on_join_prepare(self, generation: Generation, timer: Timer) -> bool:
        self.prepared.append(generation)
        return True

    def on_ownership_lost(self, reason: str, loss: int | None = None) -> None:
        if loss is not None:
            if loss <= self.last_loss:
                return
            self.last_loss = loss
        self.lost.append(reason)

    def ownership_epoch(self) -> int:
        return len(self.lost)

    def on_join_complete(self, generation: Generation, assignment: bytes, epoch: int) -> bool:
        self.completed.append((generation, assignment))
        return True


def find_ok(req: Any) -> Any:
    C = FindCoordinatorResponse.Coordinator
    return FindCoordinatorResponse(version=req.version, throttle_time_ms=0, coordinators=[
        C(key="g", node_id=3, host="127.0.0.1", port=9093, error_code=0, error_message=None)])


def join_answer(req: Any, error: ErrorCode = E.NONE, member: str = "m-1", leader: str = "m-1",
                generation: int = 1, skip: bool = False) -> Any:
    members = [JoinGroupResponse.JoinGroupResponseMember(member_id="m-1", group_instance_id=None, metadata=b"sub"),
               JoinGroupResponse.JoinGroupResponseMember(member_id="m-2", group_instance_id=None, metadata=b"sub")]
    return JoinGroupResponse(version=req.version, throttle_time_ms=0, error_code=int(error), generation_id=generation,
                             protocol_type="consumer", protocol_name="range", leader=leader, skip_assignment=skip,
                             member_id=member, members=members if leader == member and not error else [])


def sync_answer(req: Any, error: ErrorCode = E.NONE, assignment: bytes = b"mine") -> Any:
    return SyncGroupResponse(version=req.version, throttle_time_ms=0, error_code=int(error),
                             protocol_type="consumer", protocol_name="range", assignment=assignment)


def heartbeat_answer(error: ErrorCode) -> Any:
    return lambda req: HeartbeatResponse(version=req.version, throttle_time_ms=0, error_code=int(error))


@pytest.fixture
def group() -> tuple[GroupMember, GroupJoin, ScriptedClient, Hooks, FakeClock]:
    clock = FakeClock()
    net = ScriptedClient(clock)
    hooks = Hooks()
    config = GroupConfig("g", None, session_timeout_ms=10000, rebalance_timeout_ms=60000,
                         heartbeat_interval_ms=3000, retry_backoff_ms=100, request_timeout_ms=30000)
    member = GroupMember(net, clock, config, CoordinatorLookup(net, "g", 100, random.Random(0)), hooks)
    net.on(ApiKey.FIND_COORDINATOR, find_ok)
    return member, GroupJoin(member, hooks), net, hooks, clock


def test_leader_path_finds_coordinator_joins_assigns_and_syncs(group: Any) -> None:
    member, join, net, hooks, clock = group
    net.on(ApiKey.JOIN_GROUP, lambda req: join_answer(req) if req.member_id else join_answer(
        req, E.MEMBER_ID_REQUIRED, member="m-1"))
    net.on(ApiKey.SYNC_GROUP, sync_answer)
    assert join.join_group_if_needed(Timer(clock, 10000))
    assert member.coordinator.connection == COORDINATOR_ID_BASE - 3 and net.nodes[COORDINATOR_ID_BASE - 3] == ("127.0.0.1", 9093)
    joins = net.requests(ApiKey.JOIN_GROUP)
    assert [j.member_id for j in joins] == ["", "m-1"]  # KIP-394 round trip
    assert joins[0].reason == "initial join"
    join_sent = next(s for s in net.sent if s.request.API_KEY == ApiKey.JOIN_GROUP)
    assert join_sent.timeout_ms == 65000  # rebalance timeout + 5 s, above request_timeout_ms
    sync = net.requests(ApiKey.SYNC_GROUP)[0]
    assert {a.member_id: a.assignment for a in sync.assignments} == {"m-1": b"asg-m-1", "m-2": b"asg-m-2"}
    assert hooks.assign_calls[0][0] == "m-1" and len(hooks.assign_calls[0][2]) == 2
    assert member.state is ClassicMemberState.STABLE
    assert hooks.completed == [(Generation(1, "m-1", "range"), b"mine")]
    assert len(hooks.prepared) == 1 and not member.rejoin_needed()


def test_follower_sends_an_empty_sync(group: Any) -> None:
    member, join, net, hooks, clock = group
    net.on(ApiKey.JOIN_GROUP, lambda req: join_answer(req, member="m-2", leader="m-1"))
    net.on(ApiKey.SYNC_GROUP, sync_answer)
    assert join.join_group_if_needed(Timer(clock, 10000))
    assert net.requests(ApiKey.SYNC_GROUP)[0].assignments == [] and not hooks.assign_calls


def test_static_leader_told_to_skip_assignment_does_not_assign(group: Any) -> None:
    member, join, net, hooks, clock = group
    net.on(ApiKey.JOIN_GROUP, lambda req: join_answer(req, skip=True))
    net.on(ApiKey.SYNC_GROUP, sync_answer)
    assert join.join_group_if_needed(Timer(clock, 10000))
    assert not hooks.assign_calls and net.requests(ApiKey.SYNC_GROUP)[0].assignments == []


@pytest.mark.parametrize("error, member_after", [
    (E.UNKNOWN_MEMBER_ID, ""),          # forget the member id
    (E.ILLEGAL_GENERATION, "m-9"),      # keep the member id, drop the generation
    (E.REBALANCE_IN_PROGRESS, "m-9"),   # just join again
    (E.COORDINATOR_LOAD_IN_PROGRESS, "m-9"),
])
def test_join_errors_from_the_table_lead_to_a_retry(group: Any, error: ErrorCode, member_after: str) -> None:
    member, join, net, hooks, clock = group
    member.generation = Generation(4, "m-9", "range")
    answers = iter([join_answer, join_answer])
    first = True

    def answer(req: Any) -> Any:
        nonlocal first
        if first:
            first = False
            return join_answer(req, error, member=req.member_id)
        return next(answers)(req, member=req.member_id or "m-new", leader="other")

    net.on(ApiKey.JOIN_GROUP, answer)
    net.on(ApiKey.SYNC_GROUP, sync_answer)
    assert join.join_group_if_needed(Timer(clock, 10000))
    joins = net.requests(ApiKey.JOIN_GROUP)
    assert len(joins) == 2 and joins[1].member_id == member_after
    assert joins[1].reason.startswith("retrying after")
    assert len(hooks.prepared) == 1  # partitions are given up once per join, not per attempt


def test_not_coordinator_rediscovers(group: Any) -> None:
    member, join, net, hooks, clock = group
    attempts = iter([E.NOT_COORDINATOR, E.NONE])
    net.on(ApiKey.JOIN_GROUP, lambda req: join_answer(req, next(attempts), leader="x", member="m-1"))
    net.on(ApiKey.SYNC_GROUP, sync_answer)
    assert join.join_group_if_needed(Timer(clock, 10000))
    assert len(net.requests(ApiKey.FIND_COORDINATOR)) == 2
    # both of its connections: the requests' and the heartbeats'
    assert net.disconnected == [COORDINATOR_ID_BASE - 3, HEARTBEAT_ID_BASE - 3]


@pytest.mark.parametrize(("error", "says"), [
    (E.INCONSISTENT_GROUP_PROTOCOL, ["partition_assignment_strategy (range)", "an assignor in common"]),
    (E.INVALID_SESSION_TIMEOUT, ["session_timeout_ms=10000", "group.min.session.timeout.ms",
                                 "group.max.session.timeout.ms", "6000 .. 1800000"]),
    (E.GROUP_MAX_SIZE_REACHED, ["group.max.size", "2147483647"]),
    (E.GROUP_AUTHORIZATION_FAILED, ["may not use the group"]),
    (E.FENCED_INSTANCE_ID, ["same group_instance_id"])])
def test_fatal_join_errors_are_raised_with_a_hint(group: Any, error: ErrorCode, says: list[str]) -> None:
    """The error names the group, what this member sent that the broker refused and the broker
    setting it hit (with Kafka's default), and says what to change."""
    member, join, net, hooks, clock = group
    net.on(ApiKey.JOIN_GROUP, lambda req: join_answer(req, error))
    with pytest.raises(FatalGroupError) as raised:
        join.join_group_if_needed(Timer(clock, 10000))
    message = str(raised.value)
    assert raised.value.code is error and "JoinGroup of group 'g'" in message
    for part in says:
        assert part in message, message
    assert member.state is ClassicMemberState.UNJOINED


def test_a_failing_assignor_is_raised_and_the_member_rejoins_next_time(group: Any) -> None:
    member, join, net, hooks, clock = group
    hooks.fail_assignment = RuntimeError("my assignor is broken")
    net.on(ApiKey.JOIN_GROUP, lambda req: join_answer(req))
    net.on(ApiKey.SYNC_GROUP, sync_answer)
    with pytest.raises(RuntimeError, match="broken"):
        join.join_group_if_needed(Timer(clock, 10000))
    assert member.state is ClassicMemberState.UNJOINED and member.rejoin_needed()
    assert not net.requests(ApiKey.SYNC_GROUP)
    hooks.fail_assignment = None
    assert join.join_group_if_needed(Timer(clock, 10000))
    assert len(hooks.prepared) == 1 and len(hooks.completed) == 1


def test_a_stale_sync_answer_is_dropped(group: Any) -> None:
    member, join, net, hooks, clock = group
    net.on(ApiKey.JOIN_GROUP, lambda req: join_answer(req, leader="x", generation=5 if req.member_id == "m-1" else 4))

    def sync(req: Any) -> Any:
        if req.generation_id == 4:
            # meanwhile the heartbeat thread learned the generation is gone
            with member._lock:
                member._reset_generation("test: generation reset", keep_member_id=True)
        return sync_answer(req)

    net.on(ApiKey.SYNC_GROUP, sync)
    member.generation = Generation(-1, "m-1")
    assert join.join_group_if_needed(Timer(clock, 10000))
    assert [r.generation_id for r in net.requests(ApiKey.SYNC_GROUP)] == [5]


def _stable(join: GroupJoin, net: ScriptedClient, clock: FakeClock) -> None:
    net.on(ApiKey.JOIN_GROUP, lambda req: join_answer(req, leader="x"))
    net.on(ApiKey.SYNC_GROUP, sync_answer)
    assert join.join_group_if_needed(Timer(clock, 10000))


@pytest.mark.parametrize("error, state, member_id, fatal", [
    (E.NONE, ClassicMemberState.STABLE, "m-1", False),
    (E.REBALANCE_IN_PROGRESS, ClassicMemberState.STABLE, "m-1", False),
    (E.ILLEGAL_GENERATION, ClassicMemberState.UNJOINED, "m-1", False),
    (E.UNKNOWN_MEMBER_ID, ClassicMemberState.UNJOINED, "", False),
    (E.FENCED_INSTANCE_ID, ClassicMemberState.STABLE, "m-1", True),
])
def test_heartbeat_answers(group: Any, error: ErrorCode, state: ClassicMemberState, member_id: str, fatal: bool) -> None:
    member, join, net, hooks, clock = group
    _stable(join, net, clock)
    net.on(ApiKey.HEARTBEAT, heartbeat_answer(error))
    future = member.send_heartbeat()
    net.deliver()
    assert future.succeeded() is (error is E.NONE)
    assert member.state is state and member.generation.member_id == member_id
    assert member.rejoin_needed() is (error is not E.NONE and not fatal)
    assert (member.fatal_error is not None) is fatal


def test_a_heartbeat_answer_for_an_old_generation_changes_nothing(group: Any) -> None:
    member, join, net, hooks, clock = group
    _stable(join, net, clock)
    net.on(ApiKey.HEARTBEAT, lambda req: None)  # hold it
    future = member.send_heartbeat()
    member.generation = Generation(2, "m-1", "range")  # a newer generation meanwhile
    net.on(ApiKey.HEARTBEAT, heartbeat_answer(E.ILLEGAL_GENERATION))
    net.deliver()
    assert future.failed() and member.state is ClassicMemberState.STABLE
    assert member.generation == Generation(2, "m-1", "range")


def test_leave_group_sends_reason_and_resets(group: Any) -> None:
    member, join, net, hooks, clock = group
    _stable(join, net, clock)
    net.on(ApiKey.LEAVE_GROUP, lambda req: LeaveGroupResponse(version=req.version, throttle_time_ms=0, error_code=0,
                                                               members=[]))
    future = member.maybe_leave_group("shutting down")
    net.deliver()
    assert future is not None and future.succeeded()
    leave = net.requests(ApiKey.LEAVE_GROUP)[0]
    assert leave.members[0].member_id == "m-1" and leave.members[0].reason == "shutting down"
    assert member.state is ClassicMemberState.UNJOINED and member.generation.member_id == ""


def test_coordinator_lookup_failure_backs_off_and_retries(group: Any) -> None:
    member, join, net, hooks, clock = group
    answers = iter([E.COORDINATOR_NOT_AVAILABLE, E.NONE])

    def find(req: Any) -> Any:
        error = next(answers)
        if error:
            C = FindCoordinatorResponse.Coordinator
            return FindCoordinatorResponse(version=req.version, throttle_time_ms=0, coordinators=[
                C(key="g", node_id=-1, host="", port=-1, error_code=int(error), error_message=None)])
        return find_ok(req)

    net.on(ApiKey.FIND_COORDINATOR, find)
    start = clock.monotonic_ms()
    assert member.ensure_coordinator_ready(Timer(clock, 5000))
    assert clock.monotonic_ms() - start >= 100  # retry_backoff_ms


def test_ensure_coordinator_ready_gives_up_when_the_timer_runs_out(group: Any) -> None:
    member, join, net, hooks, clock = group
    net.on(ApiKey.FIND_COORDINATOR, lambda req: None)  # never answered
    assert not member.ensure_coordinator_ready(Timer(clock, 1000))
    assert member.coordinator_unknown()


def test_poll_timeout_drops_partitions_before_leave_group_is_sent(group: Any) -> None:
    from groupclient.member.heartbeat_thread import HeartbeatThread

    member, join, net, hooks, clock = group
    _stable(join, net, clock)
    order: list[str] = []
    net.on(ApiKey.LEAVE_GROUP, lambda req: order.append("leave sent") or LeaveGroupResponse(
        version=req.version, throttle_time_ms=0, error_code=0, members=[]))
    net.on(ApiKey.HEARTBEAT, heartbeat_answer(E.NONE))
    # dropped once the generation is forgotten: a join completing meanwhile on the application
    # thread must see the reset generation before it can see the partitions gone
    thread = HeartbeatThread(member, lambda: order.append(
        f"partitions dropped in generation {member.current_generation().generation_id}"))
    member.heartbeat.poll(clock.monotonic_ms())
    clock.advance(3000)
    thread._step()  # a heartbeat is due, the poll timer is not
    assert net.requests(ApiKey.HEARTBEAT) and not order
    clock.advance(57_001)  # past max_poll_interval_ms (60 s) since the application's last poll
    thread._step()
    assert order == ["partitions dropped in generation -1", "leave sent"]
    assert member.state is ClassicMemberState.UNJOINED and member.rejoin_needed()


def test_a_join_completed_by_another_poll_is_still_applied(group: Any) -> None:
    """The SyncGroup answer may be read by a network poll outside join_group_if_needed (the
    consumer's poll loop, after a short poll timeout): the assignment must still be applied."""
    member, join, net, hooks, clock = group
    net.on(ApiKey.JOIN_GROUP, lambda req: join_answer(req, leader="x"))
    net.on(ApiKey.SYNC_GROUP, lambda req: None)  # held
    assert not join.join_group_if_needed(Timer(clock, 50))  # times out with SyncGroup in flight
    net.on(ApiKey.SYNC_GROUP, sync_answer)
    net.deliver()  # someone else's poll reads the answer
    assert member.state is ClassicMemberState.STABLE and not hooks.completed
    assert join.needed_or_pending()
    assert join.join_group_if_needed(Timer(clock, 50))
    assert hooks.completed == [(Generation(1, "m-1", "range"), b"mine")]
    assert not join.needed_or_pending()
