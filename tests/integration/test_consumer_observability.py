"""Interceptors, rebalance events, metrics and quiet join logs on a real group (embedded cluster)."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from groupclient import GroupConsumer, TopicPartition
from groupclient.consumer.interceptors import ConsumerInterceptor
from groupclient.consumer.rebalance_events import RebalanceEvent
from groupclient.coordinator import EmbeddedCluster
from tests.integration.test_consumer_api import drain

pytestmark = pytest.mark.integration


def member(cluster: EmbeddedCluster, **config: Any) -> GroupConsumer:
    settings: dict[str, Any] = dict(bootstrap_servers=cluster.bootstrap_servers, group_id="obs",
                                    auto_offset_reset="earliest", session_timeout_ms=6000,
                                    heartbeat_interval_ms=500, fetch_max_wait_ms=100)
    settings.update(config)
    return GroupConsumer(**settings)


class EvenOnly(ConsumerInterceptor):
    def __init__(self) -> None:
        self.commits: list[dict[TopicPartition, Any]] = []
        self.closed = False

    def on_consume(self, records: Any) -> Any:
        return {tp: [r for r in rs if int(r.value) % 2 == 0] for tp, rs in records.items()}

    def on_commit(self, offsets: Any) -> None:
        self.commits.append(offsets)

    def close(self) -> None:
        self.closed = True


def test_interceptors_filter_records_see_commits_and_are_closed(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("ic", 1)
    cluster.produce("ic", [str(i).encode() for i in range(10)])
    interceptor = EvenOnly()
    consumer = member(cluster, enable_auto_commit=False, interceptors=[interceptor])
    try:
        consumer.subscribe(["ic"])
        records = drain(consumer, 5, timeout_s=20)
        assert [int(r.value) for r in records] == [0, 2, 4, 6, 8]
        # as in Java: what an interceptor filters out is still consumed, so the commit covers it
        consumer.commit()
        assert interceptor.commits == [{TopicPartition("ic", 0): interceptor.commits[0][TopicPartition("ic", 0)]}]
        assert interceptor.commits[0][TopicPartition("ic", 0)].offset == 10
    finally:
        consumer.close()
    assert interceptor.closed
    assert cluster.committed_offsets("obs") == {("ic", 0): 10}


def test_every_rebalance_is_an_event_and_a_normal_join_logs_nothing_alarming(
        cluster: EmbeddedCluster, caplog: pytest.LogCaptureFixture) -> None:
    cluster.create_topic("ev", 4)
    first_events: list[RebalanceEvent] = []
    second_events: list[RebalanceEvent] = []
    first = member(cluster, rebalance_event_callback=first_events.append)
    second = member(cluster)
    second.add_rebalance_event_callback(second_events.append)
    try:
        with caplog.at_level(logging.INFO):
            first.subscribe(["ev"])
            deadline = time.monotonic() + 20
            while len(first.assignment()) < 4 and time.monotonic() < deadline:
                first.poll(100)
            second.subscribe(["ev"])
            while time.monotonic() < deadline and not (
                    len(first.assignment()) == 2 and len(second.assignment()) == 2):
                first.poll(50)
                second.poll(50)
        assert len(first.assignment()) == 2 and len(second.assignment()) == 2
        # first: joined alone (4 partitions), then gave up everything (eager) and got 2 back
        assert first_events[0].assigned == {TopicPartition("ev", p) for p in range(4)}
        assert first_events[0].reason == "initial join" and first_events[0].rebalance_protocol == "eager"
        last = first_events[-1]
        assert last.revoked == {TopicPartition("ev", p) for p in range(4)} and last.owned == first.assignment()
        assert last.generation_id == first.group_metadata().generation_id
        assert second_events[-1].owned == second.assignment() and second_events[-1].assignor == "range"
        for event in first_events + second_events:
            assert event.total_ms >= event.join_ms + event.sync_ms >= 0
        # the MEMBER_ID_REQUIRED round trip and connecting to the coordinator are normal steps of
        # a join: nothing at INFO or above speaks of them
        noisy = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO and (
            "MEMBER_ID_REQUIRED" in r.getMessage() or "not connected yet" in r.getMessage())]
        assert noisy == []
        events = [r for r in caplog.records if r.name == "groupclient.rebalance"]
        assert len(events) == len(first_events) + len(second_events)
        metrics = first.metrics()
        assert metrics is not None
        coordinator = metrics["consumer-coordinator-metrics"]
        assert coordinator["rebalance-total"] == len(first_events)
        assert coordinator["join-total"] >= len(first_events) and coordinator["assigned-partitions"] == 2
    finally:
        first.close()
        second.close()


def test_metrics_follow_a_real_poll_loop(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("mx", 2)
    cluster.produce("mx", [b"x" * 10] * 40)
    consumer = member(cluster, enable_auto_commit=False)
    try:
        consumer.subscribe(["mx"])
        assert len(drain(consumer, 40)) == 40
        consumer.commit()
        metrics = consumer.metrics()
        assert metrics is not None
        fetch = metrics["consumer-fetch-manager-metrics"]
        assert fetch["records-consumed-total"] == 40 and fetch["fetch-total"] >= 1
        assert fetch["fetch-latency-max"] >= fetch["fetch-latency-avg"] >= 0
        assert fetch["records-lag-max"] == 0 and fetch["bytes-consumed-rate"] > 0
        assert metrics["consumer-coordinator-metrics"]["commit-total"] == 1
        assert metrics["consumer-metrics"]["request-total"] >= 5  # metadata, find, join x2, sync, fetch...
    finally:
        consumer.close()
    quiet = member(cluster, metrics_enabled=False, group_id=None)
    try:
        assert quiet.metrics() is None
    finally:
        quiet.close()


def test_a_fetch_error_the_application_must_see_is_raised_from_poll_once(cluster: EmbeddedCluster) -> None:
    import kafka.errors as kafka_errors

    from groupclient.coordinator import FaultKind, FaultRule
    from groupclient.errors import RequestFailedError
    from groupclient.protocol.apis import ApiKey
    from groupclient.error_codes import ErrorCode

    cluster.create_topic("auth", 1)
    cluster.produce("auth", [b"a", b"b"])
    consumer = member(cluster, enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition("auth", 0)])
        consumer.seek_to_beginning()
        cluster.inject_fault(FaultRule(ApiKey.FETCH, FaultKind.ERROR, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
        raised: list[BaseException] = []
        records: list[Any] = []
        deadline = time.monotonic() + 20
        while len(records) < 2 and time.monotonic() < deadline:
            try:
                for batch in consumer.poll(200).values():
                    records += batch
            except RequestFailedError as exc:
                raised.append(exc)
        assert len(raised) == 1 and isinstance(raised[0], kafka_errors.TopicAuthorizationFailedError)
        assert [r.value for r in records] == [b"a", b"b"]  # the consumer went on afterwards
    finally:
        consumer.close()
