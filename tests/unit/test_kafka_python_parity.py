"""kafka-python parity without a broker: errors catchable as kafka.errors, configuration checks,
deserializer objects, interceptors, rebalance events, metrics arithmetic."""

from __future__ import annotations

import copy
import logging
import math
import pickle
import time
from typing import Any

import kafka.errors as kafka_errors
import pytest
from kafka.serializer import Deserializer
from kafka.structs import OffsetAndMetadata, TopicPartition

from groupclient import GroupConsumer
from groupclient.clock import FakeClock
from groupclient.consumer.config import build_config
from groupclient.consumer.deserializers import bind, check_deserializer
from groupclient.consumer.interceptors import ConsumerInterceptor, InterceptorChain
from groupclient.consumer.metrics import WINDOW_MS, ConsumerMetrics
from groupclient.consumer.rebalance_events import RebalanceEvent, RebalanceRecorder
from groupclient.errors import (
    CommitFailedError, ConfigurationError, DisconnectedError, FatalGroupError, IllegalStateError, KafkaTimeoutError,
    NetworkError, NoBrokersAvailableError, NodeNotReadyError, RebalanceInProgressError, RequestFailedError,
    RequestTimedOutError, RetriableError, UnexpectedBrokerError,
)
from groupclient.protocol.apis import ApiKey
from groupclient.error_codes import ErrorCode

TP = TopicPartition("t", 0)


# -- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("ours, theirs", [
    (ConfigurationError("x"), kafka_errors.KafkaConfigurationError),
    (IllegalStateError("x"), kafka_errors.IllegalStateError),
    (KafkaTimeoutError("x"), kafka_errors.KafkaTimeoutError),
    (NoBrokersAvailableError("x"), kafka_errors.KafkaTimeoutError),
    (CommitFailedError("x"), kafka_errors.CommitFailedError),
    (RebalanceInProgressError("x"), kafka_errors.CommitFailedError),
    (RebalanceInProgressError("x"), kafka_errors.RebalanceInProgressError),
    (RetriableError(ErrorCode.REBALANCE_IN_PROGRESS, "x"), kafka_errors.RebalanceInProgressError),
    (RetriableError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "x"), kafka_errors.CoordinatorNotAvailableError),
    (FatalGroupError(ErrorCode.GROUP_AUTHORIZATION_FAILED, "x"), kafka_errors.GroupAuthorizationFailedError),
    (RequestFailedError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "x"), kafka_errors.TopicAuthorizationFailedError),
    (UnexpectedBrokerError(9999, "x"), kafka_errors.UnknownError),
    (NodeNotReadyError("x"), kafka_errors.NodeNotReadyError),
    (DisconnectedError("x"), kafka_errors.KafkaConnectionError),
    (RequestTimedOutError("x"), kafka_errors.RequestTimedOutError),
    (NetworkError("x"), kafka_errors.RetriableError),
])
def test_errors_are_also_kafka_python_errors(ours: Exception, theirs: type[Exception]) -> None:
    assert isinstance(ours, theirs)
    assert isinstance(ours, kafka_errors.KafkaError)


def test_broker_errors_keep_code_message_class_and_survive_pickling() -> None:
    error = RetriableError(ErrorCode.REBALANCE_IN_PROGRESS, "a rebalance")
    assert (error.code, error.errno, str(error)) == (27, 27, "REBALANCE_IN_PROGRESS (27): a rebalance")
    assert type(error).__name__ == "RetriableError" and isinstance(error, RetriableError)
    for copied in (pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)):
        assert type(copied) is type(error) and str(copied) == str(error)
    timeout = RequestTimedOutError("slow")
    assert type(pickle.loads(pickle.dumps(timeout))) is type(timeout)
    # kafka-python's KafkaError makes errors unhashable and equal by args; ours stay plain exceptions
    assert len({error, RetriableError(ErrorCode.REBALANCE_IN_PROGRESS, "a rebalance")}) == 2


def test_every_known_code_combines_with_every_broker_error_class() -> None:
    for cls in (RetriableError, FatalGroupError, RequestFailedError, UnexpectedBrokerError):
        for code in ErrorCode:
            error = cls(code, "m")
            assert isinstance(error, cls)
            assert isinstance(error, kafka_errors.kafka_errors.get(int(code), kafka_errors.UnknownError))


