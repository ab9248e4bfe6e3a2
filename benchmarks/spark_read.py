"""Reading a Kafka topic into Spark: Spark's own Kafka source against groupclient.spark's read_batch,
consume and ``format("groupclient")``, on the same data in the same run and the same SparkSession.

Usage (from the repository root, so that ``benchmarks`` and ``tests`` import):

    python benchmarks/spark_read.py --out results.json

    # quick: the embedded coordinator only, 20,000 records, 1 run
    python benchmarks/spark_read.py --quick
    python benchmarks/spark_read.py --brokers kafka --records 1000000 --partitions 8 --runs 5
    # groupclient's readers only (no Maven download)
    python benchmarks/spark_read.py --quick --readers read_batch,consume,datasource

The session is ``local[2]`` on 127.0.0.1 with the UI off (like tests/spark/conftest.py).  Spark's
Kafka source is ``org.apache.spark:spark-sql-kafka-0-10_2.13:<pyspark version>`` from Maven Central,
fetched with its runtime dependencies into ``~/.cache/groupclient/spark-kafka-<version>/libs`` once
(benchmarks/spark_setup.py; the jars pyspark ships itself are left out) and put on ``spark.jars``.

Per broker (--brokers embedded,kafka: the embedded coordinator with one node, and Apache Kafka 4.1
from tests/kafka/broker.py) one topic of --records records (default 400,000; keys ``k<i>``,
--value-size bytes of value, default 100) over --partitions partitions (default 8) is produced once
by confluent-kafka's Producer (batch 64 KiB, linger 10 ms).  Then, --runs times (default 3), the
reader order rotating per run, each reader reads the whole topic (--readers picks them):

- ``spark-kafka``: ``spark.read.format("kafka")`` with ``subscribe`` and ``startingOffsets=earliest``,
  then ``.write.format("noop").mode("overwrite").save()``, which materializes every column;
- ``read_batch``: ``run_batch_read(spark, topic, config, members=2)`` (what ``read_batch`` returns is
  its ``.dataframe``) plus the same noop write of the DataFrame;
- ``consume``: ``consume(spark, topic, config, len, stop=StopWhen(at_end=True), members=2)``: the
  handler only takes ``len`` of each Arrow table;
- ``datasource``: ``spark.read.format("groupclient")`` with ``group.id``, ``topics`` and
  ``auto.offset.reset=earliest``, plus the noop write.

Every groupclient reader uses a fresh group with ``auto_offset_reset="earliest"``.  The time is the
call plus the materialization.  Correctness, checked every run outside the timed span: the
DataFrame's ``count()`` (consume: the sum of its reports' records) must equal the records produced.
For read_batch and consume the records per member come from the ``MemberReport``s, and the largest
member's share of them; the table adds each member's rebalances (assignments received: 1 when both
members joined in one round, 2 when the second joined after the first was assigned).  Figures
are medians over the runs; ratios are a reader's records/s over Spark's Kafka source's.  Targets:
read_batch >= 1.0x, consume >= 1.5x, and no member above 60% with 2 members.  Before the timed runs every reader reads a small topic once, untimed (--no-warmup: not),
so that none pays for the JVM's and the Python workers' first use.  A Markdown table is printed;
--out writes every run as JSON.

Caveat: Spark's Kafka source runs with its defaults, as users get it.  Each of its tasks (one per
Kafka partition) then waits ~0.5 s at the end of its range, the Kafka consumer's
fetch.max.wait.ms (on 2 cores, 8 partitions: ~2 s a read whatever the topic's size, on either
broker); ``--spark-kafka-option kafka.fetch.max.wait.ms=10`` measures it without that wait.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.spark_setup import (  # noqa: E402
    CONNECTOR, ConnectorMissing, broker, fetch_connector, produce, pyspark_version, skipped_jars, spark_session)

READERS = ("spark-kafka", "read_batch", "consume", "datasource")
TARGETS: dict[str, float] = {"read_batch": 1.0, "consume": 1.5}  # records/s over Spark's Kafka source
MAX_SHARE = 0.60  # the largest member's share of the records, with 2 members
MEMBERS = 2
WARMUP_RECORDS = 2000

Reader = Callable[[Any, str, str], dict[str, Any]]


def _noop(frame: Any) -> None:
    frame.write.format("noop").mode("overwrite").save()


def _config(bootstrap: str, reader: str) -> dict[str, Any]:
    return {"bootstrap_servers": bootstrap, "group_id": f"bench-{reader}-{uuid.uuid4().hex[:8]}",
            "auto_offset_reset": "earliest"}


def _members(reports: list[Any]) -> dict[str, Any]:
    counts = [int(r.records) for r in sorted(reports, key=lambda r: (r.task, r.attempt))]
    total = sum(counts)
    return {"member_records": counts, "max_share": max(counts) / total if total else None,
            "rebalances": [r.rebalances for r in reports], "failed_commits": sum(r.failed_commits for r in reports)}


SPARK_KAFKA_OPTIONS: dict[str, str] = {}  # --spark-kafka-option: added to the Kafka source's options


def read_spark_kafka(spark: Any, bootstrap: str, topic: str) -> dict[str, Any]:
    def frame() -> Any:
        return (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic).option("startingOffsets", "earliest")
                .options(**SPARK_KAFKA_OPTIONS).load())
    started = time.perf_counter()
    _noop(frame())
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "rows": frame().count()}


def read_batch(spark: Any, bootstrap: str, topic: str) -> dict[str, Any]:
    from groupclient.spark import run_batch_read
    started = time.perf_counter()
    read = run_batch_read(spark, topic, _config(bootstrap, "read_batch"), members=MEMBERS)
    _noop(read.dataframe)
    seconds = time.perf_counter() - started
    result = {"seconds": seconds, "rows": read.dataframe.count(), "duplicates": len(read.duplicates),
              **_members(read.reports)}
    if read.location.startswith("file://"):
        shutil.rmtree(read.location[len("file://"):], ignore_errors=True)
    return result


def read_consume(spark: Any, bootstrap: str, topic: str) -> dict[str, Any]:
    from groupclient.spark import StopWhen, consume
    started = time.perf_counter()
    # len: a handler that does next to nothing with each Arrow table (and pickles as a builtin)
    reports = consume(spark, topic, _config(bootstrap, "consume"), len, stop=StopWhen(at_end=True), members=MEMBERS)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "rows": sum(r.records for r in reports), **_members(reports)}


def read_datasource(spark: Any, bootstrap: str, topic: str) -> dict[str, Any]:
    group = _config(bootstrap, "datasource")["group_id"]

    def frame() -> Any:
        return (spark.read.format("groupclient").option("kafka.bootstrap.servers", bootstrap)
                .option("group.id", group).option("topics", topic).option("auto.offset.reset", "earliest").load())
    started = time.perf_counter()
    _noop(frame())
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "rows": frame().count()}  # the data source commits nothing


FUNCTIONS: dict[str, Reader] = {"spark-kafka": read_spark_kafka, "read_batch": read_batch,
                                "consume": read_consume, "datasource": read_datasource}


def bench_broker(spark: Any, name: str, args: argparse.Namespace) -> dict[str, Any]:
    """Produce the topic on broker ``name`` and read it with every reader, ``args.runs`` times."""
    with broker(name) as bootstrap:
        topic = f"spark-read-{uuid.uuid4().hex[:8]}"
        produce_s = produce(bootstrap, topic, args.records, args.partitions, args.value_size)
        print(f"[{name}] {args.records:,} records produced to {topic} in {produce_s:.1f} s", flush=True)
        if args.warmup:
            small = f"spark-read-warmup-{uuid.uuid4().hex[:8]}"
            produce(bootstrap, small, WARMUP_RECORDS, args.partitions, args.value_size)
            for reader in args.readers:
                FUNCTIONS[reader](spark, bootstrap, small)
        runs: dict[str, list[dict[str, Any]]] = {reader: [] for reader in args.readers}
        for run in range(args.runs):
            shift = run % len(args.readers)
            for reader in args.readers[shift:] + args.readers[:shift]:
                result = FUNCTIONS[reader](spark, bootstrap, topic)
                result.update(run=run, ok=result["rows"] == args.records,
                              records_per_s=args.records / result["seconds"])
                runs[reader].append(result)
                print(f"[{name}] run {run + 1}/{args.runs} {reader}: {result['seconds']:.2f} s, "
                      f"{result['records_per_s']:,.0f} records/s, {result['rows']:,} rows"
                      + ("" if result["ok"] else f"  WRONG: {args.records:,} produced"), flush=True)
    return {"broker": name, "topic": topic, "produce_s": produce_s, "readers": summarize(runs)}


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Medians per reader, ratios to Spark's Kafka source and the targets' verdicts."""
    out: dict[str, Any] = {}
    for reader, results in runs.items():
        shares = [r["max_share"] for r in results if r.get("max_share") is not None]
        out[reader] = {"seconds": statistics.median(r["seconds"] for r in results),
                       "records_per_s": statistics.median(r["records_per_s"] for r in results),
                       "ok": all(r["ok"] for r in results), "rows": [r["rows"] for r in results],
                       "max_share": max(shares) if shares else None,
                       "member_records": [r["member_records"] for r in results if "member_records" in r],
                       "rebalances": [r["rebalances"] for r in results if "rebalances" in r],
                       "runs": results}
    base = out.get("spark-kafka")
    for reader, cell in out.items():
        cell["ratio"] = cell["records_per_s"] / base["records_per_s"] if base and reader != "spark-kafka" else None
        target = TARGETS.get(reader)
        cell["target"] = target
        cell["target_met"] = None if target is None or cell["ratio"] is None else cell["ratio"] >= target
        cell["share_met"] = None if cell["max_share"] is None else cell["max_share"] <= MAX_SHARE
    return out


