"""What docs/observability.md's blocks run against: the ``orders`` cluster of contexts.consuming,
with the blocks' exporters swapped for the SDK's in-memory ones (console output proves nothing)
or their endpoint scraped, and checks of what came out."""

from __future__ import annotations

import json
import re
import socket
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.docs import contexts
from tests.docs.runners import Prepared
from tests.otel_checks import points

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docs" / "grafana" / "groupclient.json"


def dashboard_series() -> set[str]:
    """Every metric name the Grafana dashboard's queries use."""
    names: set[str] = set()
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel["targets"]:
            # label names stand in "by (...)" and "{...}": drop those parts first
            expr = re.sub(r"by \([^)]*\)|\{[^}]*\}", " ", target["expr"])
            names |= set(re.findall(r"\b((?:messaging|groupclient)_[a-z_]+)\b", expr))
    return names


@contextmanager
def console_exporters(tmp_path: Path) -> Iterator[Prepared]:
    """The first block: its span and metric exporters replaced by in-memory ones; after it, a
    process span and a consumed count per record."""
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    with contexts.consuming("handle")(tmp_path) as prepared:
        checks = prepared.after

        def after(namespace: dict[str, Any]) -> None:
            assert checks is not None
            consumed = points(reader.get_metrics_data())["messaging.client.consumed.messages"]
            checks(namespace)
            namespace["tracer_provider"].shutdown()
            namespace["meter_provider"].shutdown()
            names = [s.name for s in spans.get_finished_spans()]
            assert names.count("process orders") == contexts.RECORDS, names
            assert sum(value for _, value in consumed) >= contexts.RECORDS

        yield Prepared({**prepared.namespace, "_spans": spans, "_reader": reader}, prepared.address, after,
                       prepared.watchdog, replace={"BatchSpanProcessor(ConsoleSpanExporter())": "BatchSpanProcessor(_spans)",
                                                   "PeriodicExportingMetricReader(ConsoleMetricExporter())": "_reader"})


@contextmanager
def prometheus(tmp_path: Path) -> Iterator[Prepared]:
    """The Prometheus block on a free port; after it, the endpoint is scraped and must serve every
    series docs/grafana/groupclient.json queries."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started: list[Any] = []
    with contexts.consuming("handle")(tmp_path) as prepared:
        checks = prepared.after

        def after(namespace: dict[str, Any]) -> None:
            assert checks is not None
            try:
                consumer = namespace["consumer"]
                consumer.commit()
                deadline = time.monotonic() + 15  # the first heartbeat comes heartbeat_interval_ms (3 s) in
                while True:
                    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
                    served = {line.split("{")[0].split(" ")[0] for line in text.splitlines()
                              if line and not line.startswith("#")}
                    missing = {name for name in dashboard_series() if name not in served}
                    if not missing or time.monotonic() > deadline:
                        break
                    consumer.poll(200)
                assert not missing, f"the dashboard queries series the exporter does not serve: {sorted(missing)}"
                checks(namespace)
            finally:
                namespace["meter_provider"].shutdown()
                for server, thread in started:
                    server.shutdown()
                    thread.join(5)

        yield Prepared({**prepared.namespace, "_started": started}, prepared.address, after, prepared.watchdog,
                       replace={'start_http_server(9464, addr="127.0.0.1")':
                                f'_started.append(start_http_server({port}, addr="127.0.0.1"))'})
