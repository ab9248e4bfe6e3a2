"""Consumer throughput: groupclient GroupConsumer, kafka-python KafkaConsumer and confluent-kafka
Consumer, and the asyncio clients groupclient.aio AsyncGroupConsumer, aiokafka AIOKafkaConsumer and
confluent-kafka AIOConsumer, on the same topics in the same run, on a real Apache Kafka broker
(--kafka-version, 4.4.0 by default) and on the embedded broker.

Usage (the full matrix, a long run; one Kafka broker, one embedded broker per cell):

    nice -n 5 python benchmarks/throughput.py --out results.json --plot docs/throughput.png

    # the record path's matrix (~35 min): {sync, asyncio} x every codec x {100 B, 1 KB} on both
    # brokers, against confluent-kafka (consume() and AIOConsumer, fetch.queue.backoff.ms 10),
    # aiokafka and kafka-python, with groupclient's pure-Python record path as its own column; the
    # targets met or missed, the peak RSS per client; --docs rewrites docs/performance.md's block
    nice -n 5 python benchmarks/throughput.py --matrix --out matrix.json \
        --plot docs/throughput-matrix.png --docs docs/performance.md

    # quick: embedded broker, 100 B values, none and lz4, 6 partitions, ~10k records, 1 run
    python benchmarks/throughput.py --quick
    python benchmarks/throughput.py --brokers kafka --sizes 100 --codecs none --partitions 6 --mb 5
    # the asyncio clients against the sync one
    nice -n 5 python benchmarks/throughput.py --brokers embedded --sizes 100 --codecs none,lz4 \
        --partitions 6 --runs 3 --clients groupclient,groupclient-aio,aiokafka
    # OpenTelemetry's cost (groupclient[otel] and the SDK installed), records with a traceparent each;
    # --clients otel: groupclient, groupclient-otel-off, groupclient-otel-poll, groupclient-iter,
    # groupclient-iter-otel-off, groupclient-otel-record
    nice -n 5 python benchmarks/throughput.py --brokers embedded --sizes 100 --codecs none --partitions 6 \
        --runs 3 --traceparent --clients otel

Matrix: value size (--sizes) x compression (--codecs: none, gzip, snappy, lz4, zstd) x partitions
(--partitions) on each broker (--brokers kafka,embedded); --clients picks the consumers (groupclient,
kafka-python, confluent-kafka, groupclient-aio, aiokafka, the default; and groupclient's
OpenTelemetry variants below, ``otel`` standing for groupclient and all of them).  Per cell a
topic of mb*1e6/size records (at least --min-records, at most --max-records) is produced once by
confluent-kafka's Producer, or kafka-python's where it is absent (batch size 64 KiB, linger 10 ms;
the producer sticks to a partition for one batch, like the sticky partitioner, so batches are full): JSON-like event text with random
fields, which gzip/zstd compress ~4-5x and lz4/snappy ~2.5x.  Each client then drains the topic with
a fresh group (earliest, no auto commit) in its own process (benchmarks/throughput_worker.py),
--runs times, the client order rotating per run; figures are medians over the runs.

Per client and cell: steady records/s = records received after the first third / time from the
third to the last record (librdkafka prefetches in the background, so the first third, including
the join, is excluded for everyone); MB/s of values in the same span; CPU seconds of the client's
process (all threads) per million records in the same span; the broker's CPU per million records
over the whole consume (the JSON also has it for the steady span); ratios of steady records/s (and
of CPU per record) groupclient/kafka-python, groupclient/confluent-kafka, groupclient/aiokafka,
groupclient-aio/aiokafka, groupclient-aio/confluent-aio and groupclient-aio/groupclient; the peak
resident memory of each client's process (after the drain, before close()), and that of the
compiled record path over the Python one's.  The targets (benchmarks/throughput_report.py TARGETS)
are printed met or missed per cell.  results.json keeps every run, with the longest wait for records.

OpenTelemetry (groupclient[otel]; the variants are GroupConsumer, set up in throughput_worker.py):
groupclient-otel-off (the API made unimportable in the worker before groupclient is imported: no
telemetry at all), groupclient (the API installed, no provider: today's baseline, checked),
groupclient-otel-poll (the poll loop with the SDK's TracerProvider + BatchSpanProcessor and
MeterProvider + PeriodicExportingMetricReader every second, on exporters that drop everything: one
poll span per poll, the metrics, the gauges), groupclient-iter, groupclient-iter-otel-off and
groupclient-otel-record (groupclient, groupclient-otel-off and groupclient-otel-poll draining by
``for record in consumer``: one process span per record).  Ratios of steady records/s:
otel-poll/groupclient (the target: overhead <= 10%, ratio >= 0.90, printed as met or missed),
otel-record/groupclient-iter, groupclient-otel-off/groupclient and
groupclient-iter-otel-off/groupclient-iter (zero cost without a provider: ~1.0).
--traceparent (off by default) has the producer write a W3C ``traceparent`` header on every record
(a new trace and span each, sampled, as one producer span per record would), so the spans carry
links (at most 128 per poll span, the SDK's limit); the tables say whether it was on, and each run
of an SDK variant prints the spans, links and metric exports its exporters dropped.

groupclient-py and groupclient-aio-py (--clients; not by default): groupclient and groupclient-aio
on the pure-Python record path (GROUPCLIENT_RECORD_PATH=python in their worker), beside the
compiled one (groupclient/consumer/record_path.py); each run's JSON has the record_path it ran.

--rebalance: in each asyncio client's drain, another member joins the group at the third of the
records and leaves a second later, so the steady span has two rebalances (throughput_worker.py);
use enough records for the steady span to last a few seconds (--mb 150 --max-records 2000000).

Event-loop lag, for the asyncio clients: the worker runs the drain coroutine and, on the same loop,
a watchdog that repeatedly awaits asyncio.sleep(0.001); a wake-up's lag is its actual time minus
the expected one (the time it went to sleep + 1 ms), i.e. how long a ready callback waited for the
loop.  Per run: p50, p99 and max over the wake-ups of the steady span (~0.15 ms on an idle loop,
the selector's timeout rounding); per cell the medians over the runs, and the worst max of any run.
The watchdog's own wake-ups (up to 1000/s) cost both asyncio clients a little CPU; --no-loop-lag
drops it.

--gc-freeze (off by default): each worker calls gc.freeze() once, after its imports and the
client's construction (and start()/subscribe()), before its first poll.  Why: a full (generation 2)
garbage collection walks the whole import-time heap (the client, its codecs, asyncio, aiokafka)
holding the GIL, which pauses every thread (the event loop, AsyncGroupConsumer's consumer thread,
the poll loop) for 10-35 ms on this machine; gc.freeze() moves every object that exists then to a
permanent generation that collections skip.  The results JSON (meta.args.gc_freeze, each cell's
gc_freeze, each run's gc_freeze and gc_frozen) and the printed tables say whether it was on; every
run also counts its garbage collections per generation over the steady span (steady_gc_collections).

Settings are the clients' defaults: python clients max_poll_records 500 (--max-poll-records),
fetch sizes default (fetch_max_bytes 50 MB, max_partition_fetch_bytes 1 MB; librdkafka the same plus
its background prefetch of up to 64 MB), metadata_max_age_ms 5000 for every python client (a
kafka-python join race).  The asyncio clients get the same settings (aiokafka's names are the same)
and drain with ``await getmany(timeout_ms=1000, max_records=max_poll_records)``, each in one event
loop (asyncio.run's); AsyncGroupConsumer runs its GroupConsumer, fetching and decoding, on a thread
of its own.  confluent-kafka: consume(num_messages=1000, timeout=1.0), the last call
asking only for the records still missing; --confluent-config adds librdkafka settings.  Every
record's value is read (record.value, msg.value()).  The Kafka broker runs with full JIT here
(tests/kafka/broker.py limits it to C1 for a fast start).

Caveats: with 60 partitions one fetch (1 MB a partition) can hold most of a cell's topic, so the
steady span measures decoding fetched data more than fetching.  librdkafka postpones a partition's
fetch by fetch.queue.backoff.ms (default 1000) when its queue is over queued.min.messages (100000):
confluent-kafka then waits ~1 s for its last records in some runs (printed as "no records for").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.brokers import coordinator, cpu_seconds, stop_process  # noqa: E402
from benchmarks.throughput_topics import CODECS, compression_ratio, machine, packages, produce  # noqa: E402
from benchmarks.throughput_report import (ASYNC_CLIENTS, CLIENTS, DEFAULT_CLIENTS, LAG_KEYS,  # noqa: E402
                                          MATRIX_CLIENTS, OTEL_CLIENTS, PURE_PYTHON, RATIOS, RSS_RATIOS, docs_block,
                                          plot, tables, write_docs)

WORKER = Path(__file__).resolve().parent / "throughput_worker.py"
# --matrix: librdkafka without its 1 s pause of a partition whose queue holds over
# queued.min.messages (see Caveats): confluent-kafka at its best, not at its slowest
MATRIX_CONFLUENT = {"fetch.queue.backoff.ms": 10}
def run_client(client: str, bootstrap: str, topic: str, records: int, broker_pid: int,
               args: argparse.Namespace, timeout_s: float) -> dict[str, Any]:
    """One worker process: its JSON line plus its and the broker's CPU around it; killed after
    ``timeout_s`` (the worker gives up itself at ``timeout_s``, reporting how far it got)."""
    with tempfile.TemporaryFile() as stderr:
        broker0 = cpu_seconds(broker_pid)
        env = {**os.environ, "GROUPCLIENT_RECORD_PATH": "python"} if client in PURE_PYTHON else None
        child = subprocess.Popen(
            [sys.executable, str(WORKER), PURE_PYTHON.get(client, client), bootstrap, topic, str(records),
             "--broker-pid", str(broker_pid),
             "--timeout-s", str(timeout_s), "--max-poll-records", str(args.max_poll_records),
             "--confluent-config", json.dumps(args.confluent_config), *([] if args.loop_lag else ["--no-loop-lag"]),
             *(["--gc-freeze"] if args.gc_freeze else []),
             *(["--rebalance"] if args.rebalance and client in ASYNC_CLIENTS else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env)
        assert child.stdin is not None and child.stdout is not None
        result: dict[str, Any] = {"ok": False, "error": "interrupted"}
        try:
            out, deadline = b"", time.monotonic() + timeout_s + 30
            while not out.endswith(b"\n") and time.monotonic() < deadline:
                if select.select([child.stdout], [], [], 1.0)[0]:
                    chunk = os.read(child.stdout.fileno(), 65536)
                    if not chunk:
                        break  # the worker exited without a result
                    out += chunk
            try:
                result = json.loads(out.decode(errors="replace").strip().splitlines()[-1])
            except (ValueError, IndexError):
                error = (f"no result after {timeout_s + 30:.0f} s: killed" if time.monotonic() >= deadline
                         else f"exited with {child.wait(5)}, output {out[-200:]!r}")
                result = {"ok": False, "error": error}
            else:
                result["process_cpu_s"] = cpu_seconds(child.pid)  # interpreter start to last record
                result["broker_cpu_s"] = cpu_seconds(broker_pid) - broker0  # the whole consume
                child.stdin.close()  # lets the worker close its consumer and exit
                child.wait(30)
        except subprocess.TimeoutExpired:
            pass  # close() hung: stopped below
        finally:
            stop_process(child, timeout_s=5)
            if not result.get("ok"):
                stderr.seek(0)
                result["stderr_tail"] = stderr.read().decode(errors="replace")[-2000:]
    return result


def median(runs: list[dict[str, Any]], key: str) -> float | None:
    samples = [r[key] for r in runs if r.get("ok") and r.get(key) is not None]
    return statistics.median(samples) if samples else None


def run_cell(broker: str, bootstrap: str, broker_pid: int, topic: str, size: int, codec: str, partitions: int,
             args: argparse.Namespace) -> dict[str, Any]:
    records = int(min(max(args.mb * 1e6 / size, args.min_records), args.max_records))
    cell: dict[str, Any] = {"broker": broker, "size": size, "codec": codec, "partitions": partitions,
                            "records": records, "topic": topic, "compression_ratio_est": compression_ratio(codec, size),
                            "gc_freeze": args.gc_freeze, "traceparent": args.traceparent}
    print(f"[{broker}] {size} B {codec} p{partitions}: producing {records:,} records"
          f"{', a traceparent header each' if args.traceparent else ''}"
          f"{' (workers gc.freeze())' if args.gc_freeze else ''}", flush=True)
    cell["produce_s"] = produce(bootstrap, topic, partitions, codec, size, records, traceparent=args.traceparent)
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in args.clients}
    for run in range(args.runs):
        shift = run % len(args.clients)
        for client in args.clients[shift:] + args.clients[:shift]:
            result = run_client(client, bootstrap, topic, records, broker_pid, args,
                                timeout_s=60 + records / 2000)  # a client slower than 2000 records/s fails
            runs[client].append(result)
            shown = (f"{result['steady_records_per_s']:,.0f} records/s, {result['steady_mb_per_s']:.1f} MB/s, "
                     f"{result['steady_cpu_s_per_m']:.2f} CPU s/M" if result.get("ok") else f"FAILED: {result['error']}")
            if result.get("loop_lag_max_ms") is not None:
                shown += (f", loop lag p50 {result['loop_lag_p50_ms']:.2f} p99 {result['loop_lag_p99_ms']:.2f} "
                          f"max {result['loop_lag_max_ms']:.1f} ms")
            if result.get("steady_gc_collections"):
                shown += f", gen2 GCs {result['steady_gc_collections'][2]}"
            if result.get("otel") is not None:
                shown += f", otel {result['otel']}"
            if result.get("otel_spans") is not None:
                shown += (f" ({result['otel_spans']:,} spans, {result['otel_links']:,} links, "
                          f"{result['otel_metric_exports']} metric exports)")
            if result.get("longest_stall_s", 0) > 0.2:
                shown += f" (no records for {result['longest_stall_s']:.2f} s at record {result['longest_stall_at']:,})"
            print(f"  run {run + 1} {client:15s} {shown}", flush=True)
    keys = ("steady_records_per_s", "steady_mb_per_s", "steady_cpu_s_per_m", "steady_broker_cpu_s_per_m",
            "first_record_s", "overall_records_per_s", "process_cpu_s", "broker_cpu_s", "peak_rss_mb")
    for result in (r for rs in runs.values() for r in rs if r.get("ok")):
        result["broker_cpu_s_per_m"] = result["broker_cpu_s"] / records * 1e6
    cell["clients"] = {c: {"runs": rs, "failed": sum(not r.get("ok") for r in rs),
                           **{k: median(rs, k) for k in (*keys, "broker_cpu_s_per_m", *LAG_KEYS)}}
                       for c, rs in runs.items()}
    for client, rs in runs.items():  # the worst wake-up of any run, beside the median of the runs' max
        worst = [r["loop_lag_max_ms"] for r in rs if r.get("ok") and r.get("loop_lag_max_ms") is not None]
        cell["clients"][client]["loop_lag_max_ms_worst"] = max(worst) if worst else None
    for ours_name, other in RATIOS:
        ours, theirs = cell["clients"].get(ours_name), cell["clients"].get(other)
        if ours and theirs and ours["steady_records_per_s"] and theirs["steady_records_per_s"]:
            cell[f"ratio_{ours_name}_{other}"] = ours["steady_records_per_s"] / theirs["steady_records_per_s"]
            cell[f"cpu_ratio_{ours_name}_{other}"] = ours["steady_cpu_s_per_m"] / theirs["steady_cpu_s_per_m"]
            # per run (the same run number: both clients within minutes of each other), for the spread
            cell[f"ratio_runs_{ours_name}_{other}"] = [
                a["steady_records_per_s"] / b["steady_records_per_s"] if a.get("ok") and b.get("ok") else None
                for a, b in zip(ours["runs"], theirs["runs"])]
    for ours_name, other in RSS_RATIOS:
        ours, theirs = cell["clients"].get(ours_name), cell["clients"].get(other)
        if ours and theirs and ours["peak_rss_mb"] and theirs["peak_rss_mb"]:
            cell[f"rss_ratio_{ours_name}_{other}"] = ours["peak_rss_mb"] / theirs["peak_rss_mb"]
    return cell


def kafka_cells(args: argparse.Namespace, cells: list[tuple[int, str, int]]) -> Iterator[dict[str, Any]]:
    from kafka.admin import KafkaAdminClient

    from tests.kafka.broker import KafkaBroker, missing_tools

    if missing_tools():
        raise RuntimeError(f"the Kafka broker needs {', '.join(missing_tools())}")

    class BenchKafkaBroker(KafkaBroker):
        def _java(self, *java_args: str) -> list[str]:  # full JIT: the tests' broker is C1-only
            return [a for a in super()._java(*java_args) if a != "-XX:TieredStopAtLevel=1"]

    broker = BenchKafkaBroker(version=args.kafka_version)
    try:
        broker.start()
        assert broker.proc is not None
        warm_up(broker.bootstrap)
        for size, codec, partitions in cells:
            topic = f"tp-{size}-{codec}-{partitions}-{uuid.uuid4().hex[:6]}"
            with cell_errors("kafka", size, codec, partitions):
                yield run_cell("kafka", broker.bootstrap, broker.proc.pid, topic, size, codec, partitions, args)
            with contextlib.suppress(Exception):  # frees the disk
                admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
                admin.delete_topics([topic], timeout_ms=30000)
                admin.close()
    finally:
        broker.close()


def warm_up(bootstrap: str) -> None:
    """One group join, so __consumer_offsets exists before the first measured client."""
    from kafka import KafkaConsumer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic("warm-up", 1, 1)])
    admin.close()
    consumer = KafkaConsumer("warm-up", bootstrap_servers=bootstrap, group_id="warm-up", metadata_max_age_ms=2000)
    deadline = time.monotonic() + 60
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(timeout_ms=100)
    consumer.close()


@contextlib.contextmanager
def cell_errors(broker: str, size: int, codec: str, partitions: int) -> Iterator[None]:
    """A cell that cannot be set up (e.g. a failed produce) is reported and skipped."""
    try:
        yield
    except Exception as exc:
        print(f"[{broker}] {size} B {codec} p{partitions} skipped: {type(exc).__name__}: {exc}",
              file=sys.stderr, flush=True)


def embedded_cells(args: argparse.Namespace, cells: list[tuple[int, str, int]]) -> Iterator[dict[str, Any]]:
    for size, codec, partitions in cells:  # a fresh broker per cell: it keeps every topic in memory
        with cell_errors("embedded", size, codec, partitions), coordinator() as broker:
            yield run_cell("embedded", broker.bootstrap, broker.pid, f"tp-{size}-{codec}-{partitions}", size, codec,
                           partitions, args)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)

    def listed(kind: type) -> Callable[[str], list[Any]]:
        return lambda text: [kind(x) for x in text.split(",") if x]

    parser.add_argument("--brokers", type=listed(str), default=None, help="kafka,embedded (default both)")
    parser.add_argument("--sizes", type=listed(int), default=None, help="value bytes (default 100,1000,10000)")
    parser.add_argument("--codecs", type=listed(str), default=None, help="default none,lz4,zstd,gzip")
    parser.add_argument("--partitions", type=listed(int), default=None, help="default 6,60")
    parser.add_argument("--clients", type=listed(str), default=None,
                        help=f"default {','.join(DEFAULT_CLIENTS)}; also {','.join(OTEL_CLIENTS)} "
                             f"(otel: groupclient and all of these), {','.join(PURE_PYTHON)} and confluent-aio")
    parser.add_argument("--kafka-version", default="4.4.0", help="the Apache Kafka broker's (default 4.4.0)")
    parser.add_argument("--mb", type=float, default=None, help="value megabytes per cell (default 60)")
    parser.add_argument("--min-records", type=int, default=None, help="default 20000")
    parser.add_argument("--max-records", type=int, default=None, help="default 1,000,000 (--matrix 300,000)")
    parser.add_argument("--runs", type=int, default=None, help="runs per client and cell, median (default 3)")
    parser.add_argument("--max-poll-records", type=int, default=500, help="python clients (default 500)")
    parser.add_argument("--confluent-config", type=json.loads, default=None,
                        help='JSON, more librdkafka settings, e.g. \'{"fetch.queue.backoff.ms": 10}\' '
                             '(--matrix: that one)')
    parser.add_argument("--no-loop-lag", dest="loop_lag", action="store_false",
                        help="asyncio clients: no event-loop lag watchdog (it costs them some CPU)")
    parser.add_argument("--rebalance", action="store_true",
                        help="asyncio clients: another member joins each drain's group at the third of the "
                             "records and leaves 1 s later, so the steady span (and its loop lag) has two "
                             "rebalances; the clients commit (auto-commit) and heartbeat every 200 ms")
    parser.add_argument("--gc-freeze", action="store_true",
                        help="workers call gc.freeze() after imports and the client's start, before consuming "
                             "(a full GC of the import-time heap pauses every thread 10-35 ms)")
    parser.add_argument("--traceparent", action="store_true",
                        help="the producer writes a W3C traceparent header on every record (span links)")
    parser.add_argument("--quick", action="store_true", help="embedded, 100 B, none+lz4, 6 partitions, 1 run")
    parser.add_argument("--matrix", action="store_true",
                        help="the record path's matrix: both brokers, 100 B and 1 KB, every codec, 6 partitions, "
                             f"{','.join(MATRIX_CLIENTS)}, 3 runs of at most 300,000 records")
    parser.add_argument("--docs", type=Path, default=None,
                        help="rewrite the block of this markdown file (docs/performance.md) between "
                             "'<!-- throughput matrix: begin -->' and '<!-- throughput matrix: end -->'")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    parser.add_argument("--plot", type=Path, default=None, help="write a bar chart (matplotlib)")
    args = parser.parse_args()
    defaults = ({"brokers": ["embedded"], "sizes": [100], "codecs": ["none", "lz4"], "partitions": [6], "mb": 1.0,
                 "min_records": 10_000, "runs": 1} if args.quick else
                {"brokers": ["kafka", "embedded"], "sizes": [100, 1000], "codecs": list(CODECS), "partitions": [6],
                 "mb": 300.0, "min_records": 20_000, "runs": 3, "max_records": 1_000_000,
                 "clients": list(MATRIX_CLIENTS), "confluent_config": dict(MATRIX_CONFLUENT)} if args.matrix else
                {"brokers": ["kafka", "embedded"], "sizes": [100, 1000, 10000], "codecs": ["none", "lz4", "zstd", "gzip"],
                 "partitions": [6, 60], "mb": 60.0, "min_records": 20_000, "runs": 3})
    defaults.setdefault("clients", list(DEFAULT_CLIENTS))
    defaults.setdefault("confluent_config", {})
    defaults.setdefault("max_records", 1_000_000)
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.clients = list(dict.fromkeys(c for given in args.clients
                                      for c in (("groupclient", *OTEL_CLIENTS) if given == "otel" else (given,))))
    for kind, given, known in (("broker", args.brokers, ("kafka", "embedded")), ("codec", args.codecs, CODECS),
                               ("client", args.clients, CLIENTS)):
        if unknown := [x for x in given if x not in known]:
            parser.error(f"unknown {kind}: {', '.join(unknown)} (known: {', '.join(known)})")
    if any(c in OTEL_CLIENTS for c in args.clients) and not args.traceparent:
        print("note: OpenTelemetry variants without --traceparent: the records carry no producer context, "
              "the spans no links", file=sys.stderr, flush=True)
    logging.basicConfig(level=logging.ERROR)
    found = packages()
    print("packages: " + ", ".join(f"{k} {v}" if v else f"{k} NOT IMPORTABLE" for k, v in found.items()))
    cells = [(s, c, p) for s in args.sizes for c in args.codecs for p in args.partitions]
    results: list[dict[str, Any]] = []
    started = time.monotonic()

    def describe() -> dict[str, Any]:
        return {"packages": found, "python": sys.version.split()[0], "machine": platform.platform(),
                "cpus": os.cpu_count(), **machine(), "kafka_version": args.kafka_version,
                "command": " ".join(["python", "benchmarks/throughput.py", *sys.argv[1:]]),
                "date": time.strftime("%Y-%m-%d"),
                "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                "seconds": time.monotonic() - started}

    def save() -> None:  # after every cell, so a run stopped part-way keeps what it measured
        meta = describe()
        if args.out:
            partial = args.out.with_name(args.out.name + ".partial")
            partial.write_text(json.dumps({"meta": meta, "cells": results}, indent=1))
            partial.replace(args.out)

    def stop(signum: int, _frame: Any) -> None:  # SIGTERM (and SIGINT, ignored by background jobs) end cleanly
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)  # a job started with & inherits SIGINT ignored
    try:
        for broker in args.brokers:
            try:
                for cell in (kafka_cells if broker == "kafka" else embedded_cells)(args, cells):
                    results.append(cell)
                    save()
            except Exception as exc:  # a broker that cannot start: the next broker
                print(f"[{broker}] stopped: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    except KeyboardInterrupt as exc:
        print(f"stopped by {exc or 'SIGINT'} after {len(results)} cells", file=sys.stderr, flush=True)
    finally:
        if results:
            print()
            print(tables(results, args.clients, args.gc_freeze, args.traceparent))
        save()
        if args.plot and results:
            plot(results, args.clients, args.plot)
        if args.docs and results:
            plot_name = os.path.relpath(args.plot, args.docs.parent) if args.plot else None
            write_docs(args.docs, docs_block(results, args.clients, describe(), plot_name))
    return 0 if results and all(not c["clients"][k]["failed"] for c in results for k in args.clients) else 1


if __name__ == "__main__":
    sys.exit(main())
