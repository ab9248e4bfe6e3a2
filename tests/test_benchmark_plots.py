"""The benchmarks' pictures (docs/*.png) draw with the matplotlib the bench extra allows: each
plotting function of benchmarks/, on small made-up results, writes a PNG of the size it asks for.
The floors run (tests/test_dependency_floors.py) runs this on matplotlib's lowest declared version;
docs/observability.md's block runs benchmarks/trace_picture.py whole (tests/docs)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, Span, SpanKind, Tracer

from benchmarks import ownership_log, throughput_report, trace_picture


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's header (and that it is one)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_trace_picture_draws_spans_and_their_links(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app, ours = provider.get_tracer("app"), provider.get_tracer("groupclient")

    def span(tracer: Tracer, name: str, start_ms: int, end_ms: int, **options: Any) -> Span:
        made = tracer.start_span(name, start_time=start_ms * 1_000_000, **options)
        made.end(end_time=end_ms * 1_000_000)
        return made

    span(ours, "rebalance billing", 0, 10, attributes={
        "messaging.client.id": "billing-1", "groupclient.rebalance.reason": "initial join",
        "groupclient.rebalance.owned_count": 2})
    send = span(app, "send orders", 100, 210, kind=SpanKind.PRODUCER)
    span(ours, "poll orders", 212, 216, kind=SpanKind.CLIENT, links=[Link(send.get_span_context())],
         attributes={"messaging.batch.message_count": 2})
    for offset in (0, 1):
        span(ours, "process orders", 218 + 10 * offset, 224 + 10 * offset, kind=SpanKind.CONSUMER,
             attributes={"messaging.kafka.offset": offset})
        span(app, "handle", 219 + 10 * offset, 223 + 10 * offset)
    spans = list(exporter.get_finished_spans())
    out = tmp_path / "trace.png"
    trace_picture.draw(spans, out)
    assert png_size(out) == (13 * 110, round((0.42 * len(spans) + 1.2) * 110))


def test_the_throughput_chart_draws_a_panel_per_broker(tmp_path: Path) -> None:
    def cell(broker: str, codec: str, ours: float, theirs: float | None) -> dict[str, object]:
        return {"broker": broker, "size": 100, "codec": codec, "partitions": 6,
                "clients": {"groupclient": {"steady_records_per_s": ours},
                            "confluent-kafka": {"steady_records_per_s": theirs}}}

    cells = [cell("embedded", "none", 400_000, 200_000), cell("embedded", "lz4", 150_000, None),
             cell("kafka", "none", 380_000, 190_000)]
    out = tmp_path / "charts" / "throughput.png"
    throughput_report.plot(cells, ["groupclient", "confluent-kafka"], out)
    assert png_size(out) == (round(6.0 * 120), 2 * 4 * 120)


def test_the_ownership_timeline_draws_members_gaps_and_generations(tmp_path: Path) -> None:
    Event = ownership_log.Event
    events = [Event(0.0, "m1", "assigned", (0, 1, 2, 3), 1), Event(2.0, "m1", "revoked", (2, 3), 1),
              Event(2.5, "m2", "assigned", (2, 3), 2), Event(3.0, "m1", "closed", (0, 1), 2)]
    out = tmp_path / "timeline.png"
    ownership_log.plot_timelines([("cooperative-sticky", events, 1.0, 3.0, 4.0, [2.5])], 4, str(out))
    width, height = png_size(out)
    assert (width, height) == (7 * 110, round((0.35 * 4 + 2.2) * 110))
