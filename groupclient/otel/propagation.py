"""Trace context from Kafka record headers: the producer's context as a link.

A producer instrumented with OpenTelemetry writes its context into each record's headers (W3C
``traceparent`` / ``tracestate`` with the default propagator).  :func:`creation_context` reads
it back with the application's configured propagator (``opentelemetry.propagate``), so B3 or any
other propagator the application set works as well.  Header values are bytes; a header that is
not UTF-8 is ignored, as is a malformed context (the propagator returns none).

The hot path: a poll span links up to 128 records' contexts and iteration reads one per record,
while the API's generic extraction (a Context, a span in it, the baggage propagator, a regex) costs
~5 us a header (~2 us read directly).  So when the configured propagator is W3C's own (the API's
default: trace context, with or without baggage) a ``traceparent`` header in its canonical form
(version 00, lower case hex, no ``tracestate`` header beside it) is parsed here directly into the
same SpanContext the propagator builds; any other header, and any other propagator, goes through
the propagator.  And :func:`links_from` extracts each distinct carrier once (many records of a
poll often carry one producer context).

Only imported when the OpenTelemetry API is installed (see providers.py).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Sequence

from opentelemetry import propagate, trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.propagators.textmap import Getter, TextMapPropagator
from opentelemetry.trace import Link, SpanContext, TraceFlags
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

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

# a traceparent the trace context propagator accepts as it is: version 00, ids and flags in lower
# case hex, nothing around them (anything else, e.g. spaces or a later version, takes its own path)
_CANONICAL = re.compile(rb"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
_ZERO_TRACE, _ZERO_SPAN = b"0" * 32, b"0" * 16
# the global propagator last looked at, and whether it is W3C's own (see _w3c_only)
_CHECKED: tuple[TextMapPropagator | None, bool] = (None, False)


def _w3c_only() -> bool:
    """Whether the global propagator finds a span context in the W3C trace context headers only:
    the API's TraceContextTextMapPropagator, alone or in a CompositePropagator with
    W3CBaggagePropagator (the default; baggage is no part of a span context).  Exact types: a
    subclass may extract differently."""
    global _CHECKED
    textmap = propagate.get_global_textmap()
    checked, w3c = _CHECKED
    if textmap is not checked:
        inner = getattr(textmap, "_propagators", None) if type(textmap) is CompositePropagator else [textmap]
        w3c = (isinstance(inner, (list, tuple))
               and any(type(p) is TraceContextTextMapPropagator for p in inner)
               and all(type(p) in (TraceContextTextMapPropagator, W3CBaggagePropagator) for p in inner))
        _CHECKED = (textmap, w3c)
    return w3c


def _canonical_traceparent(headers: Headers) -> bytes | None:
    """The value of the ``traceparent`` the propagator would read (the last one not None) when it
    is canonical (see _CANONICAL) and no ``tracestate`` header is there; else None (the
    propagator decides)."""
    found: bytes | None = None
    for name, value in headers:
        if name == "traceparent":
            if value is not None:
                found = value
        elif name == "tracestate":
            return None
    return found if type(found) is bytes and _CANONICAL.fullmatch(found) else None


def _parsed(traceparent: bytes) -> SpanContext | None:
    """The span context TraceContextTextMapPropagator builds from a canonical ``traceparent``
    (None: an all-zero trace or span id, which it rejects)."""
    trace_id, span_id, flags = traceparent[3:35], traceparent[36:52], traceparent[53:55]
    if trace_id == _ZERO_TRACE or span_id == _ZERO_SPAN:
        return None
    return SpanContext(trace_id=int(trace_id, 16), span_id=int(span_id, 16), is_remote=True,
                       trace_flags=TraceFlags(int(flags, 16)), trace_state=None)


def _extracted(headers: Headers) -> SpanContext | None:
    """The configured propagator's answer for ``headers`` (not empty)."""
    span = trace.get_current_span(propagate.extract(headers, getter=_GETTER))
    context = span.get_span_context()
    return context if context.is_valid else None


def creation_context(headers: Headers | None) -> SpanContext | None:
    """The producer's span context carried in ``headers``, or None (no headers, none valid)."""
    if not headers:
        return None
    if _w3c_only():
        traceparent = _canonical_traceparent(headers)
        if traceparent is not None:
            return _parsed(traceparent)
    return _extracted(headers)


def links_from(headers_of: Iterable[Headers | None], limit: int = 128) -> list[Link]:
    """One link per distinct producer context among ``headers_of``, at most ``limit`` (the SDK's
    default span link limit: more would be dropped anyway, after costing their extraction).

    Each distinct carrier is looked at once: with W3C's propagator its canonical ``traceparent``
    value, with any other the whole header list (a propagator's answer depends on the headers
    only)."""
    links: list[Link] = []
    seen: set[tuple[int, int]] = set()
    looked: set[Hashable] = set()
    w3c = _w3c_only()
    for headers in headers_of:
        if not headers:
            continue
        traceparent = _canonical_traceparent(headers) if w3c else None
        carrier: Hashable = traceparent if traceparent is not None else tuple(headers)
        try:
            if carrier in looked:
                continue
            looked.add(carrier)
        except TypeError:  # a header an application's deserializer made unhashable: looked at each time
            pass
        context = _parsed(traceparent) if traceparent is not None else _extracted(headers)
        if context is None or (context.trace_id, context.span_id) in seen:
            continue
        seen.add((context.trace_id, context.span_id))
        links.append(Link(context))
        if len(links) >= limit:
            break
    return links
