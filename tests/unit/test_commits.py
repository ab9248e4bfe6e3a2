"""OffsetCommit answers, through the error table, with a scripted network and a fake clock."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest
from kafka.protocol.consumer.group import OffsetCommitResponse
from kafka.structs import OffsetAndMetadata, TopicPartition

from groupclient.clock import FakeClock, Timer
from groupclient.consumer.subscription import SubscriptionState
from groupclient.errors import (
    CommitFailedError, FatalGroupError, KafkaTimeoutError, RebalanceInProgressError, RequestFailedError,
)
from groupclient.consumer.commits import OffsetCommitter
from groupclient.member.states import ClassicMemberState
from groupclient.member.types import Generation
from groupclient.protocol.apis import ApiKey
from groupclient.error_codes import ErrorCode

from .group_parts import build_group
from .scripted_network import ScriptedClient
from .test_membership import find_ok

E = ErrorCode
TP = TopicPartition("t", 0)
OFFSETS = {TP: OffsetAndMetadata(5, "", -1)}


def commit_answer(*errors: ErrorCode) -> Any:
    answers = iter(errors)

    def respond(req: Any) -> Any:
        code = next(answers)
        T = OffsetCommitResponse.OffsetCommitResponseTopic
        return OffsetCommitResponse(version=req.version, throttle_time_ms=0, topics=[
            T(name="t", partitions=[T.OffsetCommitResponsePartition(partition_index=0, error_code=int(code))])])
    return respond


@pytest.fixture
def stable() -> tuple[OffsetCommitter, ScriptedClient, FakeClock]:
    clock = FakeClock()
    net = ScriptedClient(clock)
    net.on(ApiKey.FIND_COORDINATOR, find_ok)
    subscription = SubscriptionState("earliest")
    subscription.subscribe({"t"}, None)
    parts = build_group(net, clock, subscription)
    coordinator, membership = parts.committer, parts.member
    assert membership.ensure_coordinator_ready(Timer(clock, 1000))
    membership.generation = Generation(3, "m-1", "range")
    membership.state = ClassicMemberState.STABLE
    membership.rejoin_reason = None
    return coordinator, net, clock


def test_commit_carries_generation_and_member(stable: Any) -> None:
    coordinator, net, clock = stable
    net.on(ApiKey.OFFSET_COMMIT, commit_answer(E.NONE))
    coordinator.commit_sync(OFFSETS, Timer(clock, 1000))
    req = net.requests(ApiKey.OFFSET_COMMIT)[0]
    assert (req.generation_id_or_member_epoch, req.member_id) == (3, "m-1")
    assert req.topics[0].partitions[0].committed_offset == 5


def test_retriable_errors_are_retried_within_the_timeout(stable: Any) -> None:
    coordinator, net, clock = stable
    net.on(ApiKey.OFFSET_COMMIT, commit_answer(E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR, E.NONE))
    coordinator.commit_sync(OFFSETS, Timer(clock, 5000))
    assert len(net.requests(ApiKey.OFFSET_COMMIT)) == 3
    assert len(net.requests(ApiKey.FIND_COORDINATOR)) == 2  # NOT_COORDINATOR: looked up again


@pytest.mark.parametrize("error, state, member_id", [
    (E.REBALANCE_IN_PROGRESS, ClassicMemberState.STABLE, "m-1"),
    (E.ILLEGAL_GENERATION, ClassicMemberState.UNJOINED, "m-1"),
    (E.UNKNOWN_MEMBER_ID, ClassicMemberState.UNJOINED, ""),
])
def test_group_errors_fail_the_commit_and_ask_for_a_rejoin(stable: Any, error: ErrorCode,
                                                          state: ClassicMemberState, member_id: str) -> None:
    coordinator, net, clock = stable
    net.on(ApiKey.OFFSET_COMMIT, commit_answer(error))
    with pytest.raises(CommitFailedError, match="rebalanc"):
        coordinator.commit_sync(OFFSETS, Timer(clock, 5000))
    membership = coordinator.member
    assert membership.state is state and membership.generation.member_id == member_id
    assert membership.rejoin_needed()


def test_a_refused_commit_is_raised_and_the_member_goes_on(stable: Any) -> None:
    coordinator, net, clock = stable
    net.on(ApiKey.OFFSET_COMMIT, commit_answer(E.OFFSET_METADATA_TOO_LARGE))
    with pytest.raises(RequestFailedError, match="OFFSET_METADATA_TOO_LARGE"):
        coordinator.commit_sync(OFFSETS, Timer(clock, 5000))
    assert coordinator.member.fatal_error is None


def test_a_fatal_commit_error_is_kept_for_poll(stable: Any) -> None:
    coordinator, net, clock = stable
    net.on(ApiKey.OFFSET_COMMIT, commit_answer(E.GROUP_AUTHORIZATION_FAILED))
    with pytest.raises(FatalGroupError):
        coordinator.commit_sync(OFFSETS, Timer(clock, 5000))
    assert isinstance(coordinator.member.fatal_error, FatalGroupError)


def test_rebalance_in_progress_on_commit_is_its_own_error(stable: Any) -> None:
    coordinator, net, clock = stable
    net.on(ApiKey.OFFSET_COMMIT, commit_answer(E.REBALANCE_IN_PROGRESS))
    with pytest.raises(RebalanceInProgressError):
        coordinator.commit_sync(OFFSETS, Timer(clock, 5000))


def test_commit_times_out_when_never_answered(stable: Any) -> None:
    coordinator, net, clock = stable
    net.on(ApiKey.OFFSET_COMMIT, lambda req: None)
    with pytest.raises(KafkaTimeoutError):
        coordinator.commit_sync(OFFSETS, Timer(clock, 2000))


def test_commit_while_rebalancing_fails_without_a_request(stable: Any) -> None:
    coordinator, net, clock = stable
    coordinator.member.state = ClassicMemberState.PREPARING_REBALANCE
    with pytest.raises(CommitFailedError):
        coordinator.commit_sync(OFFSETS, Timer(clock, 1000))
    assert not net.requests(ApiKey.OFFSET_COMMIT)


def test_async_commit_callbacks_wait_for_the_application_thread(stable: Any) -> None:
    coordinator, net, clock = stable
    net.on(ApiKey.OFFSET_COMMIT, commit_answer(E.NONE))
    calls: list[Any] = []
    coordinator.commit_async(OFFSETS, lambda offsets, error: calls.append((offsets, error)))
    net.deliver()
    assert calls == []  # completed, but the callback waits for poll()
    coordinator.invoke_completed_commit_callbacks()
    assert calls == [(OFFSETS, None)]


TOPIC_ID = uuid.UUID("00000000-0000-4000-8000-0000000000aa")


def by_id_answer(*errors: ErrorCode) -> Any:
    """OffsetCommit answers as v10 gives them: the topic by id, no name."""
    answers = iter(errors)

    def respond(req: Any) -> Any:
        assert req.version == 10 and [t.topic_id for t in req.topics] == [TOPIC_ID], req
        T = OffsetCommitResponse.OffsetCommitResponseTopic
        return OffsetCommitResponse(version=req.version, throttle_time_ms=0, topics=[
            T(name="", topic_id=TOPIC_ID, partitions=[
                T.OffsetCommitResponsePartition(partition_index=0, error_code=int(next(answers)))])])
    return respond


def test_a_commit_names_topics_by_id_only_when_the_metadata_knows_every_id(stable: Any) -> None:
    coordinator, net, clock = stable
    net.on(ApiKey.OFFSET_COMMIT, commit_answer(E.NONE))
    coordinator.commit_sync(OFFSETS, Timer(clock, 1000))  # no topic ids known: v9, by name
    first = net.requests(ApiKey.OFFSET_COMMIT)[0]
    assert (first.version, first.topics[0].name) == (9, "t")
    net.metadata.snapshot = replace(net.metadata.snapshot, topic_ids={"t": TOPIC_ID})
    net.on(ApiKey.OFFSET_COMMIT, by_id_answer(E.NONE))
    coordinator.commit_sync(OFFSETS, Timer(clock, 1000))
    assert net.requests(ApiKey.OFFSET_COMMIT)[1].version == 10
    other = {**OFFSETS, TopicPartition("u", 0): OffsetAndMetadata(1, "", -1)}  # "u" has no id known
    net.on(ApiKey.OFFSET_COMMIT, commit_answer(E.NONE))
    coordinator.commit_sync(other, Timer(clock, 1000))
    assert net.requests(ApiKey.OFFSET_COMMIT)[2].version == 9


def test_an_unknown_topic_id_refreshes_the_metadata_and_is_retried_and_named(stable: Any) -> None:
    coordinator, net, clock = stable
    net.metadata.snapshot = replace(net.metadata.snapshot, topic_ids={"t": TOPIC_ID})
    net.on(ApiKey.OFFSET_COMMIT, by_id_answer(E.UNKNOWN_TOPIC_ID, E.NONE))
    asked = net.metadata.update_requests()
    coordinator.commit_sync(OFFSETS, Timer(clock, 5000))
    assert len(net.requests(ApiKey.OFFSET_COMMIT)) == 2
    assert net.metadata.update_requests() > asked
    net.on(ApiKey.OFFSET_COMMIT, by_id_answer(*[E.UNKNOWN_TOPIC_ID] * 100))
    with pytest.raises(KafkaTimeoutError, match=r"t-0.*UNKNOWN_TOPIC_ID"):  # by name, not by id
        coordinator.commit_sync(OFFSETS, Timer(clock, 1000))
