"""A share group's member (groupclient/member/share_member.py) on a scripted network and a fake
clock: joining, the assignment taken at once, what each heartbeat names, fencing, leaving, and the
poll timeout, as Java's ShareMembershipManager."""

from __future__ import annotations

import random
import uuid
from typing import Any

from groupclient.clock import FakeClock, Timer
from groupclient.error_codes import ErrorCode
from groupclient.errors import FatalGroupError
from groupclient.member.coordinator_lookup import CoordinatorLookup
from groupclient.member.share_member import ShareGroupMember
from groupclient.member.states import ConsumerMemberState as S
from groupclient.member.types import GroupConfig
from groupclient.network.metadata import MetadataSnapshot
from groupclient.protocol.apis import ApiKey
from groupclient.protocol.share_group import ShareGroupHeartbeatResponse as Response

from .scripted_network import ScriptedClient
from .test_membership import find_ok

E = ErrorCode
JOBS = uuid.UUID(int=11)
MEMBER_ID = "share-member-0000000001"
CONFIG = GroupConfig("g", None, 45_000, 300_000, 5000, 100, 30_000)


def answer(epoch: int, assignment: dict[uuid.UUID, list[int]] | None = None, error: ErrorCode = E.NONE,
           interval: int = 5000, message: str | None = None) -> Any:
    A = Response.Assignment
    return Response(version=1, throttle_time_ms=0, error_code=int(error), error_message=message,
                    member_id=MEMBER_ID if not error else None, member_epoch=epoch if not error else -1,
                    heartbeat_interval_ms=interval if not error else 0,
                    assignment=None if assignment is None else A(topic_partitions=[
                        A.TopicPartitions(topic_id=t, partitions=p) for t, p in assignment.items()]))


class Harness:
    """A share member as ShareConsumer builds it."""

    def __init__(self, config: GroupConfig = CONFIG, rack: str | None = "r1") -> None:
        self.clock = FakeClock()
        self.net = ScriptedClient(self.clock)
        self.net.metadata.snapshot = MetadataSnapshot(
            brokers={0: ("127.0.0.1", 9092)}, leaders={"jobs": {0: 0, 1: 0}}, version=1, topic_ids={"jobs": JOBS})
        self.net.on(ApiKey.FIND_COORDINATOR, find_ok)
        self.answers: list[Any] = []
        self.net.on(ApiKey.SHARE_GROUP_HEARTBEAT, lambda req: self.answers.pop(0) if self.answers else None)
        self.member = ShareGroupMember(self.net, self.clock, config,
                                       CoordinatorLookup(self.net, "g", config.retry_backoff_ms, random.Random(0)),
                                       MEMBER_ID, rack, random.Random(0))
        self.member.subscribe(frozenset({"jobs"}))
        assert self.member.ensure_coordinator_ready(Timer(self.clock, 1000))

    def heartbeats(self) -> list[Any]:
        return self.net.requests(ApiKey.SHARE_GROUP_HEARTBEAT)

    def step(self, *answers: Any, advance_ms: int = 0, poll: bool = True) -> None:
        """What the heartbeat thread does in one turn (and a poll() before it, with ``poll``)."""
        self.answers.extend(answers)
        self.clock.advance(advance_ms)
        now = self.clock.monotonic_ms()
        if poll:
            self.member.poll_heartbeat(now)
        left, _ = self.member.leave_if_poll_timed_out(now, lambda: None)
        if not left:
            if self.member.coordinator_unknown():
                self.member.ensure_coordinator_ready(Timer(self.clock, 1000))
            self.member.send_heartbeat_if_due(now)
        self.net.deliver()

    def join(self, assignment: dict[uuid.UUID, list[int]]) -> None:
        self.step(answer(1, assignment))
        assert self.member.member_state() is S.STABLE


def test_a_member_joins_names_its_subscription_and_rack_once_and_takes_its_assignment_at_once() -> None:
    h = Harness()
    h.join({JOBS: [0, 1]})
    [join] = h.heartbeats()
    assert (join.member_id, join.member_epoch, join.rack_id, join.subscribed_topic_names) == (
        MEMBER_ID, 0, "r1", ["jobs"])
    assert h.member.assignment()[1] == {JOBS: frozenset({0, 1})}
    h.step(answer(1), advance_ms=5000)
    beat = h.heartbeats()[-1]
    assert (beat.member_epoch, beat.rack_id, beat.subscribed_topic_names) == (1, None, None)  # nothing changed
    assert h.member.assignment()[1] == {JOBS: frozenset({0, 1})}  # no assignment in the answer: no change


def test_heartbeats_follow_the_brokers_interval_and_come_faster_while_the_assignment_settles() -> None:
    h = Harness()
    h.step(answer(1))  # joined with no partition yet (Kafka initialises them first)
    assert h.member.time_to_next_heartbeat(h.clock.monotonic_ms()) == 500  # a tenth of 5 s
    for _ in range(30):
        h.step(answer(1), advance_ms=500)
    assert h.member.time_to_next_heartbeat(h.clock.monotonic_ms()) == 5000  # settled: the interval


def test_a_new_subscription_is_named_in_the_next_heartbeat_at_once() -> None:
    h = Harness()
    h.join({JOBS: [0]})
    h.member.subscribe(frozenset({"jobs", "more"}))
    h.step(answer(1))
    assert h.heartbeats()[-1].subscribed_topic_names == ["jobs", "more"]


def test_a_fenced_member_joins_again_with_its_id_at_epoch_zero() -> None:
    h = Harness()
    h.join({JOBS: [0]})
    h.step(answer(0, error=E.FENCED_MEMBER_EPOCH), advance_ms=5000)
    assert h.member.member_state() is S.JOINING and h.member.assignment()[1] == {}
    h.step(answer(3, {JOBS: [1]}))
    rejoin = h.heartbeats()[-1]
    assert (rejoin.member_id, rejoin.member_epoch, rejoin.subscribed_topic_names) == (MEMBER_ID, 0, ["jobs"])
    assert h.member.member_state() is S.STABLE and h.member.assignment()[1] == {JOBS: frozenset({1})}


def test_a_broker_without_share_groups_is_a_refusal_that_says_so() -> None:
    h = Harness()
    h.step(answer(0, error=E.UNSUPPORTED_VERSION))
    error = h.member.fatal_error
    assert isinstance(error, FatalGroupError) and "does not serve share groups" in str(error)
    assert h.member.member_state() is S.FATAL
    sent = len(h.heartbeats())
    h.step(advance_ms=60_000)
    assert len(h.heartbeats()) == sent  # nothing more


def test_leaving_sends_epoch_minus_one_and_the_answer_changes_nothing() -> None:
    h = Harness()
    h.join({JOBS: [0]})
    assert h.member.leave("closing") is not None
    h.net.deliver()
    assert h.heartbeats()[-1].member_epoch == -1
    assert h.member.member_state() is S.UNSUBSCRIBED and h.member.assignment()[1] == {}


def test_a_member_that_stops_polling_leaves_and_joins_again_on_its_next_poll() -> None:
    h = Harness(GroupConfig("g", None, 45_000, 10_000, 5000, 100, 30_000))
    h.join({JOBS: [0]})
    for _ in range(3):
        h.step(answer(1), advance_ms=4000, poll=False)
    assert h.heartbeats()[-1].member_epoch == -1  # the poll timeout ran out: it left
    assert h.member.member_state() is S.STALE and h.member.assignment()[1] == {}
    h.step(answer(4, {JOBS: [0]}))
    assert h.heartbeats()[-1].member_epoch == 0 and h.member.member_state() is S.STABLE
