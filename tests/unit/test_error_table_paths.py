"""Every error code on every API the consumer speaks, through the consumer's own path for that
API, against what the error table (``action_for``) says to do about it.

For each (API, code) the path runs on a scripted network whose first answer of that API carries
the code and whose later answers succeed; what the path then did (what it raised, whether it is
fatal, what it sent next, the member's state) must be what the code's action means on that API.
Every code Kafka has, plus one newer than this client, on each of: FindCoordinator, JoinGroup,
SyncGroup, Heartbeat, ConsumerGroupHeartbeat, ShareGroupHeartbeat, LeaveGroup, OffsetCommit, OffsetFetch (the group's code and a partition's),
Fetch, ListOffsets and Metadata.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from kafka.protocol.consumer.fetch import FetchResponse
from kafka.protocol.consumer.group import LeaveGroupResponse, OffsetCommitResponse, OffsetFetchResponse
from kafka.protocol.consumer.offsets import ListOffsetsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorResponse
from kafka.structs import OffsetAndMetadata, TopicPartition

from groupclient import GroupConsumer
from groupclient.clock import FakeClock, Timer
from groupclient.consumer.fetcher import FetchConfig, Fetcher
from groupclient.consumer.subscription import SubscriptionState
from groupclient.error_codes import ErrorCode
from groupclient.errors import (
    BrokerError, CommitFailedError, FatalGroupError, RebalanceInProgressError, RequestFailedError,
)
from groupclient.member.states import ClassicMemberState
from groupclient.member.types import Generation
from groupclient.protocol.apis import ApiKey
from groupclient.protocol.consumer_protocol import Assignment, encode_assignment
from groupclient.protocol.error_table import Action, action_for

from .group_parts import CONFIG, GroupParts, build_group
from .scripted_network import ScriptedClient
from .test_interleavings import metadata_answer
from .test_membership import find_ok, heartbeat_answer, join_answer, sync_answer
from .test_record_decoding import batch

CODES = [int(c) for c in ErrorCode] + [999]  # and one newer than this client
TP = TopicPartition("t", 0)
A = Action


@dataclass
class Observed:
    raised: BaseException | None = None
    fatal: BaseException | None = None
    sent: list[int] = field(default_factory=list)  # API keys sent after the first answer
    extra: dict[str, Any] = field(default_factory=dict)


def first_then(code: int, failing: Callable[[Any, int], Any], ok: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A responder: the first request answered with ``code``, the rest with success."""
    answered = [False]

    def respond(request: Any) -> Any:
        if answered[0]:
            return ok(request)
        answered[0] = True
        return failing(request, code)
    return respond


def after_first(net: ScriptedClient, api: int) -> list[int]:
    keys = [s.request.API_KEY for s in net.sent]
    return keys[keys.index(api) + 1:]


def run(path: Callable[[], Any], observed: Observed) -> Observed:
    try:
        path()
    except (BrokerError, CommitFailedError) as exc:
        observed.raised = exc
    return observed


def group(clock: FakeClock, *, stable: bool) -> tuple[GroupParts, ScriptedClient]:
    net = ScriptedClient(clock)
    net.on(ApiKey.FIND_COORDINATOR, find_ok)
    subscription = SubscriptionState("earliest")
    subscription.subscribe({"t"}, None)
    parts = build_group(net, clock, subscription)
    if stable:
        assert parts.member.ensure_coordinator_ready(Timer(clock, 1000))
        member = parts.member
        member.generation, member.state, member.rejoin_reason = Generation(4, "m-9", "range"), ClassicMemberState.STABLE, None
        member.heartbeat.joined(clock.monotonic_ms())
        parts.subscription.set_group_assignment({TP})
    else:
        parts.member.generation = Generation(4, "m-9", "range")  # rejoining a generation
    return parts, net


