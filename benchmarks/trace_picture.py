"""docs/trace.png: the spans of a real consumer on the embedded coordinator, drawn as a timeline.

A producer (kafka-python) sends 4 records under a ``send orders`` span whose context
OpenTelemetry's propagator writes into each record's ``traceparent`` header; a GroupConsumer with
an SDK tracer provider joins (``rebalance billing``), polls them (``poll orders``, linked to the
producer's span) and iterates them (``process orders`` per record, each with the application's
``handle`` span inside); a second member then joins (``rebalance billing`` again: the scale-out).
Every bar is a span the SDK exported; dashed lines are links to the producer's context.

    python benchmarks/trace_picture.py --out docs/trace.png
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from kafka import KafkaProducer  # noqa: E402
from opentelemetry import propagate  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind  # noqa: E402

from groupclient import GroupConsumer  # noqa: E402
from groupclient.coordinator import EmbeddedCluster  # noqa: E402

COLORS = {SpanKind.PRODUCER: "#8c564b", SpanKind.CLIENT: "#1f77b4", SpanKind.CONSUMER: "#2ca02c",
          SpanKind.INTERNAL: "#ff7f0e"}
APPLICATION = "#9467bd"  # the application's own spans ("handle"), children of the process spans


def collect() -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = provider.get_tracer("app")
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0) as cluster:
        cluster.create_topic("orders", 2)
        settings = dict(bootstrap_servers=cluster.bootstrap_servers, group_id="billing", auto_offset_reset="earliest",
                        fetch_max_wait_ms=50, heartbeat_interval_ms=200, tracer_provider=provider)
        first = GroupConsumer("orders", client_id="billing-1", **settings)
        deadline = time.monotonic() + 20
        while not first.assignment():
            if time.monotonic() > deadline:
                raise SystemExit("the first consumer got no assignment in 20 s")
            first.poll(100)
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, linger_ms=0)
        with app.start_as_current_span("send orders", kind=SpanKind.PRODUCER):
            carrier: dict[str, str] = {}
            propagate.inject(carrier)
            for i in range(4):
                producer.send("orders", b"order-%d" % i, partition=0, headers=[(k, v.encode()) for k, v in carrier.items()])
            producer.flush(10)
        producer.close(5)
        handled = 0
        deadline = time.monotonic() + 20
        for record in first:
            with app.start_as_current_span("handle"):
                time.sleep(0.004)  # the application's work
            handled += 1
            if handled == 4 or time.monotonic() > deadline:
                break
        second = GroupConsumer("orders", client_id="billing-2", **settings)
        deadline = time.monotonic() + 20
        while len(first.assignment()) != 1 and time.monotonic() < deadline:
            first.poll(50)
            second.poll(50)
        second.close()
        first.close()
    return list(exporter.get_finished_spans())


def draw(spans: list[ReadableSpan], out: Path) -> None:
    spans = sorted(spans, key=lambda s: s.start_time or 0)
    origin = min(s.start_time or 0 for s in spans)
    rows = {id(s): i for i, s in enumerate(spans)}
    fig, ax = plt.subplots(figsize=(13, 0.42 * len(spans) + 1.2))
    ms = lambda ns: (ns - origin) / 1e6  # noqa: E731
    for span in spans:
        y = rows[id(span)]
        start, end = ms(span.start_time or 0), ms(span.end_time or 0)
        ours = span.instrumentation_scope is not None and span.instrumentation_scope.name == "groupclient"
        color = COLORS.get(span.kind, "grey") if ours or span.kind is SpanKind.PRODUCER else APPLICATION
        ax.barh(y, max(end - start, 0.3), left=start, color=color, height=0.6)
        attributes = span.attributes or {}
        detail = ""
        if "messaging.batch.message_count" in attributes:
            detail = f"  ({attributes['messaging.batch.message_count']} records)"
        elif "messaging.kafka.offset" in attributes:
            detail = f"  (offset {attributes['messaging.kafka.offset']})"
        elif "groupclient.rebalance.reason" in attributes:
            detail = (f"  ({attributes['messaging.client.id']}: {attributes['groupclient.rebalance.reason']}; "
                      f"owns {attributes['groupclient.rebalance.owned_count']})")
        ax.text(end + 2, y, f"{span.name}{detail}", va="center", fontsize=8)
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    for span in spans:
        for link in span.links:
            target = by_id.get(link.context.span_id)
            if target is not None:
                ax.plot([ms(target.end_time or 0), ms(span.start_time or 0)], [rows[id(target)], rows[id(span)]],
                        linestyle="--", color="grey", linewidth=0.8)
    ax.set_yticks([])
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds")
    ax.set_title("A groupclient consumer's spans (OpenTelemetry SDK, embedded coordinator)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in (*COLORS.values(), APPLICATION)]
    ax.legend(handles, ["producer (send)", "receive (poll)", "process", "rebalance", "application (handle)"],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/trace.png"))
    args = parser.parse_args()
    draw(collect(), args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