# -- configuration -----------------------------------------------------------------------------
@pytest.mark.parametrize("config, message", [
    ({"bootstrap_server": "x"}, r"'bootstrap_server' \(did you mean 'bootstrap_servers'\?\)"),
    ({"sesion_timeout_ms": 1}, r"did you mean 'session_timeout_ms'"),
    ({"max.poll.records": 1}, r"did you mean 'max_poll_records'"),
    ({"zzz": 1}, r"unrecognized configs: 'zzz'$"),
    ({"bootstrap_servers": 9092}, "bootstrap_servers must be"),
    ({"bootstrap_servers": ["a:1", 2]}, "bootstrap_servers must be"),
    ({"bootstrap_servers": []}, "bootstrap_servers must be"),
    ({"fetch_max_wait_ms": 30000}, "must be larger than fetch_max_wait_ms"),
    ({"request_timeout_ms": 600000}, r"connections_max_idle_ms \(540000\) must be larger than request_timeout_ms"),
    ({"isolation_level": "serializable"}, "unrecognized isolation_level"),
    ({"key_deserializer": 5}, "key_deserializer must be a callable"),
    ({"value_deserializer": type("D", (), {"deserialize": lambda self, a: a})()}, "must take"),
    ({"group_id": "g", "group_instance_id": "a b"}, "illegal"),
    ({"group_id": "g", "group_instance_id": "x" * 250}, "longer than 249"),
    ({"consumer_timeout_ms": -1}, "consumer_timeout_ms"),
    ({"api_version": "new"}, "api_version"),
    ({"interceptors": object()}, "interceptors must be a list"),
    ({"rebalance_event_callback": 3}, "rebalance_event_callback"),
])
def test_configuration_is_checked_as_kafka_python_does_and_more(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        build_config(config)


@pytest.mark.parametrize("given, level", [
    ("read_committed", "read_committed"), ("READ-COMMITTED", "read_committed"), (1, "read_committed"),
    (0, "read_uncommitted"), ("read_uncommitted", "read_uncommitted"),
])
def test_isolation_level_by_name_number_or_enum(given: Any, level: str) -> None:
    from kafka.protocol.consumer import IsolationLevel
    assert build_config({"isolation_level": given})["isolation_level"] == level
    assert build_config({"isolation_level": IsolationLevel.build_from(given)})["isolation_level"] == level


def test_a_high_heartbeat_interval_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "groupclient.consumer"):
        build_config({"group_id": "g", "session_timeout_ms": 9000, "heartbeat_interval_ms": 4000})
    assert "heartbeat_interval_ms is high" in caplog.text


@pytest.mark.parametrize("topics", [123, ["ok", 5], ["bad name"], ["a" * 250], [".."], [""]])
def test_subscribe_checks_topic_names_and_types(topics: Any) -> None:
    consumer = GroupConsumer(bootstrap_servers="127.0.0.1:1", group_id="g", clock=FakeClock(), api_version=(4, 1))
    try:
        with pytest.raises(ConfigurationError):
            consumer.subscribe(topics)
        assert consumer.subscription() is None  # nothing changed
    finally:
        consumer.close()


def test_no_broker_answering_fails_the_constructor_within_bootstrap_timeout_ms() -> None:
    started = time.monotonic()
    with pytest.raises(NoBrokersAvailableError, match="127.0.0.1:1") as caught:
        GroupConsumer(bootstrap_servers="127.0.0.1:1", bootstrap_timeout_ms=300)
    assert isinstance(caught.value, kafka_errors.KafkaTimeoutError)  # kafka-python 3.0 raises that
    assert time.monotonic() - started < 5  # 300 ms and a generous margin for this slow machine


# -- deserializers -----------------------------------------------------------------------------
class Upper(Deserializer):  # type: ignore[misc]  # kafka-python is untyped
    def deserialize(self, topic: str, headers: Any, data: bytes) -> str:
        return f"{topic}:{len(headers or [])}:{data.decode().upper()}"


class OldStyle:
    def deserialize(self, topic: str, data: bytes) -> str:
        return f"{topic}/{data.decode()}"


def test_deserializer_objects_and_callables() -> None:
    headers = [("h", b"1")]
    upper, old, plain = bind("v", Upper(), "t"), bind("v", OldStyle(), "t"), bind("v", bytes.decode, "t")
    assert upper is not None and old is not None and plain is not None
    assert upper(b"ab", headers) == "t:1:AB"
    assert old(b"ab", headers) == "t/ab"
    assert plain(b"ab", headers) == "ab"
    assert bind("v", None, "t") is None
    check_deserializer("v", Upper())
    with pytest.raises(ConfigurationError):
        check_deserializer("v", "not callable")


def test_a_type_error_inside_a_deserializer_is_the_deserializers_own() -> None:
    class Broken:
        def deserialize(self, topic: str, headers: Any, data: bytes) -> Any:
            raise TypeError("bug in the deserializer")
    call = bind("v", Broken(), "t")
    assert call is not None
    with pytest.raises(TypeError, match="bug in the deserializer"):
        call(b"x", [])


# -- interceptors ------------------------------------------------------------------------------
class Recorder(ConsumerInterceptor):
    def __init__(self) -> None:
        self.commits: list[dict[TopicPartition, OffsetAndMetadata]] = []
        self.closed = 0

    def on_consume(self, records: Any) -> Any:
        return {tp: [r for r in rs if r != "drop"] for tp, rs in records.items()}

    def on_commit(self, offsets: Any) -> None:
        self.commits.append(offsets)

    def close(self) -> None:
        self.closed += 1