# -- the paths ---------------------------------------------------------------------------------
def find_coordinator(code: int) -> Observed:
    clock = FakeClock()
    parts, net = group(clock, stable=False)

    def failing(request: Any, code: int) -> Any:
        C = FindCoordinatorResponse.Coordinator
        return FindCoordinatorResponse(version=request.version, throttle_time_ms=0, coordinators=[
            C(key="g", node_id=-1, host="", port=-1, error_code=code, error_message=None)])

    net.on(ApiKey.FIND_COORDINATOR, first_then(code, failing, find_ok))
    observed = run(lambda: parts.member.ensure_coordinator_ready(Timer(clock, 5000)), Observed())
    observed.fatal = parts.member.fatal_error
    observed.sent = after_first(net, ApiKey.FIND_COORDINATOR)
    observed.extra["known"] = not parts.member.coordinator_unknown()
    return observed


def joining(api: int, code: int) -> Observed:
    clock = FakeClock()
    parts, net = group(clock, stable=False)
    follower = lambda request: join_answer(request, member=request.member_id or "m-new", leader="m-1")  # noqa: E731
    assignment = encode_assignment(Assignment([TP]))
    synced = lambda request: sync_answer(request, assignment=assignment)  # noqa: E731
    if api == ApiKey.JOIN_GROUP:
        net.on(ApiKey.JOIN_GROUP, first_then(code, lambda r, c: join_answer(r, ErrorCode(c) if c in ErrorCode._value2member_map_
                                                                            else c, member="m-given"), follower))  # type: ignore[arg-type]
        net.on(ApiKey.SYNC_GROUP, synced)
    else:
        net.on(ApiKey.JOIN_GROUP, follower)
        net.on(ApiKey.SYNC_GROUP, first_then(code, lambda r, c: sync_answer(r, c) if c else synced(r), synced))  # type: ignore[arg-type]
    started = clock.monotonic_ms()
    observed = run(lambda: parts.join.join_group_if_needed(Timer(clock, 5000)), Observed())
    if observed.raised is not None and not isinstance(observed.raised, FatalGroupError):
        observed.extra["next poll joined"] = parts.join.join_group_if_needed(Timer(clock, 5000))
    observed.fatal = parts.member.fatal_error
    observed.sent = after_first(net, api)
    observed.extra["joins"] = [r.member_id for r in net.requests(ApiKey.JOIN_GROUP)]
    observed.extra["elapsed"] = clock.monotonic_ms() - started
    observed.extra["assigned"] = parts.subscription.assigned()
    return observed


def heartbeat(code: int) -> Observed:
    clock = FakeClock()
    parts, net = group(clock, stable=True)
    net.on(ApiKey.HEARTBEAT, heartbeat_answer(code))  # type: ignore[arg-type]
    member = parts.member
    future = member.send_heartbeat()
    net.deliver()
    observed = Observed(raised=future.exception, fatal=member.fatal_error)
    observed.extra.update(state=member.state, member_id=member.generation.member_id,
                          generation=member.generation.generation_id, rejoin=member.rejoin_needed(),
                          known=not member.coordinator_unknown(), owned=parts.subscription.assigned(),
                          next_in=member.time_to_next_heartbeat(clock.monotonic_ms()))
    return observed


def leave(code: int) -> Observed:
    clock = FakeClock()
    parts, net = group(clock, stable=True)
    net.on(ApiKey.LEAVE_GROUP, lambda r: LeaveGroupResponse(version=r.version, throttle_time_ms=0, error_code=code,
                                                             members=[]))
    future = parts.member.maybe_leave_group("closing")
    net.deliver()
    assert future is not None
    observed = Observed(raised=future.exception, fatal=parts.member.fatal_error, sent=after_first(net, ApiKey.LEAVE_GROUP))
    observed.extra.update(generation=parts.member.generation.generation_id, known=not parts.member.coordinator_unknown())
    return observed


