"""What AsyncGroupConsumer's OpenTelemetry example (docs/_aio_telemetry.md, a section of
docs/observability.md to be) runs against.  Its entry in tests/docs/test_code_blocks.py's RUNS:

    "docs/_aio_telemetry.md: # AsyncGroupConsumer with OpenTelemetry: your spans inside each "
    "record's process span": Python(aio_otel_contexts.aio_traced),
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.docs.aio_contexts import aio_orders
from tests.docs.runners import Enough, Prepared


def _consumed(data: Any) -> dict[str, int]:
    """messaging.client.consumed.messages per partition, from an SDK MetricsData."""
    found: dict[str, int] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "messaging.client.consumed.messages":
                    for point in metric.data.data_points:
                        partition = str(point.attributes["messaging.destination.partition.id"])
                        found[partition] = found.get(partition, 0) + int(point.value)
    return found


@contextmanager
def aio_traced(tmp_path: Path) -> Iterator[Prepared]:
    """The asyncio example of docs/_aio_telemetry.md (to be merged into docs/observability.md):
    ``orders`` holds 30 records (10 a partition); ``handle(record)`` ends the block with the
    30th.  The block's only changes: its console exporter and console metric reader become
    in-memory ones (``_spans``, ``_reader``), so that what it emitted can be read: a process
    span per record, each with the application's ``handle`` span as its child, a receive span
    per record (``async for`` is getone()), a rebalance span; and the consumer thread's metrics
    count 10 records of each partition."""
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exported = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    handled: list[tuple[int, int]] = []
    consumed: list[dict[str, int]] = []

    async def handle(record: Any) -> None:
        handled.append((record.partition, record.offset))
        if len(handled) == 30:
            consumed.append(_consumed(reader.get_metrics_data()))  # while the consumer runs
            raise Enough

    with aio_orders(10) as (cluster, watchdog):
        def after(namespace: dict[str, Any]) -> None:
            assert sorted(handled) == [(p, o) for p in range(3) for o in range(10)], handled
            spans = exported.get_finished_spans()  # all of them: the block shut its provider down
            processes = {s.context.span_id: s for s in spans if s.name == "process orders"}
            children = [s for s in spans if s.name == "handle"]
            assert len(processes) == 30 and len(children) == 30
            assert all(s.parent is not None and s.parent.span_id in processes for s in children)
            receives = [s for s in spans if s.name == "poll orders"]
            assert sum(s.attributes["messaging.batch.message_count"] for s in receives) == 30
            assert any(s.name == "rebalance billing" for s in spans)
            assert consumed == [{"0": 10, "1": 10, "2": 10}], consumed

        yield Prepared({"handle": handle, "_spans": exported, "_reader": reader}, cluster.bootstrap_servers,
                       after, watchdog, replace={
                           "BatchSpanProcessor(ConsoleSpanExporter())": "BatchSpanProcessor(_spans)",
                           "PeriodicExportingMetricReader(ConsoleMetricExporter())": "_reader"})
