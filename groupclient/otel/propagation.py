"""Trace context from Kafka record headers: the producer's context as a link.

A producer instrumented with OpenTelemetry writes its context into each record's headers (W3C
``traceparent`` / ``tracestate`` with the default propagator).  :func:`creation_context` reads
it back with the application's configured propagator (``opentelemetry.propagate``), so B3 or any
other propagator the application set works as well.  Header values are bytes; a header that is
not UTF-8 is ignored, as is a malformed context (the propagator returns none).

Only imported when the OpenTelemetry API is installed (see providers.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry import propagate, trace
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace import Link, SpanContext

Headers = Sequence[tuple[str, "bytes | None"]]


class _HeaderGetter(Getter[Headers]):
    """Reads a header list as a propagator's carrier: the last value of a key wins, as Kafka's
    ``Headers.lastHeader`` (a record re-sent through several producers keeps the newest)."""

    def get(self, carrier: Headers, key: str) -> list[str] | None:
        found: bytes | None = None
        for name, value in carrier:
            if name == key and value is not None:
                found = value
        if found is None:
            return None
        try:
            return [found.decode("utf-8")]
        except UnicodeDecodeError:
            return None

    def keys(self, carrier: Headers) -> list[str]:
        return [name for name, _ in carrier]


_GETTER = _HeaderGetter()


def creation_context(headers: Headers | None) -> SpanContext | None:
    """The producer's span context carried in ``headers``, or None (no headers, none valid)."""
    if not headers:
        return None
    span = trace.get_current_span(propagate.extract(headers, getter=_GETTER))
    context = span.get_span_context()
    return context if context.is_valid else None


def links_from(headers_of: Sequence[Headers | None], limit: int = 128) -> list[Link]:
    """One link per distinct producer context among ``headers_of``, at most ``limit`` (the SDK's
    default span link limit: more would be dropped anyway, after costing their extraction)."""
    links: list[Link] = []
    seen: set[tuple[int, int]] = set()
    for headers in headers_of:
        if not headers:
            continue
        context = creation_context(headers)
        if context is None or (context.trace_id, context.span_id) in seen:
            continue
        seen.add((context.trace_id, context.span_id))
        links.append(Link(context))
        if len(links) >= limit:
            break
    return links