def commit(code: int) -> Observed:
    clock = FakeClock()
    parts, net = group(clock, stable=True)

    def answer(request: Any, code: int) -> Any:
        T = OffsetCommitResponse.OffsetCommitResponseTopic
        return OffsetCommitResponse(version=request.version, throttle_time_ms=0, topics=[
            T(name="t", partitions=[T.OffsetCommitResponsePartition(partition_index=0, error_code=code)])])

    net.on(ApiKey.OFFSET_COMMIT, first_then(code, answer, lambda r: answer(r, 0)))
    observed = run(lambda: parts.committer.commit_sync({TP: OffsetAndMetadata(5, "", -1)}, Timer(clock, 5000)),
                   Observed())
    member = parts.member
    observed.fatal = member.fatal_error
    observed.sent = after_first(net, ApiKey.OFFSET_COMMIT)
    observed.extra.update(state=member.state, member_id=member.generation.member_id, rejoin=member.rejoin_needed(),
                          generation=member.generation.generation_id, owned=parts.subscription.assigned())
    return observed


def offset_fetch(code: int, partition_level: bool) -> Observed:
    clock = FakeClock()
    parts, net = group(clock, stable=True)

    def answer(request: Any, code: int) -> Any:
        G = OffsetFetchResponse.OffsetFetchResponseGroup
        T = G.OffsetFetchResponseTopics
        p = T.OffsetFetchResponsePartitions(partition_index=0, committed_offset=7, committed_leader_epoch=-1,
                                            metadata="", error_code=code if partition_level else 0)
        return OffsetFetchResponse(version=request.version, throttle_time_ms=0, groups=[G(
            group_id="g", topics=[T(name="t", partitions=[p])], error_code=0 if partition_level else code)])

    net.on(ApiKey.OFFSET_FETCH, first_then(code, answer, lambda r: answer(r, 0)))
    found: list[Any] = []
    observed = run(lambda: found.append(parts.committer.fetch_committed({TP}, Timer(clock, 5000))), Observed())
    observed.fatal = parts.member.fatal_error
    observed.sent = after_first(net, ApiKey.OFFSET_FETCH)
    observed.extra["result"] = found[0] if found else None
    return observed


def fetcher_world() -> tuple[ScriptedClient, SubscriptionState, Fetcher]:
    from dataclasses import replace

    client = ScriptedClient(FakeClock())
    client.metadata.snapshot = replace(client.metadata.snapshot, leaders={"t": {0: 0}}, version=1)
    subscription = SubscriptionState("earliest")
    subscription.assign_from_user({TP})
    subscription.seek(TP, 0)
    config = FetchConfig(1, 500, 52428800, 1048576, 0, True, None, None)
    return client, subscription, Fetcher(client, subscription, config)


def fetch(code: int) -> Observed:
    client, subscription, fetcher = fetcher_world()
    Response, Topic = FetchResponse, FetchResponse.FetchableTopicResponse

    def answer(request: Any, code: int) -> Any:
        at = request.topics[0].partitions[0].fetch_offset  # three records at 0, then the end of the log
        return Response(version=request.version, throttle_time_ms=0, error_code=0, session_id=0, responses=[
            Topic(topic="t", partitions=[Topic.PartitionData(
                partition_index=0, error_code=code, high_watermark=3, last_stable_offset=3, log_start_offset=0,
                aborted_transactions=None, preferred_read_replica=-1,
                records=None if code or at else batch(0, [(None, b"v", [])] * 3))])])

    client.on(ApiKey.FETCH, first_then(code, answer, lambda r: answer(r, 0)))
    before = client.metadata.update_requests()
    fetcher.send_fetches()
    client.deliver()
    observed = Observed(fatal=fetcher.fatal_error)
    records: dict[Any, Any] = {}
    observed = run(lambda: records.update(fetcher.fetched_records(100)), observed)
    observed.extra.update(metadata_requested=client.metadata.update_requests() > before,
                          resets=subscription.resets_needed(), records=bool(records))
    fetcher.send_fetches()  # the consumer goes on: fetched again
    client.deliver()
    observed.extra["then"] = [r.offset for r in fetcher.fetched_records(100).get(TP, [])] \
        if not subscription.resets_needed() else "reset"
    observed.sent = after_first(client, ApiKey.FETCH)
    return observed


