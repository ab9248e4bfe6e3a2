"""GroupConsumer's OpenTelemetry on a real group (embedded coordinator), read back with the SDK's
in-memory exporter and reader: spans and metrics named and attributed as the messaging semantic
conventions say, a producer's context carried to the consumer, scale-out, a member SIGKILLed, a
commit refused, lag and lag in time."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.trace import SpanKind  # noqa: E402

from groupclient import GroupConsumer  # noqa: E402
from groupclient.testing.cluster import GroupclientCluster  # noqa: E402
from tests.integration.peers import Peer  # noqa: E402
from tests.otel_checks import SdkTelemetry as Telemetry  # noqa: E402
from tests.otel_checks import check_attributes, produce_with_context  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    t = Telemetry()
    yield t
    t.close()


@pytest.fixture
def cluster() -> Iterator[GroupclientCluster]:
    with GroupclientCluster(nodes=1, group_initial_rebalance_delay_ms=0) as c:
        yield c


def consumer(cluster: GroupclientCluster, telemetry: Telemetry, *topics: str, **config: Any) -> GroupConsumer:
    settings: dict[str, Any] = dict(bootstrap_servers=cluster.bootstrap_servers, group_id="otel",
                                    auto_offset_reset="earliest", session_timeout_ms=6000, heartbeat_interval_ms=300,
                                    fetch_max_wait_ms=100, client_id="otel-test",
                                    tracer_provider=telemetry.tracer_provider,
                                    meter_provider=telemetry.meter_provider)
    settings.update(config)
    if settings.get("group_protocol") == "consumer":  # the broker sets both under KIP-848
        del settings["session_timeout_ms"], settings["heartbeat_interval_ms"]
    return GroupConsumer(*topics, **settings)


def poll_until(consumers: list[GroupConsumer], done: Any, timeout_s: float = 30.0) -> list[Any]:
    """Poll each consumer in turn (one thread owns them all) until ``done()``; the records."""
    records: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "timed out"
        for c in consumers:
            for batch in c.poll(timeout_ms=100).values():
                records.extend(batch)
    return records


def test_poll_and_process_spans_carry_the_conventions_and_link_to_the_producer(
        cluster: GroupclientCluster, telemetry: Telemetry) -> None:
    cluster.create_topic("traced", 2)
    sent = produce_with_context(cluster.bootstrap_servers, telemetry.tracer_provider, "traced", 10, 2)
    c = consumer(cluster, telemetry, "traced", consumer_timeout_ms=5000)
    app = telemetry.tracer_provider.get_tracer("app")
    handled: list[tuple[int, int]] = []
    try:
        for record in c:
            with app.start_as_current_span("handle") as child:
                handled.append((record.partition, record.offset))
                assert child.parent is not None
            if len(handled) == 10:
                break
    finally:
        c.close()
    receives = telemetry.spans("poll ")
    processes = telemetry.spans("process ")
    assert receives and sum(s.attributes["messaging.batch.message_count"] for s in receives) == 10
    for span in receives:
        assert span.name == "poll traced" and span.kind is SpanKind.CLIENT
        check_attributes(span.attributes)
        assert span.attributes["messaging.operation.type"] == "receive"
        assert span.attributes["messaging.operation.name"] == "poll"
        assert span.attributes["messaging.consumer.group.name"] == "otel"
        assert span.attributes["messaging.destination.name"] == "traced"
        assert [link.context.span_id for link in span.links] == [sent.span_id]
    assert sorted((int(s.attributes["messaging.destination.partition.id"]), s.attributes["messaging.kafka.offset"])
                  for s in processes) == sorted(handled)
    for span in processes:
        assert span.name == "process traced" and span.kind is SpanKind.CONSUMER
        check_attributes(span.attributes)
        assert span.attributes["messaging.operation.type"] == "process"
        assert span.attributes["messaging.kafka.message.key"] == f"k{span.attributes['messaging.kafka.offset'] * 2 + int(span.attributes['messaging.destination.partition.id'])}"
        assert [link.context.trace_id for link in span.links] == [sent.trace_id]
    # the application's span is a child of the process span it ran in
    by_id = {s.context.span_id: s for s in processes}
    children = telemetry.spans("handle")
    assert len(children) == 10 and all(s.parent is not None and s.parent.span_id in by_id for s in children)
    metrics = telemetry.metrics()
    consumed = {(a["messaging.destination.partition.id"], a["messaging.operation.name"]): v
                for a, v in metrics["messaging.client.consumed.messages"]}
    assert consumed == {("0", "poll"): 5, ("1", "poll"): 5}
    assert sum(count for _, count in metrics["messaging.process.duration"]) >= 9
    for name, series in metrics.items():
        for attributes, _ in series:
            check_attributes(attributes)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_scale_out_is_a_rebalance_span_and_the_gauges_follow(cluster: GroupclientCluster, telemetry: Telemetry,
                                                             protocol: str) -> None:
    cluster.create_topic("grow", 4)
    cluster.produce("grow", [b"x"] * 40)
    first = consumer(cluster, telemetry, "grow", enable_auto_commit=False, group_protocol=protocol)
    second: GroupConsumer | None = None
    try:
        poll_until([first], lambda: len(first.assignment()) == 4)
        second = consumer(cluster, telemetry, "grow", enable_auto_commit=False, client_id="otel-second",
                          group_protocol=protocol)
        poll_until([first, second], lambda: len(first.assignment()) == 2 and len(second.assignment()) == 2)
        # each has its partitions' positions (and so a lag) once it fetched from them
        poll_until([first, second], lambda: len(telemetry.metrics().get("groupclient.consumer.lag", [])) == 4)
        metrics = telemetry.metrics()
    finally:
        for c in (first, second):
            if c is not None:
                c.close()
    rebalances = telemetry.spans("rebalance ")
    first_ones = [s for s in rebalances if s.attributes["messaging.client.id"] == "otel-test"]
    assert [s.attributes["groupclient.rebalance.assigned_count"] for s in first_ones][:1] == [4]
    scaled = first_ones[-1]
    assert scaled.name == "rebalance otel" and scaled.attributes["groupclient.rebalance.owned_count"] == 2
    if protocol == "classic":
        assert scaled.attributes["groupclient.rebalance.protocol"] == "eager"
        assert scaled.attributes["groupclient.rebalance.revoked_count"] == 4  # eager: all given up first
    else:  # KIP-848: only the two partitions that move are revoked
        assert scaled.attributes["groupclient.rebalance.protocol"] == "consumer"
        assert sum(s.attributes["groupclient.rebalance.revoked_count"] for s in first_ones) == 2
    assert scaled.attributes["groupclient.rebalance.reason"]
    assert scaled.end_time >= scaled.start_time
    assigned = {a["messaging.client.id"]: v for a, v in metrics["groupclient.consumer.assigned_partitions"]}
    assert assigned == {"otel-test": 2, "otel-second": 2}
    durations = metrics["groupclient.consumer.rebalance.duration"]
    assert {a["groupclient.rebalance.reason"] for a, _ in durations} >= {first_ones[0].attributes[
        "groupclient.rebalance.reason"]}
    # the lag gauge covers the partitions each owns, and nothing else
    lags = sorted((a["messaging.client.id"], a["messaging.destination.partition.id"])
                  for a, _ in metrics["groupclient.consumer.lag"])
    assert len(lags) == 4 and len({p for _, p in lags}) == 4


def test_a_member_sigkilled_shows_as_a_rebalance_of_the_survivor(cluster: GroupclientCluster,
                                                                  telemetry: Telemetry) -> None:
    cluster.create_topic("killed", 4)
    cluster.produce("killed", [b"x"] * 8)
    peer = Peer("groupclient", cluster.bootstrap_servers, "otel", "killed", session_ms=6000)
    survivor = consumer(cluster, telemetry, "killed", enable_auto_commit=False)
    try:
        poll_until([survivor], lambda: len(survivor.assignment()) == 2 and len(peer.assignment) == 2, 40)
        peer.kill()
        poll_until([survivor], lambda: len(survivor.assignment()) == 4, 40)
    finally:
        peer.kill()
        survivor.close()
    last = telemetry.spans("rebalance ")[-1]
    assert last.attributes["groupclient.rebalance.owned_count"] == 4
    assert last.attributes["groupclient.rebalance.assigned_count"] >= 2
    metrics = telemetry.metrics()
    assert sum(count for _, count in metrics["groupclient.consumer.rebalance.duration"]) >= 2


def test_a_refused_commit_is_a_commit_duration_with_its_error_type(cluster: GroupclientCluster,
                                                                    telemetry: Telemetry) -> None:
    cluster.create_topic("refused", 1)
    cluster.produce("refused", [b"x"] * 5)
    c = consumer(cluster, telemetry, "refused", enable_auto_commit=False)
    try:
        poll_until([c], lambda: bool(c.assignment()) and c.position(next(iter(c.assignment()))) == 5)
        c.commit()
        cluster.fail("OffsetCommit", "OFFSET_METADATA_TOO_LARGE")
        with pytest.raises(Exception):
            c.commit()
        metrics = telemetry.metrics()
    finally:
        c.close(autocommit=False)
    commits = [(a, count) for a, count in metrics["messaging.client.operation.duration"]
               if a["messaging.operation.name"] == "commit"]
    assert {a.get("error.type") for a, _ in commits} == {None, "OFFSET_METADATA_TOO_LARGE"}
    for attributes, _ in commits:
        assert attributes["messaging.operation.type"] == "settle"
        check_attributes(attributes)


def test_lag_in_time_is_the_age_of_the_last_consumed_record_until_caught_up(
        cluster: GroupclientCluster, telemetry: Telemetry) -> None:
    cluster.create_topic("aged", 1)
    minute_ago = int(time.time() * 1000) - 60_000
    cluster.produce("aged", [b"x"] * 10, timestamp_ms=minute_ago)
    c = consumer(cluster, telemetry, "aged", enable_auto_commit=False, max_poll_records=4)
    try:
        got = poll_until([c], lambda: False if not c.assignment() else c.position(next(iter(c.assignment()))) >= 4)
        assert len(got) == 4
        metrics = telemetry.metrics()
        (attributes, time_lag), = metrics["groupclient.consumer.time_lag"]
        (_, lag), = metrics["groupclient.consumer.lag"]
        assert lag == 6 and attributes["messaging.destination.partition.id"] == "0"
        assert 59 <= time_lag < 120
        poll_until([c], lambda: c.position(next(iter(c.assignment()))) == 10)
        metrics = telemetry.metrics()
        assert [v for _, v in metrics["groupclient.consumer.time_lag"]] == [0.0]
        assert [v for _, v in metrics["groupclient.consumer.lag"]] == [0]
    finally:
        c.close()
    # closed: its gauges are gone
    assert "groupclient.consumer.lag" not in telemetry.metrics() or not telemetry.metrics()["groupclient.consumer.lag"]


def test_without_a_provider_nothing_is_built(cluster: GroupclientCluster) -> None:
    cluster.create_topic("dark", 1)
    cluster.produce("dark", [b"x"] * 3)
    c = GroupConsumer("dark", bootstrap_servers=cluster.bootstrap_servers, group_id="dark",
                      auto_offset_reset="earliest", fetch_max_wait_ms=100)
    try:
        got = poll_until([c], lambda: bool(c.assignment()) and c.position(next(iter(c.assignment()))) == 3)
        assert len(got) == 3
        telemetry = c._observers.telemetry
        assert telemetry is not None  # the API is installed here: the object exists, idle
        assert telemetry._instruments is None and telemetry._tracer() is None
    finally:
        c.close()
