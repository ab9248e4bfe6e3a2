"""groupclient.otel and the consumer's telemetry without a broker: every name against the
semantic-conventions package, the cost when OpenTelemetry is absent or has no provider, and the
lag-in-time arithmetic on a fake clock."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.semconv._incubating.attributes import messaging_attributes as conventions  # noqa: E402
from opentelemetry.semconv._incubating.metrics import messaging_metrics  # noqa: E402

from groupclient import GroupConsumer, TopicPartition  # noqa: E402
from groupclient.clock import FakeClock  # noqa: E402
from groupclient.consumer.telemetry import ConsumerTelemetry, error_type, message_key  # noqa: E402
from groupclient.errors import ConfigurationError  # noqa: E402
from groupclient.otel import semconv as ours  # noqa: E402
from groupclient.otel.providers import Instrumentation  # noqa: E402
from tests.otel_checks import points  # noqa: E402

NO_BROKER = dict(bootstrap_servers="127.0.0.1:9", api_version=(2, 5))  # api_version: no bootstrap round trip


def test_every_convention_name_is_the_conventions_own() -> None:
    """Each name semconv.py borrows is spelled as the installed conventions spell it."""
    for name in dir(ours):
        value = getattr(ours, name)
        if name.isupper() and isinstance(value, str) and value.startswith(("messaging.", "error.")):
            if name == "ERROR_TYPE":
                from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE
                assert value == ERROR_TYPE
            elif hasattr(conventions, name):
                assert value == getattr(conventions, name), name
            else:
                assert value == getattr(messaging_metrics, name), name
    operation_types = {v.value for v in conventions.MessagingOperationTypeValues}
    assert {ours.RECEIVE, ours.PROCESS, ours.SETTLE} <= operation_types
    assert ours.KAFKA == conventions.MessagingSystemValues.KAFKA.value


def test_what_the_conventions_lack_is_named_under_groupclient() -> None:
    borrowed = ("MESSAGING_", "ERROR_", "KAFKA", "POLL", "PROCESS", "COMMIT", "RECEIVE", "SETTLE", "DURATION_BUCKETS",
                "INSTRUMENTATION_SCOPE", "REBALANCE_SPAN")
    own = {name: getattr(ours, name) for name in dir(ours)
           if name.isupper() and not name.startswith(borrowed)}
    assert own and all(value.startswith("groupclient.") for value in own.values()), own


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)


def test_without_the_api_installed_nothing_of_opentelemetry_is_imported() -> None:
    result = run_python("""
        import sys
        sys.modules["opentelemetry"] = None  # as if groupclient[otel] were not installed
        from groupclient import GroupConsumer
        from groupclient.errors import ConfigurationError
        consumer = GroupConsumer(bootstrap_servers="127.0.0.1:9", api_version=(2, 5), group_id="g")
        assert consumer._observers.telemetry is None
        consumer.close()
        try:
            GroupConsumer(bootstrap_servers="127.0.0.1:9", api_version=(2, 5), tracer_provider=object())
        except ConfigurationError as exc:
            print("refused:", exc)
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry") and sys.modules[m] is not None))
    """)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "[]"
    assert lines[0].startswith("refused: tracer_provider must be an OpenTelemetry TracerProvider")


def test_a_provider_needs_the_api_and_must_be_a_provider() -> None:
    with pytest.raises(ConfigurationError, match="meter_provider must be an OpenTelemetry MeterProvider"):
        GroupConsumer(**NO_BROKER, meter_provider="prometheus")


def test_with_the_api_but_no_provider_there_is_no_tracer_and_no_meter() -> None:
    instrumentation = Instrumentation()
    # this process never sets a global provider (tests pass theirs explicitly)
    assert instrumentation.tracer() is None and instrumentation.meter() is None


def telemetry_on(clock: FakeClock, lags: dict[TopicPartition, int]) -> tuple[ConsumerTelemetry, InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    telemetry = ConsumerTelemetry(Instrumentation(meter_provider=MeterProvider(metric_readers=[reader])), "g", "c",
                                  lambda: dict(lags), lambda: set(lags), wall_ms=clock.wall_ms)
    return telemetry, reader


def test_lag_in_time_is_zero_when_caught_up_and_grows_while_behind() -> None:
    clock = FakeClock()
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    lags = {tp0: 5, tp1: 0}
    telemetry, reader = telemetry_on(clock, lags)
    assert telemetry._metrics() is not None
    telemetry._last_timestamp_ms.update({tp0: clock.wall_ms() - 2_000, tp1: clock.wall_ms() - 9_000})
    clock.advance(1_500)

    def time_lags() -> dict[str, float]:
        return {a["messaging.destination.partition.id"]: v
                for a, v in points(reader.get_metrics_data())["groupclient.consumer.time_lag"]}

    assert time_lags() == {"0": 3.5, "1": 0.0}
    clock.advance(10_000)
    assert time_lags() == {"0": 13.5, "1": 0.0}
    del lags[tp0]  # revoked: no longer reported, and forgotten
    assert time_lags() == {"1": 0.0}
    assert tp0 not in telemetry._last_timestamp_ms
    telemetry.close()
    assert "groupclient.consumer.time_lag" not in points(reader.get_metrics_data())


def test_a_partition_behind_with_nothing_consumed_yet_has_no_time_lag() -> None:
    telemetry, reader = telemetry_on(FakeClock(), {TopicPartition("t", 0): 7})
    telemetry._metrics()
    found = points(reader.get_metrics_data())
    assert [v for _, v in found["groupclient.consumer.lag"]] == [7]
    assert "groupclient.consumer.time_lag" not in found


def test_error_types_and_message_keys() -> None:
    from groupclient.errors import CommitFailedError, RebalanceInProgressError

    assert error_type(RebalanceInProgressError("x")) == "REBALANCE_IN_PROGRESS"
    assert error_type(CommitFailedError("moved")) == "CommitFailedError"
    assert error_type(TimeoutError()) == "TimeoutError"
    assert message_key("k") == "k" and message_key(b"k1") == "k1"
    assert message_key(b"\xff\xfe") is None and message_key(None) is None and message_key(7) is None


def test_a_closed_consumer_keeps_its_final_totals_and_drops_its_gauges() -> None:
    """A provider flushed after close() (a shutdown, a Spark task's end) still gets the last polls."""
    tp = TopicPartition("t", 0)
    telemetry, reader = telemetry_on(FakeClock(), {tp: 3})
    instruments = telemetry._metrics()
    assert instruments is not None
    telemetry._record_poll(instruments, {tp: 5}, {tp: 0}, 900)
    telemetry.close()
    found = points(reader.get_metrics_data())
    assert [v for _, v in found["messaging.client.consumed.messages"]] == [5]
    assert [v for _, v in found["groupclient.consumer.consumed.bytes"]] == [900]
    assert not found.get("groupclient.consumer.lag") and not found.get("groupclient.consumer.assigned_partitions")


def test_closed_consumers_totals_add_up_with_the_live_ones_of_the_same_attributes() -> None:
    """Two consumers with the same client_id, group and partition (one after the other): the
    counter is their sum, also once both are closed and garbage collected."""
    import gc

    tp = TopicPartition("t", 0)
    reader = InMemoryMetricReader()
    instrumentation = Instrumentation(meter_provider=MeterProvider(metric_readers=[reader]))

    def consumer() -> ConsumerTelemetry:
        return ConsumerTelemetry(instrumentation, "g", "c", lambda: {tp: 0}, lambda: {tp}, wall_ms=FakeClock().wall_ms)

    def consumed() -> list[float]:
        return [v for _, v in points(reader.get_metrics_data()).get("messaging.client.consumed.messages", [])]

    first, second = consumer(), consumer()
    for telemetry, count in ((first, 5), (second, 7)):
        instruments = telemetry._metrics()
        assert instruments is not None
        telemetry._record_poll(instruments, {tp: count}, {}, 100)
    assert consumed() == [12]
    first.close()
    assert consumed() == [12]
    second._record_poll(instruments, {tp: 1}, {}, 100)
    second.close()
    del first, second
    gc.collect()
    assert consumed() == [13]


def test_a_poll_span_links_the_first_producer_context_among_its_first_records() -> None:
    """Records from several producers: the poll span links the first context found (a record
    without headers, or with a broken traceparent, is passed over); a context only beyond the
    first RECEIVE_LINKS_SCAN records is not looked for.  Iteration links every record instead."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from groupclient.consumer.telemetry import RECEIVE_LINKS_SCAN
    from groupclient.structs import ConsumerRecord

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = ConsumerTelemetry(Instrumentation(tracer_provider=provider), "g", "c", dict, set)

    def traceparent(n: int) -> list[tuple[str, bytes]]:
        return [("traceparent", b"00-%032x-%016x-01" % (n, n))]

    def record(offset: int, headers: list[tuple[str, bytes]]) -> ConsumerRecord:
        return ConsumerRecord("t", 0, 0, offset, 0, 0, None, b"v", headers, None, -1, 1, -1)

    def links_of_a_poll(headers: list[list[tuple[str, bytes]]]) -> list[int]:
        exporter.clear()
        telemetry.on_poll({TopicPartition("t", 0): [record(i, h) for i, h in enumerate(headers)]}, 0, 10)
        (span,) = exporter.get_finished_spans()
        return [link.context.span_id for link in span.links]

    assert links_of_a_poll([[], [("traceparent", b"00-broken")], traceparent(7), traceparent(8)]) == [7]
    assert links_of_a_poll([[]] * RECEIVE_LINKS_SCAN + [traceparent(9)]) == []
    assert links_of_a_poll([traceparent(3), traceparent(3)]) == [3]