def list_offsets(code: int) -> Observed:
    client, subscription, fetcher = fetcher_world()
    Response = ListOffsetsResponse
    Topic = Response.ListOffsetsTopicResponse

    def answer(request: Any, code: int) -> Any:
        return Response(version=request.version, throttle_time_ms=0, topics=[Topic(name="t", partitions=[
            Topic.ListOffsetsPartitionResponse(partition_index=0, error_code=code, old_style_offsets=[],
                                               timestamp=-1, offset=0 if code else 42, leader_epoch=-1)])])

    client.on(ApiKey.LIST_OFFSETS, first_then(code, answer, lambda r: answer(r, 0)))
    before = client.metadata.update_requests()
    found: dict[Any, int] = {}
    observed = run(lambda: found.update(fetcher.list_offsets({TP: -2}, Timer(client.clock, 5000))), Observed())
    observed.fatal = fetcher.fatal_error
    observed.sent = after_first(client, ApiKey.LIST_OFFSETS)
    observed.extra.update(result=found, metadata_requested=client.metadata.update_requests() > before)
    return observed


def metadata(code: int) -> Observed:
    consumer = GroupConsumer(bootstrap_servers="127.0.0.1:1", api_version=(4, 1), group_id="g", enable_auto_commit=False)
    try:
        consumer._subscription.subscribe({"t", "other"}, None)
        answer = metadata_answer({"t": 1, "other": 1})
        for topic in answer.topics:
            if topic.name == "t":
                topic.error_code = code
        consumer._client.metadata.update(answer, 0, True, 0)
        observed = run(consumer._raise_metadata_errors, Observed())
        observed.extra["again"] = run(consumer._raise_metadata_errors, Observed()).raised  # once per answer
        observed.extra["retry_soon"] = consumer._client.metadata.needs_update(1_200)
        observed.extra["topics"] = consumer._client.metadata.topics()
        return observed
    finally:
        consumer.close()


# -- what each action means on each path ---------------------------------------------------------
def raised_code(observed: Observed) -> int | None:
    return int(observed.raised.errno) if isinstance(observed.raised, BrokerError) else None


