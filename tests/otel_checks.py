"""What every span and metric attribute of groupclient's OpenTelemetry must be: a name the
messaging semantic conventions define (read from the ``opentelemetry-semantic-conventions``
package, not copied), or one of groupclient's own under ``groupclient.``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka import KafkaProducer
from opentelemetry import propagate
from opentelemetry.semconv._incubating.attributes import error_attributes, messaging_attributes
from opentelemetry.trace import SpanContext, SpanKind, TracerProvider


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
