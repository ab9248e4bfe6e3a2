"""The parts of groupclient.spark that need no Spark: options, stop conditions, staging."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.consumer.fetcher import ConsumerRecord
from kafka.structs import TopicPartition

from groupclient.errors import ConfigurationError

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")  # groupclient.spark needs both: the spark extra

from groupclient.spark.arrow import records_to_table  # noqa: E402
from groupclient.spark.options import consumer_config, parse_options  # noqa: E402
from groupclient.spark.staging import FileRanges, Staging, overlapping  # noqa: E402
from groupclient.spark.stop import Progress, StopWhen  # noqa: E402


def record(partition: int, offset: int) -> Any:
    return ConsumerRecord("t", partition, -1, offset, 1_700_000_000_000 + offset, 0, b"k", b"v", [("h", b"1")],
                          None, 1, 1, 1)


def test_options_are_converted_to_the_settings_types() -> None:
    topics, config = parse_options({"subscribe": "b, a", "kafka.bootstrap.servers": "127.0.0.1:9",
                                    "group.id": "g", "session_timeout_ms": "6000", "check_crcs": "false",
                                    "partition_assignment_strategy": "cooperative-sticky",
                                    "max_records_per_trigger": "10"})
    assert topics == ["a", "b"]
    assert config["session_timeout_ms"] == 6000 and config["check_crcs"] is False
    assert config["partition_assignment_strategy"] == ("cooperative-sticky",)
    assert config["enable_auto_commit"] is False and "max_records_per_trigger" not in config


def test_the_group_protocol_passes_through_and_is_checked_on_the_driver() -> None:
    _, config = parse_options({"topics": "t", "group.id": "g", "group.protocol": "consumer",
                               "group.remote.assignor": "uniform"})
    assert (config["group_protocol"], config["group_remote_assignor"]) == ("consumer", "uniform")
    with pytest.raises(ConfigurationError, match="session_timeout_ms cannot be set when group_protocol='consumer'"):
        parse_options({"topics": "t", "group.id": "g", "group.protocol": "consumer", "session.timeout.ms": "6000"})


@pytest.mark.parametrize("options, message", [
    ({"group_id": "g"}, "needs the option 'topics'"),
    ({"topics": "t", "group_id": "g", "session_timeout_ms": "soon"}, "session_timeout_ms must be an integer"),
    ({"topics": "t", "group_id": "g", "check_crcs": "maybe"}, "must be true or false"),
    ({"topics": "t", "group_id": "g", "colour": "red"}, "unknown option 'colour'"),
    ({"topics": "t"}, "group_id is required"),
    ({"topics": "t", "group_id": "g", "enable_auto_commit": "true"}, "enable_auto_commit must be False"),
])
def test_bad_options_name_what_is_wrong(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        parse_options(options)


def test_settings_that_cannot_travel_as_plain_data_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="value_deserializer cannot be used"):
        consumer_config({"group_id": "g", "value_deserializer": bytes.decode})
    with pytest.raises(ConfigurationError, match="share one static identity"):
        consumer_config({"group_id": "g", "group_instance_id": "spark-1"})
    with pytest.raises(ConfigurationError, match=r"heartbeat_interval_ms \(50000\) must be lower"):
        consumer_config({"group_id": "g", "heartbeat_interval_ms": 50_000})


def _must_not_run() -> None:
    raise AssertionError("otel_setup is called on the executors, never on the driver")


SETUP_CALLS: list[int] = []


def _count_setup() -> None:
    SETUP_CALLS.append(1)


@pytest.mark.parametrize("value", ["setup", "pkg.module", "pkg.module:", ":setup", "a:b:c", "1pkg:setup",
                                   "pkg..module:setup", "pkg.module:setup()", " pkg:setup", 42])
def test_an_otel_setup_not_of_the_form_module_function_is_refused_on_the_driver(value: Any) -> None:
    with pytest.raises(ConfigurationError, match="otel_setup must be 'package.module:function'"):
        consumer_config({"group_id": "g", "otel_setup": value})


def test_otel_setup_is_checked_on_the_driver_as_far_as_it_imports_there_and_never_called(
        caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ConfigurationError, match="json has no no_such_function"):
        consumer_config({"group_id": "g", "otel_setup": "json:no_such_function"})
    with pytest.raises(ConfigurationError, match="__name__ is not a function"):
        consumer_config({"group_id": "g", "otel_setup": "json:__name__"})
    here = f"{__name__}:_must_not_run"
    assert consumer_config({"group_id": "g", "otel_setup": here})["otel_setup"] == here
    # a module only the executors have (--py-files, their image) is let through with a warning
    with caplog.at_level("WARNING", logger="groupclient.spark"):
        config = consumer_config({"group_id": "g", "otel_setup": "only_on_executors.telemetry:setup"})
    assert config["otel_setup"] == "only_on_executors.telemetry:setup"
    assert "the executors must be able to import it" in caplog.text
    _, options = parse_options({"topics": "t", "group.id": "g", "otel.setup": here})
    assert options["otel_setup"] == here


@pytest.mark.parametrize("key", ["tracer_provider", "meter_provider"])
def test_provider_objects_are_refused_with_what_to_do_instead(key: str) -> None:
    with pytest.raises(ConfigurationError, match=f"{key} cannot be used with groupclient.spark: a provider object "
                                                 "cannot travel to the executors. Set otel_setup="):
        consumer_config({"group_id": "g", key: object()})
    assert consumer_config({"group_id": "g", key: None})[key] is None


def test_executors_call_otel_setup_once_per_process_and_build_consumers_without_it() -> None:
    from groupclient.spark.options import without_group
    from groupclient.spark.telemetry import executor_settings

    config = consumer_config({"group_id": "g", "otel_setup": f"{__name__}:_count_setup"})
    settings = executor_settings(config)
    assert executor_settings(config) == settings and "otel_setup" not in settings
    assert SETUP_CALLS == [1]
    assert "otel_setup" not in without_group(config)
    with pytest.raises(ConfigurationError, match="cannot be imported on this executor"):
        executor_settings({**config, "otel_setup": "only_on_the_driver.telemetry:setup"})


def test_a_member_task_is_a_span_current_while_it_runs_that_ends_with_the_report_or_the_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from groupclient.otel import semconv as names
    from groupclient.otel.providers import Instrumentation
    from groupclient.spark import telemetry
    from groupclient.spark.member_loop import MemberReport

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(telemetry, "Instrumentation", lambda: Instrumentation(tracer_provider=provider))
    report = MemberReport(1, 0)
    with pytest.raises(RuntimeError, match="the handler failed"):
        with telemetry.member_task("billing", telemetry.task_attributes(1, 0, 7), report.span_attributes):
            assert trace.get_current_span().get_span_context().is_valid, "the member's span is current"
            report.records, report.commits = 30, 2
            raise RuntimeError("the handler failed")
    (span,) = exporter.get_finished_spans()
    assert span.name == "spark member billing" and span.kind == trace.SpanKind.INTERNAL
    assert span.attributes is not None and span.status.status_code == trace.StatusCode.ERROR
    assert {key: span.attributes[key] for key in (names.SPARK_PARTITION_ID, names.SPARK_ATTEMPT, names.SPARK_STAGE_ID,
                                                  names.SPARK_RECORDS, names.SPARK_COMMITS, names.SPARK_OUTCOME,
                                                  names.ERROR_TYPE)} == \
        {names.SPARK_PARTITION_ID: 1, names.SPARK_ATTEMPT: 0, names.SPARK_STAGE_ID: 7, names.SPARK_RECORDS: 30,
         names.SPARK_COMMITS: 2, names.SPARK_OUTCOME: "error", names.ERROR_TYPE: "RuntimeError"}
    assert [event.name for event in span.events] == ["exception"]
    assert not trace.get_current_span().get_span_context().is_valid, "no longer current"
    assert names.SPARK_STAGE_ID not in telemetry.task_attributes(0, 0, None), "no stage outside Spark"


def test_stop_conditions_decide_on_the_injected_time() -> None:
    with pytest.raises(ConfigurationError):
        StopWhen()
    idle = StopWhen(idle_ms=1000)
    progress = Progress(records=0, last_record_ms=5000)
    assert idle.reason(progress, now_ms=5999, wall_ms=0) is None
    assert idle.reason(progress, now_ms=6000, wall_ms=0) == "no record for 1000 ms"
    assert idle.wait_ms(progress, now_ms=5800, wall_ms=0, longest_ms=500) == 200
    deadline = StopWhen(deadline=100.0, records=10)
    assert deadline.reason(Progress(9, 0), 0, wall_ms=99_999) is None
    assert deadline.reason(Progress(9, 0), 0, wall_ms=100_000) == "deadline reached"
    assert deadline.reason(Progress(10, 0), 0, wall_ms=0) == "delivered 10 records"
    assert StopWhen(at_end=True).reason(Progress(0, 0, at_end=True), 0, 0) == StopWhen.AT_END


def test_staged_files_carry_their_ranges_and_overlaps_are_found(tmp_path: Any) -> None:
    staging = Staging(str(tmp_path / "read"))
    staging.create()
    staging.write(records_to_table([record(0, o) for o in range(0, 10)] + [record(1, 0)]), "a.parquet")
    staging.write(records_to_table([record(0, o) for o in range(10, 20)]), "b.parquet")
    files = staging.files()
    assert [f.name for f in files] == ["a.parquet", "b.parquet"]
    assert files[0].ranges == {("t", 0): (0, 9), ("t", 1): (0, 0)}
    assert overlapping(files) == []
    # a task that staged offsets 15..24 and died before committing them: the next owner staged 15.. again
    files.append(FileRanges("c.parquet", {("t", 0): (15, 24)}))
    assert overlapping(files) == [("t", 0, "b.parquet", "c.parquet")]
    assert not list(tmp_path.glob("read/.*")), "no hidden half-written file is left behind"


def test_a_micro_batch_limit_is_shared_out_and_never_exceeded() -> None:
    from groupclient.spark.datasource import _within

    a, b, c = (TopicPartition("t", p) for p in range(3))
    ends = _within(10, {a: 0, b: 0, c: 100}, {a: 2, b: 50, c: 200})
    assert sum(ends[tp] - start for tp, start in {a: 0, b: 0, c: 100}.items()) == 10
    assert ends[a] == 2, "a partition with fewer than its share leaves the rest to the others"
    assert _within(10, {a: 5}, {a: 5}) == {a: 5}


def test_pending_records_make_one_file_per_size_or_age_and_lost_partitions_are_dropped() -> None:
    from groupclient.spark.arrow import records_to_batch
    from groupclient.spark.staging import PendingFile

    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    pending = PendingFile(file_bytes=10_000, file_ms=5000)
    assert not pending.due(0) and pending.empty()
    pending.add(a, records_to_batch([record(0, o) for o in range(0, 10)]), 10, now_ms=1000)
    pending.add(b, records_to_batch([record(1, o) for o in range(5, 8)]), 8, now_ms=1200)
    pending.add(a, records_to_batch([record(0, o) for o in range(10, 20)]), 20, now_ms=1400)
    assert not pending.due(5999), "neither big nor old enough"
    assert pending.due(6000), "the oldest pending record waited file_ms"
    table, ranges, offsets = pending.take()
    assert table is not None and table.num_rows == 23 and pending.empty()
    assert ranges == {("t", 0): (0, 19), ("t", 1): (5, 7)} and offsets == {a: 20, b: 8}
    pending.add(a, records_to_batch([record(0, o) for o in range(20, 400)]), 400, now_ms=7000)
    assert pending.due(7000), "big enough"
    pending.forget({a})
    assert pending.empty() and pending.take() == (None, {}, {})
    pending.add(b, None, 9, now_ms=8000)  # no record, an offset to commit (past the read's end)
    assert pending.take() == (None, {}, {b: 9})


def test_a_read_bounded_by_end_offsets_commits_the_end_but_never_moves_the_group_back() -> None:
    from groupclient.consumer.columns import decode_columns
    from groupclient.spark.member_loop import _bounded
    from tests.unit.test_record_decoding import batch

    a, b, c, new = (TopicPartition("t", p) for p in range(4))

    def polled(base: int, count: int) -> Any:
        columns, _ = decode_columns(batch(base, [(b"k", b"v", [])] * count), base, "t", 0, True)
        return [columns]

    records, offsets, done = _bounded({a: polled(0, 10), b: polled(5, 3), c: polled(30, 5), new: polled(0, 2)},
                                      {a: 4, b: 20, c: 20})
    assert [int(o) for o in records[a][0].offsets] == [0, 1, 2, 3], "cut at the end"
    assert offsets[a] == 4 and a in done
    assert offsets[b] == 8 and b not in done, "not at its end yet"
    # another member consumed c past the read's end since the ends were taken: nothing of c is
    # this read's, and committing 20 would move the group back from 30
    assert c not in records and c not in offsets and c in done
    assert new in done and new not in offsets, "a partition created after the read started is not read"