def table(result: dict[str, Any], records: int) -> str:
    def verdict(met: bool | None) -> str:
        return "" if met is None else (" PASS" if met else " MISS")
    lines = [f"### {result['broker']}: {records:,} records, produced in {result['produce_s']:.1f} s", "",
             "| reader | records/s | s | × Spark Kafka | target | records per member (rebalances) "
             "| max share (≤ 60%) | rows |",
             "| --- | ---: | ---: | ---: | --- | --- | ---: | --- |"]
    for reader, cell in result["readers"].items():
        ratio = "—" if cell["ratio"] is None else f"{cell['ratio']:.2f}×"
        target = "—" if cell["target"] is None else f"≥ {cell['target']:.1f}×{verdict(cell['target_met'])}"
        members = "; ".join("/".join(f"{n:,}" for n in counts) + " (" + "/".join(map(str, rebalances)) + ")"
                            for counts, rebalances in zip(cell["member_records"], cell["rebalances"])) or "—"
        share = "—" if cell["max_share"] is None else f"{cell['max_share']:.0%}{verdict(cell['share_met'])}"
        rows = ("ok " if cell["ok"] else "WRONG ") + ", ".join(f"{n:,}" for n in cell["rows"])
        lines.append(f"| {reader} | {cell['records_per_s']:,.0f} | {cell['seconds']:.2f} | {ratio} | {target} "
                     f"| {members} | {share} | {rows} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    def listed(text: str) -> list[str]:
        return [part.strip() for part in text.split(",") if part.strip()]
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", type=listed, default=["embedded", "kafka"], help="embedded,kafka (default both)")
    parser.add_argument("--readers", type=listed, default=list(READERS), help=f"default {','.join(READERS)}")
    parser.add_argument("--records", type=int, default=400_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--value-size", type=int, default=100, help="value bytes (default 100)")
    parser.add_argument("--runs", type=int, default=3, help="runs per reader, median (default 3)")
    parser.add_argument("--no-warmup", dest="warmup", action="store_false", help="no untimed first read")
    parser.add_argument("--spark-kafka-option", dest="spark_kafka_options", action="append", default=[],
                        metavar="KEY=VALUE", help="an option of Spark's Kafka source, e.g. kafka.fetch.max.wait.ms=10")
    parser.add_argument("--log-level", default="ERROR", help="Spark's log level (default ERROR)")
    parser.add_argument("--quick", action="store_true", help="embedded only, 20,000 records, 1 run")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    args = parser.parse_args(argv)
    if args.quick:
        args.brokers, args.records, args.runs = ["embedded"], 20_000, 1
    unknown = [r for r in args.readers if r not in READERS]
    unknown += [b for b in args.brokers if b not in ("embedded", "kafka")]
    if unknown or not args.readers or args.runs < 1:
        parser.error(f"unknown or missing readers/brokers {unknown}; readers: {', '.join(READERS)}")
    if any("=" not in option for option in args.spark_kafka_options):
        parser.error("--spark-kafka-option takes KEY=VALUE")
    return args


def main(argv: list[str] | None = None, spark: Any = None) -> int:
    """Run the benchmark; with ``spark`` given, in that session (which must have Spark's Kafka
    connector on its classpath for the ``spark-kafka`` reader), else in a new one."""
    args = parse_args(argv)
    SPARK_KAFKA_OPTIONS.clear()
    SPARK_KAFKA_OPTIONS.update(option.split("=", 1) for option in args.spark_kafka_options)
    started = time.monotonic()
    jars: list[Path] = []
    own = spark is None
    if own and "spark-kafka" in args.readers:
        if shutil.which("mvn") is None:
            print("Spark's Kafka source needs Maven (mvn) to fetch "
                  f"{CONNECTOR.format(version=pyspark_version())}; or leave it out with --readers", file=sys.stderr)
            return 2
        try:
            jars = fetch_connector()
        except ConnectorMissing as exc:
            print(f"{exc}\nInstall a pyspark whose connector is published, or leave spark-kafka out with --readers",
                  file=sys.stderr)
            return 2
    if own:
        spark = spark_session(jars, log_level=args.log_level)
    try:
        from groupclient.spark import register
        register(spark)
        results = [bench_broker(spark, name, args) for name in args.brokers]
    finally:
        if own:
            spark.stop()
    elapsed = time.monotonic() - started
    for result in results:
        print("\n" + table(result, args.records))
    print(f"\nTargets: read_batch ≥ 1.0× and consume ≥ 1.5× Spark's Kafka source's records/s; with {MEMBERS} "
          f"members no member above {MAX_SHARE:.0%} of the records.  Total {elapsed:.0f} s.")
    if args.out is not None:
        meta = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                "pyspark": pyspark_version(), "python": platform.python_version(), "machine": platform.machine(),
                "connector": CONNECTOR.format(version=pyspark_version()) if jars else None,
                "jars": [j.name for j in jars], "jars_left_out": skipped_jars() if jars else [],
                "elapsed_s": elapsed}
        args.out.write_text(json.dumps({"meta": meta, "brokers": results}, indent=2) + "\n")
        print(f"wrote {args.out}")
    ok = all(cell["ok"] for result in results for cell in result["readers"].values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
