"""benchmarks/throughput.py's clients, ratios and targets, and what it makes of its results:
the tables it prints, the chart (--plot) and the block of docs/performance.md (--docs)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

DEFAULT_CLIENTS = ("groupclient", "kafka-python", "confluent-kafka", "groupclient-aio", "aiokafka")
# groupclient's OpenTelemetry variants (throughput_worker.VARIANTS), only when asked for
OTEL_CLIENTS = ("groupclient-otel-off", "groupclient-otel-poll", "groupclient-iter", "groupclient-iter-otel-off",
                "groupclient-otel-record")
# groupclient on its pure-Python record path (GROUPCLIENT_RECORD_PATH=python in the worker), the
# column beside the compiled path's
PURE_PYTHON = {"groupclient-py": "groupclient", "groupclient-aio-py": "groupclient-aio"}
CLIENTS = DEFAULT_CLIENTS + OTEL_CLIENTS + tuple(PURE_PYTHON) + ("confluent-aio",)
ASYNC_CLIENTS = ("groupclient-aio", "aiokafka", "groupclient-aio-py", "confluent-aio")
# --matrix: every client the record path is measured against, and the Python path beside it
MATRIX_CLIENTS = ("groupclient", "groupclient-py", "confluent-kafka", "kafka-python", "groupclient-aio",
                  "groupclient-aio-py", "aiokafka", "confluent-aio")
SHORT = {"groupclient": "gc", "kafka-python": "kp", "confluent-kafka": "ck", "groupclient-aio": "gca",
         "aiokafka": "ak", "groupclient-otel-off": "gc-off", "groupclient-otel-poll": "gc-op",
         "groupclient-iter": "gc-it", "groupclient-iter-otel-off": "gc-it-off", "groupclient-otel-record": "gc-or",
         "groupclient-py": "gc-py", "groupclient-aio-py": "gca-py", "confluent-aio": "cka"}
# (ours, theirs): steady records/s (and CPU per record) of ours / theirs, per cell
RATIOS = (("groupclient", "kafka-python"), ("groupclient", "confluent-kafka"), ("groupclient", "aiokafka"),
          ("groupclient-aio", "aiokafka"), ("groupclient-aio", "confluent-aio"),
          ("groupclient-aio", "groupclient"), ("groupclient-otel-poll", "groupclient"),
          ("groupclient-otel-record", "groupclient-iter"), ("groupclient-otel-off", "groupclient"),
          ("groupclient-iter-otel-off", "groupclient-iter"), ("groupclient", "groupclient-py"),
          ("groupclient-aio", "groupclient-aio-py"), ("groupclient-aio-py", "aiokafka"))
# (compiled path, Python path): peak RSS of ours / theirs, per cell
RSS_RATIOS = (("groupclient", "groupclient-py"), ("groupclient-aio", "groupclient-aio-py"))
# the issue's target for the poll spans and metrics: at most 10% fewer records/s than groupclient
OTEL_POLL_TARGET = 0.90
LAG_KEYS = ("loop_lag_p50_ms", "loop_lag_p99_ms", "loop_lag_max_ms")
# the record path's targets, per cell: (what, the clients it compares, the cell's figure, the bound)
TARGETS = (
    ("sync: gc / confluent-kafka", ("groupclient", "confluent-kafka"), "ratio_groupclient_confluent-kafka", ">=", 1.0),
    ("sync: gc / aiokafka", ("groupclient", "aiokafka"), "ratio_groupclient_aiokafka", ">=", 1.5),
    ("asyncio: gca / aiokafka", ("groupclient-aio", "aiokafka"), "ratio_groupclient-aio_aiokafka", ">=", 1.5),
    ("asyncio: gca / gc", ("groupclient-aio", "groupclient"), "ratio_groupclient-aio_groupclient", ">=", 0.9),
    ("gca loop lag p99, ms", ("groupclient-aio",), "lag_p99_groupclient-aio", "<", 5.0),
    ("gca loop lag max (worst run), ms", ("groupclient-aio",), "lag_worst_groupclient-aio", "<", 20.0),
    ("memory: gc / gc-py peak RSS", ("groupclient", "groupclient-py"), "rss_ratio_groupclient_groupclient-py",
     "<=", 1.2),
    ("memory: gca / gca-py peak RSS", ("groupclient-aio", "groupclient-aio-py"),
     "rss_ratio_groupclient-aio_groupclient-aio-py", "<=", 1.2),
)
DOCS_BEGIN, DOCS_END = "<!-- throughput matrix: begin -->", "<!-- throughput matrix: end -->"


def verdict(value: float | None, op: str, bound: float) -> str:
    """met, MISSED, or FAIL (not measured: a client failed)."""
    if value is None:
        return "FAIL"
    met = value >= bound if op == ">=" else value < bound if op == "<" else value <= bound
    return "met" if met else "MISSED"


def target_value(cell: dict[str, Any], key: str) -> float | None:
    """A cell's figure for a target: a ratio, or an asyncio client's loop lag."""
    for prefix, field in (("lag_p99_", "loop_lag_p99_ms"), ("lag_worst_", "loop_lag_max_ms_worst")):
        if key.startswith(prefix):
            found = cell["clients"].get(key[len(prefix):], {}).get(field)
            return float(found) if found is not None else None
    found = cell.get(key)
    return float(found) if found is not None else None


def target_rows(cells: list[dict[str, Any]], clients: list[str]) -> list[list[str]]:
    """A row per cell and target whose clients ran: [broker, cell, target, measured, verdict]."""
    rows = []
    for c in cells:
        for what, needs, key, op, bound in TARGETS:
            if all(n in clients for n in needs):
                value = target_value(c, key)
                rows.append([c["broker"], f"{c['size']} B {c['codec']} p{c['partitions']}", f"{what} {op} {bound:g}",
                             fmt(value, ".2f"), verdict(value, op, bound)])
    return rows


def fmt(value: float | None, spec: str) -> str:
    """``value`` formatted, or FAIL where a client failed."""
    return "FAIL" if value is None else format(value, spec)


def tables(cells: list[dict[str, Any]], clients: list[str], gc_freeze: bool, traceparent: bool = False) -> str:
    """Every figure of the run as markdown tables, and the targets met or missed."""
    ratios = [(a, b) for a, b in RATIOS if a in clients and b in clients]
    # asyncio clients with a lag measured somewhere (none with --no-loop-lag)
    lagged = [c for c in clients if c in ASYNC_CLIENTS
              and any(cell["clients"][c].get("loop_lag_max_ms") is not None for cell in cells)]

    def table(head: list[str], rows: list[list[str]]) -> list[str]:
        return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in rows]

    def name(cell: dict[str, Any]) -> list[str]:
        return [cell["broker"], f"{cell['size']} B {cell['codec']} p{cell['partitions']}"
                + (" gc.freeze" if cell.get("gc_freeze") else "")]

    s = [SHORT[c] for c in clients]
    head1 = (["broker", "cell", "records", "comp."] + [f"{c} rec/s" for c in s] + [f"{c} MB/s" for c in s]
             + [f"{SHORT[a]}/{SHORT[b]}" for a, b in ratios])
    rows1 = [name(c) + [f"{c['records']:,}", f"{c['compression_ratio_est']:.1f}x"]
             + [fmt(c["clients"][k]["steady_records_per_s"], ",.0f") for k in clients]
             + [fmt(c["clients"][k]["steady_mb_per_s"], ".1f") for k in clients]
             + [fmt(c.get(f"ratio_{a}_{b}"), ".2f") for a, b in ratios] for c in cells]
    head2 = (["broker", "cell"] + [f"{c} CPU s/M" for c in s] + [f"CPU {SHORT[a]}/{SHORT[b]}" for a, b in ratios]
             + [f"broker CPU s/M ({c})" for c in s] + [f"{c} 1st record s" for c in s])
    rows2 = [name(c) + [fmt(c["clients"][k]["steady_cpu_s_per_m"], ".2f") for k in clients]
             + [fmt(c.get(f"cpu_ratio_{a}_{b}"), ".2f") for a, b in ratios]
             + [fmt(c["clients"][k]["broker_cpu_s_per_m"], ".2f") for k in clients]
             + [fmt(c["clients"][k]["first_record_s"], ".2f") for k in clients] for c in cells]
    headers = (f"traceparent header on every record: {'ON (--traceparent)' if traceparent else 'off'}; "
               if traceparent or any(c in OTEL_CLIENTS for c in clients) else "")
    legend = (f"gc.freeze() in the workers: {'ON (--gc-freeze)' if gc_freeze else 'off'}; {headers}"
              f"{', '.join(f'{SHORT[c]} = {c}' for c in clients)}; steady state = after the first third of "
              "the records; comp. = estimated compression ratio; CPU s/M = CPU seconds per million records "
              "(client: steady state; broker: the whole consume, from the client's start to its last record)")
    out = [legend, "", *table(head1, rows1), "", *table(head2, rows2)]
    if lagged:
        head3 = ["broker", "cell"] + [f"{SHORT[c]} lag {q}" for c in lagged for q in ("p50", "p99", "max", "worst")]
        rows3 = [name(c) + [fmt(c["clients"][k].get(key), ".2f") for k in lagged
                            for key in (*LAG_KEYS, "loop_lag_max_ms_worst")] for c in cells]
        out += ["", "event-loop lag, ms: lateness of a 1 ms asyncio.sleep() on the client's loop over the steady "
                "span (median over the runs of each run's p50, p99, max; worst = the largest max of any run)",
                "", *table(head3, rows3)]
    if any(cell["clients"][k].get("peak_rss_mb") is not None for cell in cells for k in clients):
        head4 = ["broker", "cell"] + [f"{c} MB" for c in s] + [f"{SHORT[a]}/{SHORT[b]}" for a, b in RSS_RATIOS
                                                                 if a in clients and b in clients]
        rows4 = [name(c) + [fmt(c["clients"][k].get("peak_rss_mb"), ".0f") for k in clients]
                 + [fmt(c.get(f"rss_ratio_{a}_{b}"), ".2f") for a, b in RSS_RATIOS if a in clients and b in clients]
                 for c in cells]
        out += ["", "peak resident memory of each client's process (median over the runs), MB", "",
                *table(head4, rows4)]
    verdicts = target_rows(cells, clients)
    if verdicts:
        out += ["", "targets (medians over the runs; lag max: the worst run)", "",
                *table(["broker", "cell", "target", "measured", "verdict"], verdicts)]
    if "groupclient-otel-poll" in clients and "groupclient" in clients:
        out += ["", f"OpenTelemetry target: groupclient-otel-poll / groupclient >= {OTEL_POLL_TARGET:.2f} "
                    f"(overhead <= {1 - OTEL_POLL_TARGET:.0%}), medians over the runs"
                    f"{', records with traceparent headers' if traceparent else ', records WITHOUT traceparent headers'}"]
        for c in cells:
            ratio = c.get("ratio_groupclient-otel-poll_groupclient")
            out.append(f"  {' '.join(name(c))}: {fmt(ratio, '.3f')} ({verdict(ratio, '>=', OTEL_POLL_TARGET)}; per run "
                       f"{', '.join(fmt(r, '.3f') for r in c.get('ratio_runs_groupclient-otel-poll_groupclient', []))})")
    return "\n".join(out)


def plot(cells: list[dict[str, Any]], clients: list[str], path: Path) -> None:
    """Steady records/s per cell and client, a panel per broker (log scale, labelled bars)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    brokers = list(dict.fromkeys(c["broker"] for c in cells))
    most = max(sum(c["broker"] == b for c in cells) for b in brokers)
    fig, axes = plt.subplots(len(brokers), 1, figsize=(max(6.0, 0.9 * most + 2), 4 * len(brokers)), squeeze=False)
    width = 0.8 / len(clients)
    for ax, broker in zip(axes[:, 0], brokers):
        mine = [c for c in cells if c["broker"] == broker]
        for i, client in enumerate(clients):
            ys = [c["clients"][client]["steady_records_per_s"] or 0 for c in mine]
            bars = ax.bar([x + (i - (len(clients) - 1) / 2) * width for x in range(len(mine))], ys, width, label=client)
            ax.bar_label(bars, [f"{y / 1000:.0f}k" if y else "fail" for y in ys], fontsize=6, rotation=90, padding=2)
        ax.set_xticks(range(len(mine)))
        ax.set_xticklabels([f"{c['size']} B\n{c['codec']}\np{c['partitions']}" for c in mine], fontsize=8)
        ax.set_yscale("log")  # bars start at a power of ten: compare the labels, not the bar heights
        rates = [c["clients"][k]["steady_records_per_s"] for c in mine for k in clients]
        rates = [r for r in rates if r] or [1e3]
        ax.set_ylim(10 ** math.floor(math.log10(min(rates))), max(rates) * 2.5)  # room for the labels
        ax.set_ylabel("records/s (steady state)")
        ax.set_title(f"broker: {broker}")
        ax.grid(axis="y", which="both", alpha=0.3)
        # beside the bars, not over the first cell's
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0), borderaxespad=0)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def docs_block(cells: list[dict[str, Any]], clients: list[str], meta: dict[str, Any], plot_name: str | None) -> str:
    """What docs/performance.md holds between DOCS_BEGIN and DOCS_END: how the run was made, on
    what, and its records/s and targets per cell."""
    found = meta["packages"]
    versions = ", ".join(f"{k} {v}" for k, v in found.items() if v and k in (
        "kafka-python", "confluent-kafka", "librdkafka", "aiokafka"))
    args = meta["args"]
    brokers = ", ".join(f"Apache Kafka {meta['kafka_version']}" if b == "kafka" else "the embedded broker"
                        for b in dict.fromkeys(c["broker"] for c in cells))
    out = [DOCS_BEGIN, "",
           f"Made by `{meta['command']}` on {meta['date']} in {meta['seconds'] / 60:.0f} minutes: "
           f"{meta['machine']}, {meta['cpus']} CPUs ({meta.get('cpu_model') or 'CPU model unknown'}), "
           f"{meta.get('memory_gb', 0):.0f} GB, Python {meta['python']}; {versions}. Brokers: {brokers}; "
           f"{args['partitions'][0]} partitions; per cell {args['mb']:g} MB of values, at most "
           f"{args['max_records']:,} records; {args['runs']} runs per client, medians; no `gc.freeze()`.", ""]
    if plot_name:
        out += [f"![records/s per client and cell]({plot_name})", ""]
    shown = [c for c in MATRIX_CLIENTS if c in clients] + [c for c in clients if c not in MATRIX_CLIENTS]
    out += ["Steady records/s (" + ", ".join(f"{SHORT[c]} = {c}" for c in shown) + "):", ""]
    out += ["| broker | cell | " + " | ".join(SHORT[c] for c in shown) + " |", "|---|---|" + "---:|" * len(shown)]
    for c in cells:
        out.append(f"| {c['broker']} | {c['size']} B {c['codec']} | "
                   + " | ".join(fmt(c["clients"][k]["steady_records_per_s"], ",.0f") for k in shown) + " |")
    targets = [t for t in TARGETS if all(n in clients for n in t[1])]
    if targets:
        out += ["", "Targets, per cell (a figure that misses its target is marked; lag max is the worst run's):", "",
                "| broker | cell | " + " | ".join(f"{t[0]} {t[3]} {t[4]:g}" for t in targets) + " |",
                "|---|---|" + "---:|" * len(targets)]
        for c in cells:
            marks = []
            for _, _, key, op, bound in targets:
                value = target_value(c, key)
                said = verdict(value, op, bound)
                marks.append(fmt(value, ".2f") + ("" if said == "met" else f" ({said.lower()})"))
            out.append(f"| {c['broker']} | {c['size']} B {c['codec']} | " + " | ".join(marks) + " |")
    out += ["", DOCS_END]
    return "\n".join(out)


def write_docs(path: Path, block: str) -> None:
    """Replaces what ``path`` holds between DOCS_BEGIN and DOCS_END with ``block``."""
    text = path.read_text()
    pattern = re.compile(re.escape(DOCS_BEGIN) + ".*?" + re.escape(DOCS_END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{path} has no {DOCS_BEGIN} ... {DOCS_END} block to replace")
    path.write_text(pattern.sub(lambda _: block, text, count=1))