def check(api: ApiKey, code: int, action: Action, o: Observed) -> None:
    """Asserts (with the case in the message) that the path did what ``action`` means."""
    x = o.extra
    if api == ApiKey.FIND_COORDINATOR:
        if action is A.NONE:
            assert x["known"] and o.sent == [] and o.raised is None
        elif action is A.FATAL:
            assert isinstance(o.raised, FatalGroupError) and raised_code(o) == code and o.fatal is o.raised
        else:
            assert action is A.RETRY, action  # the API's default: back off, ask again
            assert x["known"] and o.sent == [ApiKey.FIND_COORDINATOR] and o.raised is None and o.fatal is None
    elif api in (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP):
        joins = x["joins"]
        if action is A.NONE:
            assert o.raised is None and x["assigned"] == {TP} and len(joins) == 1
        elif action is A.FATAL:
            assert isinstance(o.raised, FatalGroupError) and raised_code(o) == code and o.fatal is o.raised
        elif action is A.RAISE:
            assert isinstance(o.raised, RequestFailedError) and raised_code(o) == code and o.fatal is None
            assert x["next poll joined"] and x["assigned"] == {TP}  # the consumer goes on
        else:
            assert o.raised is None and o.fatal is None and x["assigned"] == {TP} and len(joins) == 2, joins
            if action is A.REDISCOVER:
                assert ApiKey.FIND_COORDINATOR in o.sent
            elif action is A.RETRY:
                assert x["elapsed"] >= CONFIG.retry_backoff_ms and joins[1] == "m-9"
            else:
                assert x["elapsed"] < CONFIG.retry_backoff_ms  # rejoined at once
                expected = {A.REJOIN: "m-9", A.RESET_GENERATION: "m-9", A.RESET_MEMBER: "",
                            A.RETRY_WITH_MEMBER_ID: "m-given"}[action]
                assert joins[1] == expected, (joins, expected)
    elif api == ApiKey.HEARTBEAT:
        if action is A.NONE:
            assert o.raised is None and x["state"] is ClassicMemberState.STABLE and not x["rejoin"]
        elif action is A.REJOIN:
            assert x["state"] is ClassicMemberState.STABLE and x["rejoin"] and x["generation"] == 4 and x["owned"] == {TP}
        elif action in (A.RESET_MEMBER, A.RESET_GENERATION):
            assert x["state"] is ClassicMemberState.UNJOINED and x["generation"] == -1 and x["owned"] == set()
            assert x["member_id"] == ("" if action is A.RESET_MEMBER else "m-9")
        elif action is A.REDISCOVER:
            assert not x["known"] and x["state"] is ClassicMemberState.STABLE
        elif action is A.FATAL:
            assert isinstance(o.fatal, FatalGroupError) and int(o.fatal.errno) == code
        else:
            assert action is A.RETRY, action
            assert x["state"] is ClassicMemberState.STABLE and x["next_in"] <= CONFIG.retry_backoff_ms and o.fatal is None
    elif api == ApiKey.LEAVE_GROUP:
        # gone either way: a code is only reported (Java logs it); never retried, never fatal
        assert x["generation"] == -1 and o.sent == [] and o.fatal is None
        if action is A.NONE:
            assert o.raised is None
        else:
            assert isinstance(o.raised, BrokerError) and int(o.raised.errno) == code
            assert x["known"] is (action is not A.REDISCOVER)
    elif api == ApiKey.OFFSET_COMMIT:
        if action is A.NONE:
            assert o.raised is None and o.sent == []
        elif action is A.RETRY:
            assert o.raised is None and o.sent == [ApiKey.OFFSET_COMMIT]
        elif action is A.REDISCOVER:
            assert o.raised is None and o.sent == [ApiKey.FIND_COORDINATOR, ApiKey.OFFSET_COMMIT]
        elif action is A.REJOIN:
            assert isinstance(o.raised, RebalanceInProgressError) and x["rejoin"] and x["generation"] == 4
        elif action in (A.RESET_MEMBER, A.RESET_GENERATION):
            assert isinstance(o.raised, CommitFailedError) and x["generation"] == -1 and x["owned"] == set()
            assert x["member_id"] == ("" if action is A.RESET_MEMBER else "m-9")
        elif action is A.FATAL:
            assert isinstance(o.raised, FatalGroupError) and raised_code(o) == code and o.fatal is o.raised
        else:
            assert action is A.RAISE, action
            assert isinstance(o.raised, RequestFailedError) and raised_code(o) == code and o.fatal is None
            assert x["state"] is ClassicMemberState.STABLE
    elif api == ApiKey.OFFSET_FETCH:
        if action is A.NONE:
            assert o.raised is None and x["result"] == {TP: OffsetAndMetadata(7, "", -1)}
        elif action in (A.RETRY, A.REDISCOVER):
            assert o.raised is None and x["result"] == {TP: OffsetAndMetadata(7, "", -1)}
            assert o.sent == ([ApiKey.OFFSET_FETCH] if action is A.RETRY else [ApiKey.FIND_COORDINATOR, ApiKey.OFFSET_FETCH])
        elif action is A.FATAL:
            assert isinstance(o.raised, FatalGroupError) and raised_code(o) == code and o.fatal is o.raised
        else:
            assert action is A.RAISE, action
            assert isinstance(o.raised, RequestFailedError) and raised_code(o) == code and o.fatal is None
    elif api == ApiKey.FETCH:
        assert o.fatal is None
        if action is A.NONE:
            assert x["records"] and o.raised is None
        elif action is A.RAISE:
            assert isinstance(o.raised, RequestFailedError) and raised_code(o) == code
            assert x["then"] == [0, 1, 2]  # raised once; the consumer goes on
        else:
            assert o.raised is None and not x["records"], o.raised
            if action is A.RESET_OFFSET:
                assert x["resets"] == {TP: "earliest"}
            else:
                assert action in (A.RETRY, A.REFRESH_METADATA), action
                assert x["metadata_requested"] is (action is A.REFRESH_METADATA) and x["then"] == [0, 1, 2]
    elif api == ApiKey.LIST_OFFSETS:
        assert o.fatal is None
        if action in (A.NONE, A.RETRY, A.REFRESH_METADATA):
            assert o.raised is None and x["result"] == {TP: 42}
            assert o.sent == ([] if action is A.NONE else [ApiKey.LIST_OFFSETS])
            assert x["metadata_requested"] is (action is A.REFRESH_METADATA)
        else:
            assert action is A.RAISE, action
            assert isinstance(o.raised, RequestFailedError) and raised_code(o) == code
    elif api == ApiKey.METADATA:
        if action is A.NONE:
            assert o.raised is None and x["topics"] == {"t", "other"}
        elif action is A.RAISE:
            assert isinstance(o.raised, RequestFailedError) and raised_code(o) == code and x["again"] is None
        else:
            assert action is A.REFRESH_METADATA, action
            assert o.raised is None and x["retry_soon"] and "t" not in x["topics"]
    elif api == ApiKey.CONSUMER_GROUP_HEARTBEAT:
        check_consumer_group_heartbeat(code, action, o)
    elif api == ApiKey.SHARE_GROUP_HEARTBEAT:
        check_share_group_heartbeat(code, action, o)
    elif api == ApiKey.SHARE_FETCH:
        check_share_fetch(code, action, o)
    elif api == ApiKey.SHARE_ACKNOWLEDGE:
        check_share_acknowledge(code, action, o)
    else:
        raise AssertionError(f"no path for {api!r}")


