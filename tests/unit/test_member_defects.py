"""The smaller membership defects, each pinned with a scripted network and a fake clock."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from kafka.structs import TopicPartition

from groupclient.clock import FakeClock, Timer
from groupclient.consumer.subscription import SubscriptionState
from groupclient.errors import ProtocolError
from groupclient.member.heartbeat_thread import HeartbeatThread
from groupclient.member.states import ClassicMemberState
from groupclient.member.types import JoinedMember
from groupclient.protocol.apis import ApiKey
from groupclient.protocol.consumer_protocol import Assignment, Subscription, encode_assignment, encode_subscription
from groupclient.error_codes import ErrorCode

from .group_parts import GroupParts, build_group
from .scripted_network import ScriptedClient
from .test_membership import find_ok, heartbeat_answer, join_answer, sync_answer

E = ErrorCode


def consumer_member(clock: FakeClock) -> tuple[GroupParts, ScriptedClient]:
    net = ScriptedClient(clock)
    net.on(ApiKey.FIND_COORDINATOR, find_ok)
    net.metadata.snapshot = replace(net.metadata.snapshot, leaders={"t": {0: 0, 1: 0}})
    subscription = SubscriptionState("earliest")
    subscription.subscribe({"t"}, None)
    return build_group(net, clock, subscription), net


def follower_join(req: Any) -> Any:
    return join_answer(req, member="m-2", leader="m-1")


def test_an_unreadable_assignment_fails_the_join_and_the_member_rejoins() -> None:
    """Defect 11: an assignment with an invalid version is a clear error, never a silent empty
    assignment; the next poll rejoins."""
    clock = FakeClock()
    parts, net = consumer_member(clock)
    hooks, member, join = parts.hooks, parts.member, parts.join
    net.on(ApiKey.JOIN_GROUP, follower_join)
    net.on(ApiKey.SYNC_GROUP, lambda req: sync_answer(req, assignment=b"\x7f\x7f\x00\x00garbage"))
    with pytest.raises(ProtocolError, match="cannot be read"):
        join.join_group_if_needed(Timer(clock, 10_000))
    assert member.state is ClassicMemberState.UNJOINED and member.rejoin_needed()
    good = encode_assignment(Assignment([TopicPartition("t", 0)]))
    net.on(ApiKey.SYNC_GROUP, lambda req: sync_answer(req, assignment=good))
    assert join.join_group_if_needed(Timer(clock, 10_000))
    assert parts.subscription.assigned() == {TopicPartition("t", 0)}


@pytest.mark.parametrize("error", [E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION, E.REBALANCE_IN_PROGRESS,
                                   E.MEMBER_ID_REQUIRED])
def test_these_join_errors_rejoin_at_once_without_backoff(error: ErrorCode) -> None:
    """Defect 10: as Java's joinGroupIfNeeded, no retry_backoff_ms before rejoining after these."""
    clock = FakeClock()
    parts, net = consumer_member(clock)
    member, join = parts.member, parts.join
    answers = [error]

    def answer(req: Any) -> Any:
        if answers:
            return join_answer(req, answers.pop(), member=req.member_id or "m-2")
        return follower_join(req)

    net.on(ApiKey.JOIN_GROUP, answer)
    net.on(ApiKey.SYNC_GROUP, lambda req: sync_answer(req, assignment=b""))
    start = clock.monotonic_ms()
    assert join.join_group_if_needed(Timer(clock, 10_000))
    assert clock.monotonic_ms() - start < member.config.retry_backoff_ms
    assert len(net.requests(ApiKey.JOIN_GROUP)) == 2


def test_heartbeats_run_while_completing_the_rebalance() -> None:
    """Defect 10: a member waiting for the leader's assignment keeps heartbeating (Java does), so a
    slow SyncGroup does not let its session run out."""
    clock = FakeClock()
    parts, net = consumer_member(clock)
    member, join = parts.member, parts.join
    net.on(ApiKey.JOIN_GROUP, follower_join)
    net.on(ApiKey.SYNC_GROUP, lambda req: None)  # the leader is slow: held
    net.on(ApiKey.HEARTBEAT, heartbeat_answer(E.NONE))
    assert not join.join_group_if_needed(Timer(clock, 500))
    assert member.state is ClassicMemberState.COMPLETING_REBALANCE
    thread = HeartbeatThread(member, lambda: None)
    clock.advance(3_000)
    thread._step()
    assert net.requests(ApiKey.HEARTBEAT), "no heartbeat while completing the rebalance"


