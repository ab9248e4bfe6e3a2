"""The consumer group protocol's member (KIP-848) and the reconciliation on the application
thread, over a scripted network and a fake clock: what each heartbeat states, the order of
revoke / assign / acknowledge, and every error path of the heartbeat and of the commits."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kafka.protocol.admin.configs import DescribeConfigsResponse
from kafka.protocol.consumer.group import OffsetCommitResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorResponse

from groupclient.clock import FakeClock, Timer
from groupclient.consumer.assigned import AssignedPartitions
from groupclient.consumer.commits import OffsetCommitter
from groupclient.consumer.listener import ListenerCalls
from groupclient.consumer.rebalance_events import RebalanceRecorder
from groupclient.consumer.reconciler import Reconciler
from groupclient.consumer.subscription import SubscriptionState
from groupclient.error_codes import ErrorCode
from groupclient.errors import FatalGroupError, RequestFailedError, RequestTimedOutError
from groupclient.member.consumer_heartbeat_fields import Subscribed
from groupclient.member.consumer_member import ConsumerGroupMember
from groupclient.member.states import ConsumerMemberState as S
from groupclient.member.coordinator_lookup import CoordinatorLookup
from groupclient.member.types import GroupConfig
from groupclient.network.metadata import MetadataSnapshot
from groupclient.protocol.apis import ApiKey
from groupclient.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse as Response
from groupclient.structs import OffsetAndMetadata, TopicPartition

from .scripted_network import ScriptedClient

E = ErrorCode
ORDERS, AUDIT, LATER = uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=3)
CONFIG = GroupConfig("g", None, 45000, 60000, 3000, 100, 30000)
MEMBER_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def find_ok(req: Any) -> Any:
    C = FindCoordinatorResponse.Coordinator
    return FindCoordinatorResponse(version=req.version, throttle_time_ms=0, coordinators=[
        C(key="g", node_id=3, host="127.0.0.1", port=9093, error_code=0, error_message=None)])


def answer(epoch: int, assignment: dict[uuid.UUID, list[int]] | None = None, error: ErrorCode = E.NONE,
           interval: int = 1000, message: str | None = None) -> Any:
    A = Response.Assignment
    return Response(version=1, throttle_time_ms=0, error_code=int(error), error_message=message,
                    member_id=MEMBER_ID if not error else None, member_epoch=epoch if not error else -1,
                    heartbeat_interval_ms=interval if not error else 0,
                    assignment=None if assignment is None else A(topic_partitions=[
                        A.TopicPartitions(topic_id=t, partitions=p) for t, p in assignment.items()]))


class Listener:
    def __init__(self, calls: list[tuple[str, set[TopicPartition]]]) -> None:
        self.calls = calls

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.calls.append(("revoked", set(revoked)))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.calls.append(("assigned", set(assigned)))

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.calls.append(("lost", set(lost)))


class Harness:
    """A member as GroupConsumer builds it under group_protocol='consumer'."""

    def __init__(self, auto_commit: bool = False, config: GroupConfig = CONFIG, assignor: str | None = None,
                 rack: str | None = None, regex: str | None = None) -> None:
        self.clock = FakeClock()
        self.started_at = self.clock.monotonic_ms()
        self.net = ScriptedClient(self.clock)
        self.net.metadata.snapshot = MetadataSnapshot(
            brokers={0: ("127.0.0.1", 9092)}, leaders={"orders": {0: 0, 1: 0, 2: 0}, "audit": {0: 0}},
            version=1, topic_ids={"orders": ORDERS, "audit": AUDIT})
        self.net.on(ApiKey.FIND_COORDINATOR, find_ok)
        self.answers: list[Any] = []  # what the next heartbeats are answered, in order
        self.net.on(ApiKey.CONSUMER_GROUP_HEARTBEAT, lambda req: self.answers.pop(0) if self.answers else None)
        self.commits: list[Any] = []
        self.commit_answer: Callable[[Any], Any] = lambda req: commit_ok(req)
        self.net.on(ApiKey.OFFSET_COMMIT, lambda req: self.commits.append(req) or self.commit_answer(req))
        self.subscription = SubscriptionState("earliest")
        self.subscription.subscribe({"orders", "audit"}, None)
        self.member = ConsumerGroupMember(
            self.net, self.clock, config, CoordinatorLookup(self.net, "g", config.retry_backoff_ms, random.Random(0)),
            AssignedPartitions(self.subscription, lambda: None, "g"), MEMBER_ID, assignor, rack)
        self.committer = OffsetCommitter(self.member, self.subscription, auto_commit, 5000)
        self.calls: list[tuple[str, set[TopicPartition]]] = []
        self.events: list[Any] = []
        events = RebalanceRecorder([self.events.append])
        self.listener_calls = ListenerCalls(observer=events.listener_called)
        self.listener_calls.listener = Listener(self.calls)
        self.reconciler = Reconciler(self.member, self.committer, self.subscription, self.net,  # type: ignore[arg-type]
                                     self.listener_calls, events, lambda: None)
        self.member.subscribe(Subscribed(("audit", "orders"), regex), "test")
        assert self.member.ensure_coordinator_ready(Timer(self.clock, 1000))

    def heartbeats(self) -> list[Any]:
        return self.net.requests(ApiKey.CONSUMER_GROUP_HEARTBEAT)

    def elapsed_ms(self) -> int:
        return self.clock.monotonic_ms() - self.started_at

    def step(self, *answers: Any, advance_ms: int = 0) -> None:
        """What one poll() does: a due heartbeat, its answer, the reconciliation (and its ack)."""
        self.answers.extend(answers)
        self.clock.advance(advance_ms)
        self.member.poll_heartbeat(self.clock.monotonic_ms())
        self.member.check_lease(self.clock.monotonic_ms())
        if self.member.coordinator_unknown():
            self.member.ensure_coordinator_ready(Timer(self.clock, 1000))
        self.member.send_heartbeat_if_due(self.clock.monotonic_ms())
        self.member.ask_session_timeout(self.clock.monotonic_ms())
        self.net.deliver()
        self.reconciler.reconcile(Timer(self.clock, 1000))
        self.net.deliver()

    def join(self, assignment: dict[uuid.UUID, list[int]]) -> None:
        self.step(answer(1, assignment), answer(1))
        assert self.member.member_state() is S.STABLE


def commit_ok(req: Any, error: ErrorCode = E.NONE) -> Any:
    T = OffsetCommitResponse.OffsetCommitResponseTopic
    return OffsetCommitResponse(version=req.version, throttle_time_ms=0, topics=[
        T(name=t.name, topic_id=t.topic_id, partitions=[T.OffsetCommitResponsePartition(partition_index=p.partition_index,
                                                                     error_code=int(error)) for p in t.partitions])
        for t in req.topics])


def owned(request: Any) -> dict[uuid.UUID, list[int]] | None:
    if request.topic_partitions is None:
        return None
    return {t.topic_id: list(t.partitions) for t in request.topic_partitions}


# -- what each heartbeat states ---------------------------------------------------------------
def test_the_join_states_everything_and_later_heartbeats_only_what_changed() -> None:
    h = Harness(assignor="uniform", rack="r1")
    h.step(answer(1, {ORDERS: [0, 1]}), answer(1))
    join, ack = h.heartbeats()
    assert (join.member_id, join.member_epoch, join.rebalance_timeout_ms) == (MEMBER_ID, 0, 60000)
    assert (join.subscribed_topic_names, join.server_assignor, join.rack_id) == (["audit", "orders"], "uniform", "r1")
    assert owned(join) == {}
    # the acknowledgement goes at once (no clock moved), with what the member owns now
    assert ack.member_epoch == 1 and owned(ack) == {ORDERS: [0, 1]}
    assert (ack.subscribed_topic_names, ack.rebalance_timeout_ms, ack.server_assignor, ack.rack_id) == (None, -1, None, None)
    assert h.calls == [("assigned", {tp("orders", 0), tp("orders", 1)})]
    h.step(answer(1), advance_ms=1000)
    plain = h.heartbeats()[-1]
    assert (owned(plain), plain.subscribed_topic_names, plain.rebalance_timeout_ms) == (None, None, -1)
    # a changed subscription goes with the next heartbeat, alone
    h.member.subscribe(Subscribed(("orders",)), "subscription changed")
    h.step(answer(1), advance_ms=1000)
    assert (h.heartbeats()[-1].subscribed_topic_names, owned(h.heartbeats()[-1])) == (["orders"], None)


def test_no_listener_of_a_heartbeat_runs_under_the_members_lock() -> None:
    h = Harness()
    h.join({ORDERS: [0]})
    free: list[bool] = []

    def listener(_: object) -> None:
        took = h.member._lock.acquire(blocking=False)
        free.append(took)
        if took:
            h.member._lock.release()

    h.answers.append(answer(1))
    h.clock.advance(1000)
    sent = h.member.send_heartbeat_if_due(h.clock.monotonic_ms())
    assert sent is not None
    sent.add_both(listener)
    h.net.deliver()
    assert free == [True]


def heartbeat_times(h: Harness, until_ms: int, reply: Callable[[int], Any], step_ms: int = 50) -> list[int]:
    """Run the clock to ``until_ms`` after the harness started, in steps, every heartbeat answered
    ``reply(its number)``: when each heartbeat went out, in ms after the start."""
    start = h.clock.monotonic_ms() - h.elapsed_ms()
    times = []
    while h.elapsed_ms() < until_ms:
        sent = len(h.heartbeats())
        h.answers = [reply(sent)]
        h.step(advance_ms=step_ms)
        times += [h.clock.monotonic_ms() - start] * (len(h.heartbeats()) - sent)
    return times


def test_a_member_that_joined_heartbeats_at_a_tenth_of_the_interval_for_two_intervals_then_at_the_interval() -> None:
    # the partitions the group moves to a member that joins are released one by one, each
    # announced only in an answer to this member: at the interval each would wait half of one
    h = Harness()
    h.step(answer(1, {ORDERS: [0]}, interval=2500), answer(1, interval=2500))
    assert len(h.heartbeats()) == 2 and h.member.member_state() is S.STABLE
    times = heartbeat_times(h, 12_000, lambda n: answer(1, interval=2500))
    assert times == [*range(250, 5_001, 250), 7_500, 10_000]


def test_a_member_only_giving_partitions_up_heartbeats_at_the_interval_the_broker_sets() -> None:
    h = Harness()
    h.step(answer(1, {ORDERS: [0, 1]}, interval=2500), answer(1, interval=2500))
    heartbeat_times(h, 10_000, lambda n: answer(1, interval=2500))  # the join's settling is over
    first = len(h.heartbeats())
    times = heartbeat_times(h, 20_000, lambda n: answer(2, {ORDERS: [0]}, interval=2500) if n == first
                            else answer(2, interval=2500))
    # the revocation is acknowledged at once; nothing comes to this member, so no more than that
    assert times == [12_500, 12_500, 15_000, 17_500, 20_000]
    assert owned(h.heartbeats()[first + 1]) == {ORDERS: [0]}


def test_a_target_that_gives_the_member_a_partition_settles_it_again() -> None:
    h = Harness()
    h.step(answer(1, {ORDERS: [0]}, interval=1000), answer(1))
    heartbeat_times(h, 5_000, lambda n: answer(1))
    first = len(h.heartbeats())
    times = heartbeat_times(h, 10_000, lambda n: answer(2, {ORDERS: [0, 1]}) if n == first else answer(2))
    # the heartbeat at 6 s brings the target, acknowledged at once, then one every 100 ms for 2 s
    assert times == [6_000, 6_000, *range(6_100, 8_001, 100), 9_000, 10_000]
    assert owned(h.heartbeats()[first + 1]) == {ORDERS: [0, 1]}


def test_a_v0_broker_may_hand_out_the_member_id_and_the_member_uses_it() -> None:
    h = Harness()
    A = Response.Assignment
    given = Response(version=0, throttle_time_ms=0, error_code=0, error_message=None, member_id="from-the-broker",
                     member_epoch=1, heartbeat_interval_ms=1000, assignment=A(topic_partitions=[
                         A.TopicPartitions(topic_id=ORDERS, partitions=[0])]))
    h.step(given, answer(1))
    assert h.heartbeats()[0].member_id == MEMBER_ID  # its own on the join, as Java 4's
    assert h.heartbeats()[1].member_id == "from-the-broker"
    assert h.member.snapshot().member_id == "from-the-broker"


def test_a_regex_needs_v1_and_a_v0_broker_is_a_refusal_saying_so() -> None:
    h = Harness(regex="ord.*")
    h.net.version_for = lambda node, api: 0  # type: ignore[method-assign]
    h.step()
    error = h.member.take_error()
    assert isinstance(error, FatalGroupError) and "needs ConsumerGroupHeartbeat v1" in str(error)
    assert h.heartbeats() == [] and h.member.member_state() is S.FATAL


def test_a_broker_side_regex_is_sent_on_join_and_only_then() -> None:
    h = Harness(regex="ord.*")
    h.step(answer(1, {ORDERS: [0]}), answer(1))
    join, ack = h.heartbeats()
    assert join.subscribed_topic_regex == "ord.*" and ack.subscribed_topic_regex is None


# -- reconciliation ----------------------------------------------------------------------------
def test_a_new_target_revokes_first_after_committing_then_assigns_then_acknowledges() -> None:
    h = Harness(auto_commit=True)
    h.join({ORDERS: [0, 1]})
    h.subscription.seek(tp("orders", 0), 41)
    assert h.subscription.mark_delivered(tp("orders", 0), 41, None)
    h.step(answer(2, {ORDERS: [1, 2]}), answer(2), advance_ms=1000)
    assert h.calls[1:] == [("revoked", {tp("orders", 0)}), ("assigned", {tp("orders", 2)})]
    [commit] = h.commits
    assert commit.generation_id_or_member_epoch == 2 and commit.member_id == MEMBER_ID  # the epoch checked
    assert [p.committed_offset for t in commit.topics for p in t.partitions] == [42]
    ack = h.heartbeats()[-1]
    assert (ack.member_epoch, owned(ack)) == (2, {ORDERS: [1, 2]})
    assert h.subscription.assigned() == {tp("orders", 1), tp("orders", 2)}
    assert h.member.member_state() is S.STABLE


def test_an_acknowledgement_held_up_by_a_heartbeat_in_flight_goes_as_soon_as_its_answer_comes() -> None:
    h = Harness()
    h.join({ORDERS: [0, 1]})
    h.answers.append(answer(2, {ORDERS: [1]}))
    h.clock.advance(1000)
    h.member.send_heartbeat_if_due(h.clock.monotonic_ms())
    h.net.deliver()  # the new target came; the application has not reconciled yet
    h.clock.advance(1000)
    h.member.send_heartbeat_if_due(h.clock.monotonic_ms())  # the next interval's, held by the broker
    h.reconciler.reconcile(Timer(h.clock, 1000))
    assert h.member.member_state() is S.ACKNOWLEDGING and len(h.heartbeats()) == 4
    h.answers.append(answer(2))
    h.net.deliver()
    h.member.send_heartbeat_if_due(h.clock.monotonic_ms())  # no time has passed
    assert owned(h.heartbeats()[-1]) == {ORDERS: [1]} and h.member.member_state() is S.STABLE


def test_each_reconciled_target_is_a_rebalance_event_with_the_epoch_and_what_moved() -> None:
    h = Harness()
    h.join({ORDERS: [0, 1]})
    h.step(answer(2, {ORDERS: [1], AUDIT: [0]}), answer(2), advance_ms=1000)
    first, second = h.events
    assert (first.rebalance_protocol, first.generation_id, first.reason) == ("consumer", 1, "test")
    assert (second.generation_id, second.reason) == (2, "new target assignment of epoch 2")
    assert second.revoked == {tp("orders", 0)} and second.assigned == {tp("audit", 0)}
    assert second.owned == {tp("orders", 1), tp("audit", 0)}
    assert "epoch 2" in second.summary() and "until reconciled" in second.summary()


def test_the_first_assignment_is_told_to_the_listener_even_when_empty() -> None:
    h = Harness()
    h.step(answer(1, {}), answer(1))
    assert h.calls == [("assigned", set())] and h.member.member_state() is S.STABLE


def test_a_topic_id_the_metadata_does_not_name_yet_waits_and_the_rest_goes_ahead() -> None:
    h = Harness()
    h.step(answer(1, {ORDERS: [0], LATER: [0, 1]}), answer(1))
    assert h.calls == [("assigned", {tp("orders", 0)})]
    assert owned(h.heartbeats()[-1]) == {ORDERS: [0]}
    assert h.member.member_state() is S.RECONCILING
    sent = len(h.heartbeats())
    for _ in range(3):  # polls while the metadata still does not name it: nothing again
        h.reconciler.reconcile(Timer(h.clock, 1000))
    assert h.calls == [("assigned", {tp("orders", 0)})] and len(h.heartbeats()) == sent
    snapshot = h.net.metadata.snapshot
    h.net.metadata.snapshot = MetadataSnapshot(
        brokers=snapshot.brokers, leaders={**snapshot.leaders, "later": {0: 0, 1: 0}}, version=2,
        topic_ids={**snapshot.topic_ids, "later": LATER})
    h.step(answer(1))
    assert h.calls[-1] == ("assigned", {tp("later", 0), tp("later", 1)})
    assert owned(h.heartbeats()[-1]) == {ORDERS: [0], LATER: [0, 1]}
    assert h.member.member_state() is S.STABLE


# -- the heartbeat's errors --------------------------------------------------------------------
@pytest.mark.parametrize("code", [E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID])
def test_fenced_the_partitions_are_lost_at_once_and_the_member_joins_again_with_its_id(code: ErrorCode) -> None:
    h = Harness()
    h.join({ORDERS: [0, 1]})
    h.answers.append(answer(0, error=code))
    h.clock.advance(1000)
    h.member.send_heartbeat_if_due(h.clock.monotonic_ms())
    h.net.deliver()
    assert h.subscription.assigned() == set()  # before the application polls: others may own them
    h.step(answer(3, {ORDERS: [1]}), answer(3))
    assert h.calls[1:] == [("lost", {tp("orders", 0), tp("orders", 1)}), ("assigned", {tp("orders", 1)})]
    rejoin = h.heartbeats()[-2]
    assert (rejoin.member_id, rejoin.member_epoch, owned(rejoin)) == (MEMBER_ID, 0, {})
    assert rejoin.subscribed_topic_names == ["audit", "orders"] and rejoin.rebalance_timeout_ms == 60000


@pytest.mark.parametrize("code, hint", [
    (E.UNRELEASED_INSTANCE_ID, "is still held by another member"),
    (E.UNSUPPORTED_ASSIGNOR, "group.consumer.assignors"),
    (E.INVALID_REGULAR_EXPRESSION, "RE2/J"),
    (E.GROUP_MAX_SIZE_REACHED, "group.consumer.max.size"),
    (E.GROUP_AUTHORIZATION_FAILED, "ACL"),
    (E.UNSUPPORTED_VERSION, "group_protocol='classic'"),
    (E.INVALID_REQUEST, "please report it"),
])
def test_a_refusal_is_fatal_raised_once_and_nothing_more_is_sent(code: ErrorCode, hint: str) -> None:
    h = Harness()
    h.join({ORDERS: [0]})
    h.step(answer(0, error=code, message="the broker's words"), advance_ms=1000)
    error = h.member.take_error()
    assert isinstance(error, FatalGroupError) and error.code == code
    assert hint in str(error) and "the broker's words" in str(error), str(error)
    assert h.member.take_error() is None  # once, as Java's ErrorEvent
    assert h.member.member_state() is S.FATAL and h.subscription.assigned() == set()
    sent = len(h.heartbeats())
    h.step(answer(1), advance_ms=10_000)
    assert len(h.heartbeats()) == sent


def test_a_topic_refusal_is_raised_once_and_the_member_goes_on() -> None:
    h = Harness()
    h.join({ORDERS: [0]})
    h.step(answer(0, error=E.TOPIC_AUTHORIZATION_FAILED), advance_ms=1000)
    error = h.member.take_error()
    assert isinstance(error, RequestFailedError) and error.code == E.TOPIC_AUTHORIZATION_FAILED
    assert h.member.member_state() is S.STABLE and h.subscription.assigned() == {tp("orders", 0)}
    h.step(answer(1), advance_ms=1000)
    assert h.heartbeats()[-1].member_epoch == 1 and owned(h.heartbeats()[-1]) == {ORDERS: [0]}  # stated again


@pytest.mark.parametrize("code", [E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE])
def test_a_moved_coordinator_is_looked_up_again_and_told_everything(code: ErrorCode) -> None:
    h = Harness()
    h.join({ORDERS: [0]})
    h.step(answer(0, error=code), advance_ms=1000)
    assert h.member.coordinator_unknown()
    assert h.member.ensure_coordinator_ready(Timer(h.clock, 1000))
    h.step(answer(1))  # no backoff: at once
    full = h.heartbeats()[-1]
    assert (full.member_epoch, owned(full), full.subscribed_topic_names) == (1, {ORDERS: [0]}, ["audit", "orders"])


def test_a_heartbeat_without_answer_is_retried_after_a_backoff_stating_everything() -> None:
    h = Harness()
    h.join({ORDERS: [0]})
    h.step(RequestTimedOutError("no answer"), advance_ms=1000)
    sent = len(h.heartbeats())
    h.step(advance_ms=50)
    assert len(h.heartbeats()) == sent  # backing off (retry_backoff_ms=100, 20% jitter)
    h.step(answer(1), advance_ms=100)
    assert len(h.heartbeats()) == sent + 1 and owned(h.heartbeats()[-1]) == {ORDERS: [0]}


# -- leaving, the poll timeout, the lease --------------------------------------------------------
@pytest.mark.parametrize("instance, epoch", [(None, -1), ("inst-1", -2)])
def test_leaving_sends_epoch_minus_one_or_minus_two_for_a_static_member(instance: str | None, epoch: int) -> None:
    h = Harness(config=GroupConfig("g", instance, 45000, 60000, 3000, 100, 30000))
    h.join({ORDERS: [0]})
    h.answers.append(answer(epoch))
    future = h.member.leave("closing")
    assert future is not None
    h.net.deliver()
    leave = h.heartbeats()[-1]
    assert (leave.member_epoch, leave.instance_id) == (epoch, instance)
    assert h.member.member_state() is S.UNSUBSCRIBED


def test_a_member_that_did_not_poll_in_time_leaves_loses_its_partitions_and_rejoins_on_the_next_poll() -> None:
    h = Harness()
    h.join({ORDERS: [0, 1]})
    dropped: list[str] = []
    h.answers.append(answer(-1))
    h.clock.advance(60_001)
    left, future = h.member.leave_if_poll_timed_out(h.clock.monotonic_ms(), lambda: dropped.append("before"))
    assert left and future is not None and dropped == ["before"]
    h.net.deliver()
    assert h.heartbeats()[-1].member_epoch == -1 and h.member.member_state() is S.STALE
    h.step(answer(4, {ORDERS: [1]}), answer(4))  # the next poll
    assert h.heartbeats()[-2].member_epoch == 0 and h.heartbeats()[-2].member_id == MEMBER_ID
    assert h.member.member_state() is S.STABLE


def test_partitions_not_given_up_within_the_rebalance_timeout_are_dropped() -> None:
    h = Harness()
    h.join({ORDERS: [0, 1]})
    # the broker takes orders-0 back; the application does not reconcile (it is busy)
    h.answers.append(answer(2, {ORDERS: [1]}))
    h.clock.advance(1000)
    h.member.send_heartbeat_if_due(h.clock.monotonic_ms())
    h.net.deliver()
    assert h.member.time_to_lease_end(h.clock.monotonic_ms()) == 60_000
    h.clock.advance(59_999)
    assert not h.member.check_lease(h.clock.monotonic_ms())
    h.clock.advance(1)
    assert h.member.check_lease(h.clock.monotonic_ms())
    assert h.subscription.assigned() == set()


def session_config(value: str | None, error: ErrorCode = E.NONE) -> Callable[[Any], Any]:
    R = DescribeConfigsResponse.DescribeConfigsResult

    def respond(req: Any) -> Any:
        [resource] = req.resources
        assert (resource.resource_type, resource.resource_name) == (32, "g")
        assert list(resource.configuration_keys) == ["consumer.session.timeout.ms"]
        configs = [] if value is None else [R.DescribeConfigsResourceResult(
            name="consumer.session.timeout.ms", value=value, read_only=False, config_source=5, is_sensitive=False,
            synonyms=[], config_type=3, documentation=None)]
        return DescribeConfigsResponse(version=req.version, throttle_time_ms=0, results=[R(
            error_code=int(error), error_message="not allowed" if error else "", resource_type=32, resource_name="g",
            configs=configs)])
    return respond


def test_a_member_no_heartbeat_answered_within_the_groups_session_drops_its_partitions_and_rejoins() -> None:
    h = Harness()
    h.net.on(ApiKey.DESCRIBE_CONFIGS, session_config("10000"))
    h.join({ORDERS: [0, 1]})
    h.step(answer(1), advance_ms=1000)  # the next poll asks for the group's session timeout
    assert h.member.session.timeout_ms == 10000
    proven = h.clock.monotonic_ms()  # the heartbeat sent now was the last one answered
    # the coordinator stops answering (a network partition): every heartbeat times out
    h.net.on(ApiKey.CONSUMER_GROUP_HEARTBEAT, lambda req: RequestTimedOutError("no answer"))
    while h.clock.monotonic_ms() < proven + 9_900:
        h.step(advance_ms=100)
        assert h.subscription.assigned() == {tp("orders", 0), tp("orders", 1)}
    assert h.member.time_to_lease_end(h.clock.monotonic_ms()) == 100
    h.step(advance_ms=100)
    assert h.subscription.assigned() == set() and h.member.member_state() is S.JOINING
    h.reconciler.reconcile(Timer(h.clock, 0))
    assert h.calls[-1] == ("lost", {tp("orders", 0), tp("orders", 1)})


@pytest.mark.parametrize("answer_config", [session_config(None, E.CLUSTER_AUTHORIZATION_FAILED), None])
def test_without_the_session_timeout_the_member_keeps_its_partitions_and_says_why_once(
        answer_config: Callable[[Any], Any] | None, caplog: pytest.LogCaptureFixture) -> None:
    h = Harness()
    if answer_config is not None:
        h.net.on(ApiKey.DESCRIBE_CONFIGS, answer_config)
    else:  # a broker without DescribeConfigs of groups
        h.net.on(ApiKey.DESCRIBE_CONFIGS, lambda req: FatalGroupError(E.UNSUPPORTED_VERSION, "does not serve"))
    with caplog.at_level("INFO", logger="groupclient.member"):
        h.join({ORDERS: [0]})
        h.net.on(ApiKey.CONSUMER_GROUP_HEARTBEAT, lambda req: RequestTimedOutError("no answer"))
        for _ in range(10):
            h.step(advance_ms=60_000)  # asked again every 5 minutes
    assert h.member.session.timeout_ms is None and h.member.time_to_lease_end(h.clock.monotonic_ms()) is None
    assert h.subscription.assigned() == {tp("orders", 0)} and h.member.take_error() is None
    assert caplog.text.count("the session timeout (consumer.session.timeout.ms) could not be asked") == 1


# -- commits carry the member epoch ----------------------------------------------------------------
def test_a_stale_member_epoch_commit_is_sent_again_with_the_new_epoch() -> None:
    h = Harness()
    h.join({ORDERS: [0]})

    def stale_then_ok(req: Any) -> Any:
        if len(h.commits) == 1:
            # meanwhile a heartbeat brought a new epoch (same assignment)
            h.answers.append(answer(2, {ORDERS: [0]}))
            h.clock.advance(1000)
            h.member.send_heartbeat_if_due(h.clock.monotonic_ms())
            return commit_ok(req, E.STALE_MEMBER_EPOCH)
        return commit_ok(req)

    h.commit_answer = stale_then_ok
    h.committer.commit_sync({tp("orders", 0): OffsetAndMetadata(5, "", None)}, Timer(h.clock, 10_000))
    assert [c.generation_id_or_member_epoch for c in h.commits] == [1, 2]


def test_a_commit_answered_fenced_loses_the_partitions_and_rejoins() -> None:
    h = Harness()
    h.join({ORDERS: [0]})
    h.commit_answer = lambda req: commit_ok(req, E.FENCED_MEMBER_EPOCH)
    with pytest.raises(Exception, match="FENCED_MEMBER_EPOCH"):
        h.committer.commit_sync({tp("orders", 0): OffsetAndMetadata(5, "", None)}, Timer(h.clock, 10_000))
    assert h.subscription.assigned() == set() and h.member.member_state() is S.JOINING