def consumer_group_heartbeat(code: int) -> Observed:
    """A stable consumer-protocol member's heartbeat answered ``code``, then the next one."""
    from .test_consumer_member import ORDERS, Harness, answer

    h = Harness()
    h.join({ORDERS: [0]})
    sent = len(h.heartbeats())
    h.step(answer(1) if code == 0 else answer(0, error=code), advance_ms=1000)  # type: ignore[arg-type]
    observed = Observed(fatal=h.member.fatal_error, raised=h.member.take_error())
    x = observed.extra
    x["state"], x["owned"] = h.member.member_state().value, h.subscription.assigned()
    x["coordinator_unknown"] = h.member.coordinator_unknown()
    h.step(answer(1, {ORDERS: [0]}), answer(1), advance_ms=1000)
    x["next"] = [(r.member_epoch, r.topic_partitions is not None) for r in h.heartbeats()[sent + 1:]]
    return observed


def check_consumer_group_heartbeat(code: int, action: Action, o: Observed) -> None:
    x = o.extra
    owns = {TopicPartition("orders", 0)}
    if action is A.FATAL:
        assert isinstance(o.raised, FatalGroupError) and raised_code(o) == code and o.fatal is o.raised
        assert x["state"] == "fatal" and x["owned"] == set() and x["next"] == []  # nothing more is sent
        return
    assert o.fatal is None
    if action is A.NONE:
        assert o.raised is None and x["state"] == "stable" and x["owned"] == owns
        assert x["next"] == [(1, False)]  # only what changed: nothing
    elif action is A.RESET_GENERATION:
        assert o.raised is None and x["state"] == "joining" and x["owned"] == set()
        assert x["next"][0] == (0, True)  # joins again at epoch 0, stating everything
    elif action is A.RAISE:
        assert isinstance(o.raised, RequestFailedError) and raised_code(o) == code
        assert x["state"] == "stable" and x["owned"] == owns and x["next"][0] == (1, True)
    else:
        assert action in (A.RETRY, A.REDISCOVER), action
        assert o.raised is None and x["state"] == "stable" and x["owned"] == owns
        assert x["coordinator_unknown"] is (action is A.REDISCOVER)
        assert x["next"][0] == (1, True)  # sent again, stating everything


def share_group_heartbeat(code: int) -> Observed:
    """A stable share group member's heartbeat answered ``code``, then the next one."""
    from .test_share_member import JOBS, Harness, answer

    h = Harness()
    h.join({JOBS: [0]})
    sent = len(h.heartbeats())
    h.step(answer(1) if code == 0 else answer(0, error=code), advance_ms=5000)  # type: ignore[arg-type]
    observed = Observed(fatal=h.member.fatal_error, raised=h.member.take_error())
    x = observed.extra
    x["state"], x["assigned"] = h.member.member_state().value, h.member.assignment()[1]
    x["coordinator_unknown"] = h.member.coordinator_unknown()
    h.step(answer(1, {JOBS: [0]}), answer(1), advance_ms=5000)
    x["next"] = [(r.member_epoch, r.subscribed_topic_names is not None) for r in h.heartbeats()[sent + 1:]]
    return observed


