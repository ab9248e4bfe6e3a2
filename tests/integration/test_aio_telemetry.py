"""AsyncGroupConsumer's OpenTelemetry on a real group (embedded coordinator), read back with the
SDK's in-memory exporter and reader, each test with providers of its own (no global provider is
ever set): receive, process and rebalance spans made on the event loop in the application's
context and linked to the producer's, metrics from the consumer thread, and a stop() that ends
the process span the application holds."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Awaitable, Iterator
from typing import Any, TypeVar

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace  # noqa: E402
from opentelemetry.context import Context  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor  # noqa: E402
from opentelemetry.trace import SpanKind  # noqa: E402

from groupclient.aio import AsyncGroupConsumer  # noqa: E402
from groupclient.aio.structs import TopicPartition  # noqa: E402
from groupclient.coordinator import EmbeddedCluster  # noqa: E402
from tests.otel_checks import SdkTelemetry, produce_with_context  # noqa: E402

pytestmark = pytest.mark.integration

T = TypeVar("T")
BOUND_S = 40  # every test's asyncio part ends within this


class ThreadsOfEnd(SpanProcessor):
    """Which thread ended each span (span processors run on the ending thread)."""

    def __init__(self) -> None:
        self.ended: list[tuple[str, int]] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.ended.append((span.name, threading.get_ident()))

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass


class Telemetry(SdkTelemetry):
    """The SDK providers of one test (tests/otel_checks.py), and which thread ended each span."""

    def __init__(self) -> None:
        self.threads = ThreadsOfEnd()
        super().__init__(self.threads)


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    t = Telemetry()
    yield t
    t.close()


def consumer(cluster: EmbeddedCluster, telemetry: Telemetry, topic: str, group: str, **config: Any) -> AsyncGroupConsumer:
    settings: dict[str, Any] = dict(bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                                    client_id=f"{group}-client", auto_offset_reset="earliest",
                                    session_timeout_ms=6000, heartbeat_interval_ms=300, fetch_max_wait_ms=100,
                                    tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider)
    settings.update(config)
    return AsyncGroupConsumer(topic, **settings)


async def bounded(step: Awaitable[T]) -> T:
    return await asyncio.wait_for(step, BOUND_S)


def current_name() -> str | None:
    """The name of the span current in this task (None when there is none)."""
    return getattr(trace.get_current_span(), "name", None)


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def check_common(span: ReadableSpan, group: str, topic: str) -> None:
    attributes = span.attributes
    assert attributes is not None
    assert attributes["messaging.system"] == "kafka"
    assert attributes["messaging.consumer.group.name"] == group
    assert attributes["messaging.client.id"] == f"{group}-client"
    assert attributes["messaging.destination.name"] == topic


@pytest.mark.asyncio
async def test_async_for_makes_receive_and_process_spans_in_the_callers_context(
        quick_sessions: EmbeddedCluster, telemetry: Telemetry) -> None:
    """Per record of ``async for``: a receive span (getone()) and a process span, both children of
    the application's span around the loop, linked to the producer's span; the process span is
    current in the body (the application's span there is its child) and ended by the next
    ``__anext__`` (the last one by stop()); rebalance spans come through the loop too, with the
    user's rebalance_event_callback; no span is ended on another thread than the loop's; the
    consumer thread's metrics count the records per partition and report the lag."""
    topic, group = "aio-traced", "aio-otel"
    quick_sessions.create_topic(topic, 2)
    sent = produce_with_context(quick_sessions.bootstrap_servers, telemetry.tracer_provider, topic, 10, 2)
    loop_thread = threading.get_ident()
    events: list[Any] = []
    c = consumer(quick_sessions, telemetry, topic, group, rebalance_event_callback=events.append)
    handled: list[tuple[int, int, str | None]] = []

    async def run() -> dict[str, list[tuple[dict[str, Any], Any]]]:
        async with c:
            async for record in c:
                with telemetry.app.start_as_current_span("handle"):
                    pass
                handled.append((record.partition, record.offset, current_name()))
                if len(handled) == 10:
                    break
            # break left the last record's span current (as GroupConsumer's for loop does)...
            assert current_name() == f"process {topic}"
            metrics = telemetry.metrics()  # the gauges are reported while the consumer runs
        assert current_name() == "worker"  # ...until stop(), in this task, ended and un-set it
        return metrics

    with telemetry.app.start_as_current_span("worker") as worker:
        metrics = await bounded(run())
    assert current_name() is None
    worker_id = worker.get_span_context().span_id

    assert sorted((p, o) for p, o, _ in handled) == sorted((p, o) for p in range(2) for o in range(5))
    assert {name for _, _, name in handled} == {f"process {topic}"}
    receives, processes = telemetry.spans("poll "), telemetry.spans("process ")
    assert len(receives) == 10 and len(processes) == 10
    for span in receives:
        assert span.name == f"poll {topic}" and span.kind is SpanKind.CLIENT
        check_common(span, group, topic)
        assert span.attributes is not None
        assert span.attributes["messaging.operation.name"] == "poll"
        assert span.attributes["messaging.operation.type"] == "receive"
        assert span.attributes["messaging.batch.message_count"] == 1
        assert span.attributes["messaging.destination.partition.id"] in ("0", "1")
        assert [link.context.span_id for link in span.links] == [sent.span_id]
        assert parent_id(span) == worker_id
    for span in processes:
        assert span.name == f"process {topic}" and span.kind is SpanKind.CONSUMER
        check_common(span, group, topic)
        assert span.attributes is not None
        assert span.attributes["messaging.operation.name"] == "process"
        assert span.attributes["messaging.operation.type"] == "process"
        assert [(link.context.trace_id, link.context.span_id) for link in span.links] == [
            (sent.trace_id, sent.span_id)]
        assert parent_id(span) == worker_id
    assert sorted((int(str(s.attributes["messaging.destination.partition.id"])), s.attributes["messaging.kafka.offset"])
                  for s in processes if s.attributes is not None) == sorted((p, o) for p, o, _ in handled)
    # one process span open at a time: each ended before the next began
    ordered = sorted(processes, key=lambda s: s.start_time or 0)
    assert all((a.end_time or 0) <= (b.start_time or 0) for a, b in zip(ordered, ordered[1:]))
    # the application's spans are children of the process span they ran in
    by_id = {s.context.span_id: s for s in processes if s.context is not None}
    children = telemetry.spans("handle")
    assert len(children) == 10 and all(parent_id(s) in by_id for s in children)

    rebalances = telemetry.spans("rebalance ")
    assert rebalances and events and len(rebalances) == len(events)
    first = rebalances[0]
    assert first.name == f"rebalance {group}" and first.kind is SpanKind.INTERNAL
    assert first.attributes is not None and first.attributes["groupclient.rebalance.assigned_count"] == 2
    assert first.attributes["groupclient.member.id"] == events[0].member_id
    assert first.parent is None  # no application span caused it

    assert {thread for _, thread in telemetry.threads.ended} == {loop_thread}, telemetry.threads.ended

    consumed = {a["messaging.destination.partition.id"]: v for a, v in metrics["messaging.client.consumed.messages"]}
    assert consumed == {"0": 5, "1": 5}
    assert all(a["messaging.consumer.group.name"] == group for a, _ in metrics["messaging.client.consumed.messages"])
    lags = {a["messaging.destination.partition.id"]: v for a, v in metrics["groupclient.consumer.lag"]}
    assert lags == {"0": 0, "1": 0}
    assert sum(count for _, count in metrics["messaging.process.duration"]) >= 9
    assert {a["messaging.destination.partition.id"] for a, _ in metrics["groupclient.consumer.time_lag"]} == {"0", "1"}
    after = telemetry.metrics()
    assert sum(count for _, count in after["groupclient.consumer.rebalance.duration"]) == len(events)
    assert not after.get("groupclient.consumer.lag")  # stopped: no gauges any more


@pytest.mark.asyncio
async def test_getmany_is_a_receive_span_from_the_call_to_its_answer(
        quick_sessions: EmbeddedCluster, telemetry: Telemetry) -> None:
    topic, group = "aio-batches", "aio-otel-batches"
    quick_sessions.create_topic(topic, 1)
    quick_sessions.produce(topic, [b"b%d" % i for i in range(12)])
    c = consumer(quick_sessions, telemetry, topic, group, enable_auto_commit=False)
    calls: list[tuple[int, int, int]] = []  # (started ns, returned ns, records)

    async def run() -> None:
        async with c:
            got = 0
            while got < 12:
                with telemetry.app.start_as_current_span("batch"):
                    started = time.time_ns()
                    batches = await c.getmany(timeout_ms=200, max_records=5)
                    count = sum(len(records) for records in batches.values())
                    calls.append((started, time.time_ns(), count))
                    got += count
            assert current_name() is None  # getmany() sets no span current

    await bounded(run())
    receives = telemetry.spans("poll ")
    answered = [call for call in calls if call[2]]
    assert [s.attributes["messaging.batch.message_count"] for s in receives if s.attributes is not None] == [
        count for _, _, count in answered]
    assert len(receives) >= 3  # 12 records, at most 5 a call
    batch_ids = {s.context.span_id for s in telemetry.spans("batch") if s.context is not None}
    for span, (started, returned, _) in zip(receives, answered):
        assert span.kind is SpanKind.CLIENT and span.name == f"poll {topic}"
        check_common(span, group, topic)
        assert span.attributes is not None and span.attributes["messaging.destination.partition.id"] == "0"
        assert span.attributes["messaging.operation.type"] == "receive"
        assert started <= (span.start_time or 0) <= (span.end_time or 0) <= returned
        assert parent_id(span) in batch_ids
        assert not span.links  # no producer context in these records' headers
    assert not telemetry.spans("process ")


@pytest.mark.asyncio
@pytest.mark.parametrize("where", ["the iterating task", "another task"])
async def test_stop_ends_the_process_span_the_application_holds(
        quick_sessions: EmbeddedCluster, telemetry: Telemetry, where: str) -> None:
    """stop() while the body of ``async for`` holds a record ends that record's process span at
    once, from whichever task; the iterating task's own context is restored (by stop() itself in
    that task, else by its next ``__anext__``, which ends the loop)."""
    topic = group = f"aio-otel-stop-{where.split()[0]}"
    quick_sessions.create_topic(topic, 1)
    quick_sessions.produce(topic, [b"s%d" % i for i in range(5)])
    c = consumer(quick_sessions, telemetry, topic, group)
    seen: list[int] = []

    async def run() -> None:
        await c.start()
        async for record in c:
            seen.append(record.offset)
            held = trace.get_current_span()
            assert getattr(held, "name", None) == f"process {topic}" and held.is_recording()
            if where == "the iterating task":
                await c.stop()
                assert current_name() is None  # un-set here, at once
            else:
                await asyncio.create_task(c.stop())
                assert current_name() == f"process {topic}"  # still this task's current span...
            assert not held.is_recording()  # ...but ended
            assert [s.name for s in telemetry.spans("process ")] == [f"process {topic}"]
        assert current_name() is None  # the next __anext__ ended the loop and restored the context

    await bounded(run())
    assert seen == [0]
    (process,) = telemetry.spans("process ")
    assert process.attributes is not None and process.attributes["messaging.kafka.offset"] == 0
    await c.stop()  # again: nothing more ends


@pytest.mark.asyncio
async def test_tasks_iterating_one_consumer_each_get_their_own_context_back(
        quick_sessions: EmbeddedCluster, telemetry: Telemetry) -> None:
    """Two tasks share one consumer's ``async for``: one process span is open at a time (a task
    taking a record ends the other's), each task's process spans are children of its own span,
    never of its previous process span, and each task ends with its own context back."""
    topic = group = "aio-otel-shared"
    quick_sessions.create_topic(topic, 2)
    quick_sessions.produce(topic, [b"w%d" % i for i in range(20)])
    c = consumer(quick_sessions, telemetry, topic, group)
    got: list[tuple[str, int, int]] = []
    restored: list[bool] = []

    async def worker(name: str) -> None:
        with telemetry.app.start_as_current_span(name):
            async for record in c:
                got.append((name, record.partition, record.offset))
                await asyncio.sleep(0.001)  # the other task takes one meanwhile
            restored.append(current_name() == name)

    async def run() -> None:
        await c.start()
        workers = [asyncio.create_task(worker(name)) for name in ("w1", "w2")]
        while len(got) < 20:
            await asyncio.sleep(0.01)
        await c.stop()  # from a third task
        await asyncio.gather(*workers)

    await bounded(run())
    assert sorted((p, o) for _, p, o in got) == sorted((p, o) for p in range(2) for o in range(10))
    assert {name for name, _, _ in got} == {"w1", "w2"}
    assert restored == [True, True]
    outer = {s.context.span_id: s.name for s in telemetry.spans("w") if s.context is not None}
    processes = telemetry.spans("process ")
    assert len(processes) == 20
    assert all(outer.get(parent_id(s) or 0) in ("w1", "w2") for s in processes)
    ordered = sorted(processes, key=lambda s: s.start_time or 0)
    assert all((a.end_time or 0) <= (b.start_time or 0) for a, b in zip(ordered, ordered[1:]))


class Failing(SpanProcessor):
    """An application's span processor with a bug."""

    def on_end(self, span: ReadableSpan) -> None:
        raise RuntimeError(f"cannot export {span.name}")

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass


@pytest.mark.asyncio
async def test_a_failing_span_processor_loses_no_record_and_stop_still_stops(
        quick_sessions: EmbeddedCluster, telemetry: Telemetry, caplog: pytest.LogCaptureFixture) -> None:
    """Records are taken out of the buffer (and count as handed out) before their spans end: an
    error there is logged, not raised, or the application would never get them."""
    topic = group = "aio-otel-failing"
    quick_sessions.create_topic(topic, 1)
    quick_sessions.produce(topic, [b"f%d" % i for i in range(6)])
    telemetry.tracer_provider.add_span_processor(Failing())
    c = consumer(quick_sessions, telemetry, topic, group)
    offsets: list[int] = []

    async def run() -> None:
        async with c:
            async for record in c:
                offsets.append(record.offset)
                if len(offsets) == 3:
                    break
            while len(offsets) < 6:
                for records in (await c.getmany(timeout_ms=200)).values():
                    offsets.extend(r.offset for r in records)

    await bounded(run())
    assert offsets == list(range(6))
    assert c._state == "stopped"
    assert "cannot export" in caplog.text
    assert {s.name for s in telemetry.spans()} >= {f"poll {topic}", f"process {topic}"}  # exported first


def test_without_the_api_nothing_of_opentelemetry_is_imported() -> None:
    code = textwrap.dedent("""
        import asyncio, sys
        sys.modules["opentelemetry"] = None  # as if groupclient[otel] were not installed
        from groupclient.aio import AsyncGroupConsumer

        async def main():
            consumer = AsyncGroupConsumer(bootstrap_servers="127.0.0.1:9", api_version=(2, 5), group_id="g")
            await consumer.start()  # nothing subscribed: it waits for no assignment (no broker answers)
            consumer.subscribe(["t"])  # the group is tried in the background
            await asyncio.sleep(0.3)
            assert consumer._telemetry is None
            await consumer.stop()

        asyncio.run(main())
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry") and sys.modules[m] is not None))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"