class Failing:
    def on_consume(self, records: Any) -> Any:
        raise RuntimeError("interceptor bug")

    def on_commit(self, offsets: Any) -> None:
        raise RuntimeError("interceptor bug")

    def close(self) -> None:
        raise RuntimeError("interceptor bug")


def test_interceptors_chain_and_a_failing_one_is_skipped(caplog: pytest.LogCaptureFixture) -> None:
    recorder = Recorder()
    chain = InterceptorChain((Failing(), recorder, Failing()))
    with caplog.at_level(logging.WARNING):
        assert chain.on_consume({TP: ["a", "drop", "b"]}) == {TP: ["a", "b"]}
        chain.on_commit({TP: OffsetAndMetadata(3, "", -1)})
        chain.close()
    assert recorder.commits == [{TP: OffsetAndMetadata(3, "", -1)}] and recorder.closed == 1
    assert caplog.text.count("interceptor bug") == 6
    with pytest.raises(ConfigurationError):
        InterceptorChain((object(),))


# -- rebalance events --------------------------------------------------------------------------
def test_a_rebalance_event_counts_what_happened_and_callbacks_cannot_break_it(
        caplog: pytest.LogCaptureFixture) -> None:
    seen: list[RebalanceEvent] = []

    def broken(event: RebalanceEvent) -> None:
        raise RuntimeError("callback bug")

    recorder = RebalanceRecorder(callbacks=[broken, seen.append])
    recorder.preparing(1000)
    recorder.listener_called("on_partitions_revoked", {TP})
    recorder.prepared(1000, 1040)
    recorder.listener_called("on_partitions_assigned", {TopicPartition("t", 1)})
    event = recorder.complete("g", "m-1", 7, "initial join", "range", "eager", {TopicPartition("t", 1)},
                              join_started_ms=1040, sync_sent_ms=1300, now_ms=1310)
    assert (event.revoke_ms, event.join_ms, event.sync_ms, event.total_ms) == (40, 260, 10, 310)
    assert event.revoked == {TP} and event.assigned == {TopicPartition("t", 1)} and not event.lost
    with caplog.at_level(logging.INFO, "groupclient.rebalance"):
        recorder.emit(event)
    assert seen == [event] and "callback bug" in caplog.text
    record = next(r for r in caplog.records if r.name == "groupclient.rebalance" and r.levelno == logging.INFO)
    assert record.rebalance["generation_id"] == 7 and record.rebalance["revoked"] == ["t-0"]
    # the next rebalance starts from nothing
    second = recorder.complete("g", "m-1", 8, "x", "range", "eager", set(), 2000, 2000, 2000)
    assert not second.revoked and not second.assigned and second.revoke_ms == 0


# -- metrics -----------------------------------------------------------------------------------
def test_metrics_rates_latencies_and_window() -> None:
    clock = FakeClock()
    metrics = ConsumerMetrics(clock.monotonic_ms)
    for latency in (10, 30):
        metrics.on_request_done(int(ApiKey.JOIN_GROUP), latency, None, False)
    metrics.on_request_done(int(ApiKey.HEARTBEAT), 4, None, False)
    metrics.on_request_done(int(ApiKey.OFFSET_COMMIT), 5, None, True)  # failed: not a commit
    metrics.on_records_delivered(30, 3000)
    metrics.on_rebalance(250)
    clock.advance(1000)
    snap = metrics.snapshot([5, 40], assigned=2, has_group=True)
    coordinator, fetch = snap["consumer-coordinator-metrics"], snap["consumer-fetch-manager-metrics"]
    assert coordinator["join-time-avg"] == 20 and coordinator["join-time-max"] == 30
    assert coordinator["join-rate"] == pytest.approx(2 / (WINDOW_MS / 1000))
    assert coordinator["commit-total"] == 0 and snap["consumer-metrics"]["failed-request-total"] == 1
    assert coordinator["last-heartbeat-seconds-ago"] == pytest.approx(1.0)
    assert coordinator["rebalance-total"] == 1 and coordinator["last-rebalance-latency"] == 250
    assert fetch["records-lag-max"] == 40 and fetch["records-consumed-total"] == 30
    # no Fetch yet: kafka-python's values for an empty window
    assert fetch["fetch-latency-avg"] == 0.0 and fetch["fetch-latency-max"] == -math.inf
    clock.advance(WINDOW_MS)
    later = metrics.snapshot([], assigned=0, has_group=False)
    assert "consumer-coordinator-metrics" not in later
    assert later["consumer-fetch-manager-metrics"]["records-consumed-rate"] == 0
    assert later["consumer-fetch-manager-metrics"]["records-consumed-total"] == 30