def check_share_group_heartbeat(code: int, action: Action, o: Observed) -> None:
    x = o.extra
    from .test_share_member import JOBS

    assigned = {JOBS: frozenset({0})}
    if action is A.FATAL:
        assert isinstance(o.raised, FatalGroupError) and raised_code(o) == code and o.fatal is o.raised
        assert x["state"] == "fatal" and x["assigned"] == {} and x["next"] == []  # nothing more is sent
        return
    assert o.fatal is None
    if action is A.NONE:
        assert o.raised is None and x["state"] == "stable" and x["assigned"] == assigned
        assert x["next"] == [(1, False)]  # only what changed: nothing
    elif action is A.RESET_GENERATION:
        assert o.raised is None and x["state"] == "joining" and x["assigned"] == {}
        assert x["next"][0] == (0, True)  # joins again at epoch 0, naming the subscription
    elif action is A.RAISE:
        assert isinstance(o.raised, RequestFailedError) and raised_code(o) == code
        assert x["state"] == "stable" and x["assigned"] == assigned and x["next"][0] == (1, True)
    else:
        assert action in (A.RETRY, A.REDISCOVER), action
        assert o.raised is None and x["state"] == "stable" and x["assigned"] == assigned
        assert x["coordinator_unknown"] is (action is A.REDISCOVER)
        assert x["next"][0] == (1, True)  # sent again, naming the subscription


def share_fetch(code: int, top_level: bool) -> Observed:
    """A share consumer's ShareFetch answered ``code`` (for the request, or for its partition),
    then the next one with records."""
    from groupclient import AcknowledgeType

    from .test_share_fetcher import Fetching, fetch_answer, part, records

    f = Fetching()
    good = part(records(0, 2), [(0, 1, 1)])
    if code == 0:
        first = fetch_answer([good])
    elif top_level:
        first = fetch_answer([good], error=code)  # type: ignore[arg-type]
    else:
        first = fetch_answer([part(error=code)])  # type: ignore[arg-type]
    observed = Observed(raised=f.turn(first))
    x = observed.extra
    x["refreshed"], x["records"] = f.refreshed(), [r.offset for r in f.take()]
    f.clock.advance(100)  # the backoff after an error answer
    f.in_flight.acknowledge_all(AcknowledgeType.ACCEPT)
    f.engine.send_acknowledged()
    then = f.turn(fetch_answer([part(records(0, 2), [(0, 1, 1)])] if not x["records"] else []))
    x["then"] = x["records"] + [r.offset for r in f.take()]
    x["then_raised"] = then
    x["epochs"] = [r.share_session_epoch for r in f.sent(ApiKey.SHARE_FETCH)]
    x["top_level"] = top_level
    return observed


def check_share_fetch(code: int, action: Action, o: Observed) -> None:
    from groupclient.share.session import LOST_SESSION

    x = o.extra
    assert o.fatal is None and x["then_raised"] is None
    assert x["then"] == [0, 1]  # the consumer goes on, whatever came first
    if action is A.NONE:
        assert o.raised is None and x["records"] == [0, 1] and x["epochs"] == [0, 1]
        return
    assert x["records"] == []
    if action is A.RAISE:
        assert isinstance(o.raised, RequestFailedError) and raised_code(o) == code  # raised once
    else:
        assert action in (A.RETRY, A.REFRESH_METADATA), action
        assert o.raised is None and x["refreshed"] is (action is A.REFRESH_METADATA)
    # the session's errors start it again; any other answer moves it on (Java's ShareSessionHandler)
    assert x["epochs"] == [0, 0 if x["top_level"] and code in LOST_SESSION else 1]


