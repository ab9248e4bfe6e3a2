"""Blocking calls are bounded and say why they ran out (``CallTimeoutError``), on a scripted
network and a fake clock: a coordinator or leader that never answers, and one that always
answers a retriable error, for the commit, the committed-offset fetch, the offset look-ups and
the metadata of every topic; then the error itself (message, attributes, pickling, classes) and
the facade's default (``default_api_timeout_ms``, ``float("inf")``, bad values)."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import kafka.errors as kafka_errors
import pytest
from kafka.protocol.consumer.group import OffsetCommitResponse, OffsetFetchResponse
from kafka.protocol.consumer.offsets import ListOffsetsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorResponse
from kafka.structs import OffsetAndMetadata, TopicPartition

from groupclient import CallTimeoutError, GroupConsumer, KafkaTimeoutError
from groupclient.attempts import Attempts
from groupclient.clock import FakeClock, Timer
from groupclient.error_codes import ErrorCode
from groupclient.errors import ConfigurationError, DisconnectedError
from groupclient.network.metadata import MetadataSnapshot
from groupclient.network.metadata_refresh import MetadataRefresh
from groupclient.protocol.apis import ApiKey

from .scripted_network import ScriptedClient
from .test_error_table_paths import TP, fetcher_world, group

HOLD: Callable[[Any], Any] = lambda request: None  # noqa: E731 - a request never answered
TIMEOUT_MS = 5000


def commit_answer(code: int) -> Callable[[Any], Any]:
    def answer(request: Any) -> Any:
        T = OffsetCommitResponse.OffsetCommitResponseTopic
        return OffsetCommitResponse(version=request.version, throttle_time_ms=0, topics=[
            T(name=t.name, partitions=[T.OffsetCommitResponsePartition(partition_index=p.partition_index,
                                                                        error_code=code) for p in t.partitions])
            for t in request.topics])
    return answer


def offset_fetch_answer(code: int) -> Callable[[Any], Any]:
    def answer(request: Any) -> Any:
        G = OffsetFetchResponse.OffsetFetchResponseGroup
        T = G.OffsetFetchResponseTopics
        p = T.OffsetFetchResponsePartitions(partition_index=0, committed_offset=-1, committed_leader_epoch=-1,
                                            metadata="", error_code=code)
        return OffsetFetchResponse(version=request.version, throttle_time_ms=0, groups=[G(
            group_id="g", topics=[T(name="t", partitions=[p])], error_code=0)])
    return answer


def list_offsets_answer(code: int) -> Callable[[Any], Any]:
    def answer(request: Any) -> Any:
        T = ListOffsetsResponse.ListOffsetsTopicResponse
        P = T.ListOffsetsPartitionResponse
        return ListOffsetsResponse(version=request.version, throttle_time_ms=0, topics=[
            T(name="t", partitions=[P(partition_index=0, error_code=code, timestamp=-1, offset=-1, leader_epoch=-1)])])
    return answer


def raised_by(call: Callable[[], Any]) -> CallTimeoutError:
    with pytest.raises(CallTimeoutError) as caught:
        call()
    return caught.value


# -- commits ----------------------------------------------------------------------------------
def test_a_commit_the_coordinator_never_answers_ends_at_its_timeout() -> None:
    clock = FakeClock()
    parts, net = group(clock, stable=True)
    net.on(ApiKey.OFFSET_COMMIT, HOLD)
    started = clock.monotonic_ms()
    error = raised_by(lambda: parts.committer.commit_sync({TP: OffsetAndMetadata(5, "", -1)}, Timer(clock, TIMEOUT_MS)))
    assert clock.monotonic_ms() - started == TIMEOUT_MS
    assert str(error) == "commit of 1 offset did not finish in 5000 ms: t-0 no answer (1 try)"
    assert (error.operation, error.timeout_ms, error.tries) == ("commit of 1 offset", TIMEOUT_MS, 1)


def test_a_commit_always_answered_with_a_retriable_code_names_it_and_the_tries() -> None:
    """The case that blocked for ever: a partition that does not exist."""
    clock = FakeClock()
    parts, net = group(clock, stable=True)
    net.on(ApiKey.OFFSET_COMMIT, commit_answer(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    offsets = {TopicPartition("n", 99): OffsetAndMetadata(5, "", -1)}
    started = clock.monotonic_ms()
    error = raised_by(lambda: parts.committer.commit_sync(offsets, Timer(clock, TIMEOUT_MS)))
    assert clock.monotonic_ms() - started == TIMEOUT_MS
    tries = len(net.requests(ApiKey.OFFSET_COMMIT))
    assert tries == TIMEOUT_MS // 100  # one per retry_backoff_ms, none once no time is left
    assert error.last_errors == {"n-99": "UNKNOWN_TOPIC_OR_PARTITION"}
    assert str(error) == f"commit of 1 offset did not finish in 5000 ms: n-99 UNKNOWN_TOPIC_OR_PARTITION ({tries} tries)"


def test_each_partition_of_a_commit_keeps_its_own_last_error() -> None:
    clock = FakeClock()
    parts, net = group(clock, stable=True)

    def answer(request: Any) -> Any:  # t-0 committed, t-1 and t-2 not
        codes = {0: 0, 1: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 2: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
        T = OffsetCommitResponse.OffsetCommitResponseTopic
        return OffsetCommitResponse(version=request.version, throttle_time_ms=0, topics=[T(name="t", partitions=[
            T.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=codes[p.partition_index])
            for t in request.topics for p in t.partitions])])

    net.on(ApiKey.OFFSET_COMMIT, answer)
    offsets = {TopicPartition("t", p): OffsetAndMetadata(5, "", -1) for p in range(3)}
    error = raised_by(lambda: parts.committer.commit_sync(offsets, Timer(clock, 1000)))
    assert error.last_errors == {"t-0": "no answer", "t-1": "UNKNOWN_TOPIC_OR_PARTITION",
                                 "t-2": "COORDINATOR_LOAD_IN_PROGRESS"}
    assert "t-1 UNKNOWN_TOPIC_OR_PARTITION; t-2 COORDINATOR_LOAD_IN_PROGRESS" in str(error)


def test_a_commit_whose_coordinator_cannot_be_found_says_what_find_coordinator_answered() -> None:
    clock = FakeClock()
    parts, net = group(clock, stable=True)
    parts.member.mark_coordinator_dead("the test")
    net.on(ApiKey.FIND_COORDINATOR, lambda r: FindCoordinatorResponse(
        version=r.version, throttle_time_ms=0, coordinators=[FindCoordinatorResponse.Coordinator(
            key="g", node_id=-1, host="", port=-1, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
            error_message=None)]))
    error = raised_by(lambda: parts.committer.commit_sync({TP: OffsetAndMetadata(5, "", -1)}, Timer(clock, TIMEOUT_MS)))
    assert error.last_errors == {"t-0": "no group coordinator (FindCoordinator: COORDINATOR_NOT_AVAILABLE)"}
    assert error.tries == 0  # no OffsetCommit was ever sent


def test_a_commit_whose_connection_keeps_dropping_names_the_drop() -> None:
    clock = FakeClock()
    parts, net = group(clock, stable=True)
    net.on(ApiKey.OFFSET_COMMIT, lambda r: DisconnectedError("the connection closed"))
    error = raised_by(lambda: parts.committer.commit_sync({TP: OffsetAndMetadata(5, "", -1)}, Timer(clock, 1000)))
    assert error.last_errors == {"t-0": "NETWORK_EXCEPTION: the connection closed"}
    assert error.tries == len(net.requests(ApiKey.OFFSET_COMMIT)) > 1


# -- committed offsets ------------------------------------------------------------------------
@pytest.mark.parametrize("responder, last", [
    (HOLD, "no answer"),
    (offset_fetch_answer(ErrorCode.UNSTABLE_OFFSET_COMMIT), "UNSTABLE_OFFSET_COMMIT"),
])
def test_a_committed_offset_fetch_is_bounded_either_way(responder: Callable[[Any], Any], last: str) -> None:
    clock = FakeClock()
    parts, net = group(clock, stable=True)
    net.on(ApiKey.OFFSET_FETCH, responder)
    started = clock.monotonic_ms()
    error = raised_by(lambda: parts.committer.fetch_committed({TP}, Timer(clock, TIMEOUT_MS)))
    assert clock.monotonic_ms() - started == TIMEOUT_MS
    assert error.operation == "committed offsets of 1 partition"
    assert error.last_errors == {"t-0": last}
    assert error.tries == len(net.requests(ApiKey.OFFSET_FETCH)) >= 1


# -- offset look-ups --------------------------------------------------------------------------
@pytest.mark.parametrize("responder, last", [
    (HOLD, "no answer"),
    (list_offsets_answer(ErrorCode.NOT_LEADER_OR_FOLLOWER), "NOT_LEADER_OR_FOLLOWER"),
    (list_offsets_answer(ErrorCode.OFFSET_NOT_AVAILABLE), "OFFSET_NOT_AVAILABLE"),
])
def test_an_offset_look_up_is_bounded_either_way(responder: Callable[[Any], Any], last: str) -> None:
    net, _, fetcher = fetcher_world()
    net.on(ApiKey.LIST_OFFSETS, responder)
    clock = net.clock
    started = clock.monotonic_ms()
    error = raised_by(lambda: fetcher.list_offsets_by_time({TP: -1}, Timer(clock, TIMEOUT_MS), "end offsets of 1 partition"))
    assert clock.monotonic_ms() - started == TIMEOUT_MS
    assert error.operation == "end offsets of 1 partition"
    assert error.last_errors == {"t-0": last}
    assert error.tries == len(net.requests(ApiKey.LIST_OFFSETS))


def test_an_offset_look_up_without_a_leader_says_so() -> None:
    net, _, fetcher = fetcher_world()
    net.metadata.snapshot = MetadataSnapshot(brokers={0: ("127.0.0.1", 9092)})  # no partitions known
    error = raised_by(lambda: fetcher.list_offsets_by_time({TP: -2}, Timer(net.clock, 1000)))
    assert error.last_errors == {"t-0": "no leader known"}
    assert not net.requests(ApiKey.LIST_OFFSETS)


# -- every topic's metadata -------------------------------------------------------------------
@pytest.mark.parametrize("responder, last", [
    (HOLD, "no answer"),
    (lambda r: DisconnectedError("the connection closed"), "NETWORK_EXCEPTION: the connection closed"),
])
def test_listing_topics_is_bounded_either_way(responder: Callable[[Any], Any], last: str) -> None:
    clock = FakeClock()
    net = ScriptedClient(clock)
    net.on(ApiKey.METADATA, responder)
    refresh = MetadataRefresh(net, False, _no_lock, lambda: None)  # type: ignore[arg-type]
    started = clock.monotonic_ms()
    error = raised_by(lambda: refresh.fetch_all_topics(Timer(clock, TIMEOUT_MS)))
    assert clock.monotonic_ms() - started == TIMEOUT_MS
    assert error.operation == "listing topics"
    assert error.last_errors == {"": last}


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _no_lock() -> _NoLock:
    return _NoLock()


# -- the error --------------------------------------------------------------------------------
def test_the_error_is_a_kafka_timeout_error_of_both_libraries_and_pickles() -> None:
    error = CallTimeoutError(operation="commit of 2 offsets", timeout_ms=60000,
                             last_errors={"n-1": "NOT_COORDINATOR", "n-2": "NOT_COORDINATOR"}, tries=12)
    assert isinstance(error, KafkaTimeoutError) and isinstance(error, kafka_errors.KafkaTimeoutError)
    assert isinstance(error, TimeoutError)
    assert str(error) == "commit of 2 offsets did not finish in 60000 ms: n-1, n-2 NOT_COORDINATOR (12 tries)"
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.last_errors, copy.tries) == (CallTimeoutError, str(error), error.last_errors, 12)


def test_many_partitions_with_one_error_are_counted_not_listed() -> None:
    error = CallTimeoutError(operation="commit of 40 offsets", timeout_ms=1000,
                             last_errors={f"t-{p}": "NOT_COORDINATOR" for p in range(40)}, tries=3)
    assert str(error) == ("commit of 40 offsets did not finish in 1000 ms: t-0, t-1, t-2, t-3, t-4 and 35 more "
                          "NOT_COORDINATOR (3 tries)")


def test_an_error_of_the_whole_request_does_not_hide_the_partitions_own() -> None:
    attempts = Attempts("commit of 2 offsets", Timer(FakeClock(), 10), ["t-0", "t-1"])
    attempts.tried()
    attempts.failed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ["t-1"])
    attempts.failed(RuntimeError("the request failed with t-1's code"))  # the same try: t-1's own code stays
    assert attempts.timed_out().last_errors == {"t-0": "no answer", "t-1": "UNKNOWN_TOPIC_OR_PARTITION"}
    attempts.tried()
    attempts.failed(DisconnectedError("gone"))  # a later try failing as a whole: every partition's last
    assert attempts.timed_out().last_errors == {"t-0": "NETWORK_EXCEPTION: gone", "t-1": "NETWORK_EXCEPTION: gone"}


# -- the facade's default ---------------------------------------------------------------------
def offline_consumer(**settings: Any) -> GroupConsumer:
    """A consumer that never connects (api_version given: no bootstrap), for its settings."""
    return GroupConsumer(bootstrap_servers="127.0.0.1:1", api_version=(4, 1), group_id="g", **settings)


def test_no_timeout_means_default_api_timeout_ms_and_infinity_means_no_limit() -> None:
    consumer = offline_consumer()
    try:
        assert consumer._default_timer(None).timeout_ms == 60000  # Java's default.api.timeout.ms
        assert consumer._default_timer(250).timeout_ms == 250
        assert consumer._default_timer(float("inf")).timeout_ms is None
    finally:
        consumer.close(timeout_ms=0)
    consumer = offline_consumer(default_api_timeout_ms=1234)
    try:
        assert consumer._default_timer(None).timeout_ms == 1234
    finally:
        consumer.close(timeout_ms=0)


@pytest.mark.parametrize("bad", [-1, "5", True, float("nan")])
def test_a_bad_timeout_is_a_clear_error_before_anything_is_sent(bad: Any) -> None:
    consumer = offline_consumer()
    try:
        for call in (lambda: consumer.commit({TP: 1}, timeout_ms=bad), lambda: consumer.committed(TP, timeout_ms=bad),
                     lambda: consumer.end_offsets([TP], timeout_ms=bad), lambda: consumer.topics(timeout_ms=bad)):
            with pytest.raises(ConfigurationError, match="timeout_ms must be"):
                call()
    finally:
        consumer.close(timeout_ms=0)


def test_default_api_timeout_ms_must_be_positive() -> None:
    with pytest.raises(ConfigurationError, match="default_api_timeout_ms"):
        offline_consumer(default_api_timeout_ms=0)
