"""What every span and metric attribute of groupclient's OpenTelemetry must be: a name the
messaging semantic conventions define (read from the ``opentelemetry-semantic-conventions``
package, not copied), or one of groupclient's own under ``groupclient.``; and the SDK's in-memory
providers the telemetry tests collect with (:class:`SdkTelemetry`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafka import KafkaProducer
from opentelemetry import propagate
from opentelemetry.semconv._incubating.attributes import error_attributes, messaging_attributes
from opentelemetry.trace import SpanContext, SpanKind, TracerProvider

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor


def convention_attributes() -> set[str]:
    """Every messaging.* and error.* attribute name the installed conventions define."""
    found = set()
    for module in (messaging_attributes, error_attributes):
        for name in dir(module):
            value = getattr(module, name)
            if name.isupper() and isinstance(value, str) and "." in value:
                found.add(value)
    return found


_DEPRECATED = {"messaging.kafka.consumer.group", "messaging.kafka.destination.partition",
               "messaging.kafka.message.offset", "messaging.operation"}


def check_attributes(attributes: Mapping[str, Any] | None) -> None:
    """Each key is a current convention name or groupclient's own; messaging.system is kafka."""
    assert attributes is not None
    known = convention_attributes() - _DEPRECATED
    for key in attributes:
        assert key in known or key.startswith("groupclient."), f"{key!r} is neither a convention name nor ours"
    assert attributes["messaging.system"] == "kafka"


def points(data: Any) -> dict[str, list[tuple[dict[str, Any], Any]]]:
    """Metric name -> [(attributes, value)] from an SDK MetricsData: a sum's or gauge's value, a
    histogram's count."""
    result: dict[str, list[tuple[dict[str, Any], Any]]] = {}
    if data is None:
        return result
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    value = point.count if hasattr(point, "bucket_counts") else point.value
                    result.setdefault(metric.name, []).append((dict(point.attributes), value))
    return result


def produce_with_context(bootstrap: str, tracer_provider: TracerProvider, topic: str, count: int,
                         partitions: int) -> SpanContext:
    """kafka-python's producer, each record carrying the context of an SDK span ``send {topic}``
    (injected by OpenTelemetry's propagator as a ``traceparent`` header): that span's context."""
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        with tracer_provider.get_tracer("producer").start_as_current_span(f"send {topic}", kind=SpanKind.PRODUCER) as span:
            carrier: dict[str, str] = {}
            propagate.inject(carrier)
            assert "traceparent" in carrier
            for i in range(count):
                producer.send(topic, b"v%d" % i, key=b"k%d" % i,
                              headers=[(k, v.encode()) for k, v in carrier.items()], partition=i % partitions)
        producer.flush(10)
    finally:
        producer.close(5)
    return span.get_span_context()


class SdkTelemetry:
    """An SDK tracer provider (an in-memory exporter, then ``processors``) and meter provider (an
    in-memory reader) of one test, and what they collected; ``app`` is a tracer for the test's own
    spans.  The SDK is imported here, not with this module: its users skip without it."""

    def __init__(self, *processors: SpanProcessor) -> None:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.tracer_provider = SdkTracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        for processor in processors:
            self.tracer_provider.add_span_processor(processor)
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.app = self.tracer_provider.get_tracer("app")

    def spans(self, prefix: str = "") -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name.startswith(prefix)]

    def metrics(self) -> dict[str, list[tuple[dict[str, Any], Any]]]:
        """Metric name -> [(attributes, value)]: a sum's or gauge's value, a histogram's count."""
        return points(self.reader.get_metrics_data())

    def close(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()