def share_acknowledge(code: int) -> Observed:
    """A commit's ShareAcknowledge answered ``code`` for its partition."""
    from groupclient import AcknowledgeType
    from groupclient.clock import Timer

    from .test_share_fetcher import Fetching, ack_answer, fetch_answer, part, records

    f = Fetching()
    f.turn(fetch_answer([part(records(0, 2), [(0, 1, 1)])]))
    f.take()
    f.in_flight.acknowledge_all(AcknowledgeType.ACCEPT)
    sent = f.engine.send_acknowledged(wait=True)
    assert sent is not None
    f.acks.append(ack_answer(partition_error=code))  # type: ignore[arg-type]
    results = f.engine.wait_for(sent[0], sent[1], Timer(f.clock, 1000), lambda: None)
    observed = Observed(raised=f.turn(fetch_answer([])))
    observed.extra.update(results=results, refreshed=f.refreshed(), callback=list(f.outcomes))
    return observed


def check_share_acknowledge(code: int, action: Action, o: Observed) -> None:
    from groupclient.errors import AcknowledgementFailedError, InvalidRecordStateError

    x = o.extra
    assert o.raised is None and o.fatal is None  # an outcome, never raised from poll()
    [(tp, outcome)] = x["results"].items()
    assert [(offsets, error) for offsets, error in x["callback"]] == [({tp: {0, 1}}, outcome)]
    if action is A.NONE:
        assert outcome is None
        return
    assert isinstance(outcome, AcknowledgementFailedError) and int(outcome.code) == code
    assert isinstance(outcome, InvalidRecordStateError) is (code == ErrorCode.INVALID_RECORD_STATE)
    assert x["refreshed"] is (action is A.REFRESH_METADATA)


PATHS: dict[str, tuple[ApiKey, Callable[[int], Observed]]] = {
    "ShareFetch(request)": (ApiKey.SHARE_FETCH, lambda code: share_fetch(code, top_level=True)),
    "ShareFetch(partition)": (ApiKey.SHARE_FETCH, lambda code: share_fetch(code, top_level=False)),
    "ShareAcknowledge": (ApiKey.SHARE_ACKNOWLEDGE, share_acknowledge),
    "ShareGroupHeartbeat": (ApiKey.SHARE_GROUP_HEARTBEAT, share_group_heartbeat),
    "ConsumerGroupHeartbeat": (ApiKey.CONSUMER_GROUP_HEARTBEAT, consumer_group_heartbeat),
    "FindCoordinator": (ApiKey.FIND_COORDINATOR, find_coordinator),
    "JoinGroup": (ApiKey.JOIN_GROUP, lambda code: joining(ApiKey.JOIN_GROUP, code)),
    "SyncGroup": (ApiKey.SYNC_GROUP, lambda code: joining(ApiKey.SYNC_GROUP, code)),
    "Heartbeat": (ApiKey.HEARTBEAT, heartbeat),
    "LeaveGroup": (ApiKey.LEAVE_GROUP, leave),
    "OffsetCommit": (ApiKey.OFFSET_COMMIT, commit),
    "OffsetFetch(group)": (ApiKey.OFFSET_FETCH, lambda code: offset_fetch(code, partition_level=False)),
    "OffsetFetch(partition)": (ApiKey.OFFSET_FETCH, lambda code: offset_fetch(code, partition_level=True)),
    "Fetch": (ApiKey.FETCH, fetch),
    "ListOffsets": (ApiKey.LIST_OFFSETS, list_offsets),
    "Metadata": (ApiKey.METADATA, metadata),
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_code_on_this_path_does_what_the_error_table_says(path: str) -> None:
    api, scenario = PATHS[path]
    failures = []
    for code in CODES:
        action = action_for(code, api)
        try:
            check(api, code, action, scenario(code))
        except AssertionError as exc:
            failures.append(f"{path} code {code} ({action.value}): {exc}")
    assert not failures, f"{len(failures)} of {len(CODES)} codes:\n" + "\n".join(failures[:40])


def test_the_paths_cover_every_api_in_the_table() -> None:
    from groupclient.protocol.error_table import TABLES

    assert set(TABLES) == {api for api, _ in PATHS.values()}


