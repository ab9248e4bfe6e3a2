"""An ``otel_setup`` for the Spark telemetry tests: ``"tests.spark.otel_setup:install"``.

Spark's Python workers are other processes than the test's, so what they export goes to files:
JSON lines in the directory named by the environment variable :data:`FOLDER` (the test sets it in
the SparkContext's ``environment``, which Spark gives every Python worker it starts).  Each
process writes its own files (``spans-<pid>.jsonl``, ``metrics-<pid>.jsonl``) and one line per call
of :func:`install` to ``setup-<pid>.jsonl``.  Spans are written as each ends; metrics when
groupclient.spark flushes the providers at the end of a task (the reader's own period is an hour),
as deltas, so the points of every export add up to the totals.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider, ObservableCounter
from opentelemetry.sdk.metrics.export import (AggregationTemporality, MetricExporter, MetricExportResult,
                                              MetricsData, PeriodicExportingMetricReader)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

FOLDER = "GROUPCLIENT_TEST_OTEL_DIR"


def _append(name: str, rows: list[dict[str, Any]]) -> None:
    with open(Path(os.environ[FOLDER]) / f"{name}-{os.getpid()}.jsonl", "a") as out:
        out.writelines(json.dumps(row) + "\n" for row in rows)


class FileSpanExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        rows = []
        for span in spans:
            context = span.get_span_context()
            assert context is not None
            rows.append({"pid": os.getpid(), "name": span.name, "kind": span.kind.name,
                         "trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}",
                         "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
                         "status": span.status.status_code.name, "attributes": dict(span.attributes or {}),
                         "events": [event.name for event in span.events]})
        _append("spans", rows)
        return SpanExportResult.SUCCESS


class FileMetricExporter(MetricExporter):
    def __init__(self) -> None:
        super().__init__(preferred_temporality={Counter: AggregationTemporality.DELTA,
                                                Histogram: AggregationTemporality.DELTA,
                                                ObservableCounter: AggregationTemporality.DELTA})

    def export(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
        rows = []
        for resource in metrics_data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        value = point.count if hasattr(point, "bucket_counts") else point.value
                        rows.append({"pid": os.getpid(), "name": metric.name,
                                     "attributes": dict(point.attributes or {}), "value": value})
        _append("metrics", rows)
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        pass


def install() -> None:
    """Set this process's global providers, exporting to the files above."""
    _append("setup", [{"pid": os.getpid()}])
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter()))
    trace.set_tracer_provider(tracer_provider)
    reader = PeriodicExportingMetricReader(FileMetricExporter(), export_interval_millis=3_600_000)
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))


def read(folder: Path, name: str) -> list[dict[str, Any]]:
    """Every row the workers wrote to ``name-*.jsonl`` in ``folder``."""
    return [json.loads(line) for path in sorted(folder.glob(f"{name}-*.jsonl"))
            for line in path.read_text().splitlines() if line]
