"""groupclient.otel.propagation's direct reading of canonical W3C ``traceparent`` headers gives
what the configured propagator gives, header list by header list, and links_from (which looks at
each distinct carrier once) links what extracting every record's headers in turn would."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

import pytest

pytest.importorskip("opentelemetry")

from opentelemetry import propagate, trace  # noqa: E402
from opentelemetry.baggage.propagation import W3CBaggagePropagator  # noqa: E402
from opentelemetry.propagators.composite import CompositePropagator  # noqa: E402
from opentelemetry.propagators.textmap import TextMapPropagator  # noqa: E402
from opentelemetry.trace import Link, SpanContext  # noqa: E402
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator  # noqa: E402

from groupclient.otel import propagation  # noqa: E402
from groupclient.otel.propagation import Headers, creation_context, links_from  # noqa: E402


def reference(headers: Headers | None) -> SpanContext | None:
    """The propagator's own answer, header list by header list (before the fast path)."""
    if not headers:
        return None
    context = trace.get_current_span(propagate.extract(headers, getter=propagation._GETTER)).get_span_context()
    return context if context.is_valid else None


def reference_links(headers_of: Sequence[Headers | None], limit: int = 128) -> list[Link]:
    links: list[Link] = []
    seen: set[tuple[int, int]] = set()
    for headers in headers_of:
        context = reference(headers)
        if context is None or (context.trace_id, context.span_id) in seen:
            continue
        seen.add((context.trace_id, context.span_id))
        links.append(Link(context))
        if len(links) >= limit:
            break
    return links


def traceparents(rng: random.Random) -> Iterator[bytes | None]:
    """Canonical ones mostly, and every way of not being one."""
    while True:
        trace_id, span_id, flags = f"{rng.getrandbits(128):032x}", f"{rng.getrandbits(64):016x}", f"{rng.choice((0, 1, 3, 255)):02x}"
        yield rng.choice([
            f"00-{trace_id}-{span_id}-{flags}".encode(),
            f"00-{trace_id}-{span_id}-{flags}".encode(),
            f"00-{'0' * 32}-{span_id}-01".encode(), f"00-{trace_id}-{'0' * 16}-01".encode(),
            f"00-{trace_id.upper()}-{span_id}-01".encode(), f" 00-{trace_id}-{span_id}-01\t".encode(),
            f"01-{trace_id}-{span_id}-01".encode(), f"01-{trace_id}-{span_id}-01-future".encode(),
            f"00-{trace_id}-{span_id}-01-extra".encode(), f"ff-{trace_id}-{span_id}-01".encode(),
            f"00-{trace_id}-{span_id}-01\n".encode(), f"00-{trace_id[1:]}-{span_id}-01".encode(),
            b"\xff\xfe" + trace_id.encode(), b"", None])


def header_lists(seed: int, count: int) -> list[Headers | None]:
    rng, values = random.Random(seed), traceparents(random.Random(seed + 1))
    made: list[Headers | None] = []
    for _ in range(count):
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(rng.choice((0, 1, 1, 1, 2, 3))):
            name = rng.choice(("traceparent", "traceparent", "traceparent", "tracestate", "baggage", "other"))
            value = next(values) if name == "traceparent" else rng.choice((b"vendor=abc", b"k=v", None, b"x"))
            headers.append((name, value))
        made.append(rng.choice((headers, headers, None)) if not headers else headers)
        if made and rng.random() < 0.2:
            made.append(rng.choice(made))  # records of one producer context
    return made


PROPAGATORS = {
    "default": None,
    "tracecontext": TraceContextTextMapPropagator(),
    "tracecontext+baggage": CompositePropagator([W3CBaggagePropagator(), TraceContextTextMapPropagator()]),
    "baggage only": W3CBaggagePropagator(),
}


@pytest.fixture(params=list(PROPAGATORS))
def propagator(request: pytest.FixtureRequest) -> Iterator[str]:
    before = propagate.get_global_textmap()
    if PROPAGATORS[request.param] is not None:
        propagate.set_global_textmap(PROPAGATORS[request.param])  # type: ignore[arg-type]
    try:
        yield request.param
    finally:
        propagate.set_global_textmap(before)


def test_the_direct_reading_is_what_the_propagator_extracts(propagator: str) -> None:
    cases = header_lists(7, 3000)
    assert any(creation_context(h) is not None for h in cases) == (propagator != "baggage only")
    for headers in cases:
        assert creation_context(headers) == reference(headers), headers


def test_only_w3c_propagators_are_read_directly(propagator: str) -> None:
    assert propagation._w3c_only() == (propagator != "baggage only")


@pytest.mark.parametrize("limit", [1, 5, 128])
def test_links_are_those_of_every_record_in_turn(propagator: str, limit: int) -> None:
    for seed in range(5):
        cases = header_lists(seed, 600)
        got, want = links_from(cases, limit), reference_links(cases, limit)
        assert [link.context for link in got] == [link.context for link in want]


def test_a_subclassed_propagator_is_asked() -> None:
    class Counting(TraceContextTextMapPropagator):
        calls = 0

        def extract(self, *args: object, **kwargs: object) -> object:  # type: ignore[override]
            Counting.calls += 1
            return super().extract(*args, **kwargs)  # type: ignore[arg-type]

    before: TextMapPropagator = propagate.get_global_textmap()
    propagate.set_global_textmap(Counting())
    try:
        headers = [("traceparent", b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")]
        assert creation_context(headers) == reference(headers) is not None
        assert Counting.calls == 2
        assert len(links_from([headers, headers, list(headers)])) == 1
        assert Counting.calls == 3  # the same carrier is extracted once
    finally:
        propagate.set_global_textmap(before)
