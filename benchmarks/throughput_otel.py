"""groupclient's OpenTelemetry variants in benchmarks/throughput_worker.py: the SDK's providers
with exporters that drop what they get, the API made unimportable, and the check that a variant
runs with the telemetry it names."""

from __future__ import annotations

import sys
from typing import Any

# the SDK variants' metric reader: collects (gauge callbacks, aggregation) and exports every second
# during the drain (the SDK's default, 60 s, would not run once in a short drain)
OTEL_METRIC_EXPORT_MS = 1000


class OtelSdk:
    """The SDK's providers with its own batching all the way to export: a TracerProvider with a
    BatchSpanProcessor (its defaults) and a MeterProvider with a PeriodicExportingMetricReader
    (every OTEL_METRIC_EXPORT_MS), whose exporters drop what they get, counting it."""

    def __init__(self) -> None:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import (MetricExporter, MetricExportResult,
                                                      PeriodicExportingMetricReader)
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

        counts = self.counts = {"otel_spans": 0, "otel_links": 0, "otel_metric_exports": 0}

        class DropSpans(SpanExporter):
            def export(self, spans: Any) -> Any:
                counts["otel_spans"] += len(spans)
                counts["otel_links"] += sum(len(span.links) for span in spans)
                return SpanExportResult.SUCCESS

        class DropMetrics(MetricExporter):
            def export(self, metrics_data: Any, timeout_millis: float = 10_000, **kwargs: Any) -> Any:
                counts["otel_metric_exports"] += 1
                return MetricExportResult.SUCCESS

            def force_flush(self, timeout_millis: float = 10_000) -> bool:
                return True

            def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
                pass

        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(BatchSpanProcessor(DropSpans()))
        self.meter_provider = MeterProvider(metric_readers=[
            PeriodicExportingMetricReader(DropMetrics(), export_interval_millis=OTEL_METRIC_EXPORT_MS)])

    def flushed(self) -> dict[str, int]:
        """Every span and metric exported so far (after the drain: not measured)."""
        self.tracer_provider.force_flush()
        self.meter_provider.force_flush()
        return dict(self.counts)

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


def block_opentelemetry() -> None:
    """groupclient-otel-off: the OpenTelemetry API cannot be imported in this process (before
    groupclient is imported: it looks for the API once)."""
    if "groupclient" in sys.modules or any(m == "opentelemetry" or m.startswith("opentelemetry.")
                                           for m in sys.modules):
        raise RuntimeError("groupclient or opentelemetry imported before the API was blocked")
    sys.modules["opentelemetry"] = None  # type: ignore[assignment]  # import raises ImportError


def otel_state(consumer: Any, otel: str, sdk: OtelSdk | None) -> str:
    """What the consumer's OpenTelemetry is, checked against the variant: ``absent`` (no telemetry
    object), ``no provider`` (neither a tracer nor a meter resolved), ``sdk``."""
    telemetry = consumer._observers.telemetry
    if telemetry is None:
        if otel == "sdk":
            raise RuntimeError("the OpenTelemetry API is not importable: this variant needs groupclient[otel]")
        return "absent"  # groupclient without the API installed: the same as groupclient-otel-off
    if otel == "absent":
        raise RuntimeError("groupclient built its telemetry with opentelemetry blocked")
    tracer, meter = telemetry._instrumentation.tracer(), telemetry._instrumentation.meter()
    if otel == "api":
        from opentelemetry import metrics, trace
        if tracer is not None or meter is not None:
            raise RuntimeError(f"a provider is set (global tracer provider {trace.get_tracer_provider()!r}, "
                               f"meter provider {metrics.get_meter_provider()!r}): the baseline needs none")
        return "no provider"
    assert sdk is not None
    if tracer is None or meter is None:
        raise RuntimeError("the SDK's providers were not picked up")
    return "sdk"