def test_a_static_leader_told_to_skip_the_assignment_still_watches_partition_counts() -> None:
    """Defect 10: a restarted static leader answered with skip_assignment must still notice a
    partition count change and ask for a rebalance."""
    clock = FakeClock()
    parts, net = consumer_member(clock)
    hooks, member, join = parts.hooks, parts.member, parts.join
    sub = encode_subscription(Subscription(["t"]))
    hooks.watch_group("range", [JoinedMember("m-1", "static-1", sub), JoinedMember("m-2", None, sub)])
    assert not hooks.metadata_changed_since_assignment()
    net.metadata.snapshot = replace(net.metadata.snapshot, leaders={"t": {0: 0, 1: 0, 2: 0}})  # the topic grew
    assert hooks.metadata_changed_since_assignment()


def test_a_static_leader_skipping_the_assignment_reports_the_group() -> None:
    clock = FakeClock()
    parts, net = consumer_member(clock)
    hooks, member, join = parts.hooks, parts.member, parts.join
    sub = encode_subscription(Subscription(["t", "u"]))

    def skipping(req: Any) -> Any:
        answer = join_answer(req, skip=True)
        for m in answer.members:
            m.metadata = sub
        return answer

    net.on(ApiKey.JOIN_GROUP, skipping)
    net.on(ApiKey.SYNC_GROUP, lambda req: sync_answer(req, assignment=b""))
    assert join.join_group_if_needed(Timer(clock, 10_000))
    assert parts.subscription.group_topics == {"t", "u"}
    assert hooks.assigned_snapshot is not None and set(hooks.assigned_snapshot) == {"t", "u"}


def test_a_heartbeat_answered_with_a_reset_drops_the_partitions_at_once() -> None:
    """The group moved on without this member: its partitions go now, not at the next poll."""
    clock = FakeClock()
    parts, net = consumer_member(clock)
    hooks, member, join = parts.hooks, parts.member, parts.join
    good = encode_assignment(Assignment([TopicPartition("t", 0), TopicPartition("t", 1)]))
    net.on(ApiKey.JOIN_GROUP, follower_join)
    net.on(ApiKey.SYNC_GROUP, lambda req: sync_answer(req, assignment=good))
    assert join.join_group_if_needed(Timer(clock, 10_000))
    assert len(parts.subscription.assigned()) == 2
    net.on(ApiKey.HEARTBEAT, heartbeat_answer(E.ILLEGAL_GENERATION))
    member.send_heartbeat()
    net.deliver()
    assert parts.subscription.assigned() == set()
    assert parts.subscription.has_lost()


def test_the_lease_ends_before_the_coordinator_could_expire_the_member() -> None:
    clock = FakeClock()
    parts, net = consumer_member(clock)
    hooks, member, join = parts.hooks, parts.member, parts.join
    good = encode_assignment(Assignment([TopicPartition("t", 0)]))
    net.on(ApiKey.JOIN_GROUP, follower_join)
    net.on(ApiKey.SYNC_GROUP, lambda req: sync_answer(req, assignment=good))
    assert join.join_group_if_needed(Timer(clock, 10_000))
    net.on(ApiKey.HEARTBEAT, lambda req: None)  # the coordinator went silent
    sent_at = clock.monotonic_ms()
    member.send_heartbeat()
    clock.advance(9_999)
    assert not member.check_lease(clock.monotonic_ms())
    assert parts.subscription.assigned() == {TopicPartition("t", 0)}
    clock.advance(1)
    assert clock.monotonic_ms() - sent_at == 10_000
    assert member.check_lease(clock.monotonic_ms())
    assert parts.subscription.assigned() == set() and member.rejoin_needed()
    assert member.current_generation().member_id == "m-2"  # kept: the rejoin may keep the assignment


def test_a_bug_in_a_response_handler_is_fatal_with_its_traceback_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    """An answer handler of groupclient's that raises (here an illegal member transition, as a
    bug would) fails the join with InternalError, kept for every later poll(); before, it was a
    retriable ProtocolError and the member joined again and again until the poll's timeout."""
    from groupclient.errors import InternalError
    from groupclient.member.states import IllegalMemberTransition

    clock = FakeClock()
    parts, net = consumer_member(clock)
    member, join = parts.member, parts.join
    net.on(ApiKey.JOIN_GROUP, follower_join)
    net.on(ApiKey.SYNC_GROUP, lambda req: sync_answer(req, assignment=b""))

    def buggy(*args: Any) -> bool:
        raise IllegalMemberTransition("member cannot go from stable to preparing-rebalance")

    monkeypatch.setattr(member, "on_join_answer", buggy)
    with pytest.raises(InternalError) as raised:
        join.join_group_if_needed(Timer(clock, 10_000))
    assert isinstance(raised.value.__cause__, IllegalMemberTransition)
    assert member.fatal_error is raised.value
    assert len(net.requests(ApiKey.JOIN_GROUP)) == 1  # not retried
