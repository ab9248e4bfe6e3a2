"""Decoding alone: records/s of the compiled record path and of the Python one, from the same
fetch answers in memory (no broker, no network), in the same run.

    python benchmarks/decode.py                      # 100 B and 1 KB values, every codec
    python benchmarks/decode.py --sizes 100 --codecs lz4 --records 600000 --runs 5

The answers are record batches of --batch-kib (64 KiB, the producers' default batch.size of
librdkafka and this repo's benchmarks) of benchmarks/throughput.py's JSON-like values (lz4 and
snappy compress them ~2.5x, gzip and zstd ~4-5x), built by kafka-python's batch builder, in
fetch answers of 1 MiB (max_partition_fetch_bytes).  Each run decodes every answer with
records.decode_batches, as the fetcher does (CRCs checked, no deserializers, kafka-python's
record shape); per cell the median of --runs runs, and native / python.

The Cython column, where aiokafka is installed: aiokafka's Cython record decoder
(aiokafka.record._crecords: MemoryRecords, each batch's CRC validated, every DefaultRecord made
and its value read) on the same answers.  It is the measurement the choice of Rust over Cython
rests on (docs/performance.md); aiokafka's fetcher then also makes a ConsumerRecord per record
in Python, which this column does not count.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402

from benchmarks.throughput_topics import values  # noqa: E402
from groupclient.consumer import record_path  # noqa: E402
from groupclient.consumer.records import decode_batches  # noqa: E402

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
ANSWER_BYTES = 1 << 20


def answers(size: int, codec: int, records: int, batch_kib: int) -> tuple[list[bytes], int]:
    """Fetch answers (1 MiB of batches each) holding ``records`` records of ``size`` B values."""
    out: list[bytes] = []
    answer = bytearray()
    made, base, source = 0, 0, values(7, size)
    while made < records:
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                                            producer_epoch=-1, base_sequence=-1, batch_size=batch_kib * 1024)
        count = 0
        while made < records:
            if builder.append(count, 1_700_000_000_000 + count, None, next(source), []) is None:
                break
            count, made = count + 1, made + 1
        batch = bytearray(builder.build())
        batch[0:8] = base.to_bytes(8, "big")
        base += count
        if len(answer) + len(batch) > ANSWER_BYTES and answer:
            out.append(bytes(answer))
            answer = bytearray()
        answer += batch
    out.append(bytes(answer))
    return out, made


def decode_all(data: list[bytes]) -> int:
    count = 0
    for answer in data:
        for batch in decode_batches(answer, 0, "t", 0, None, None, True):
            count += len(batch)
    return count


def cython_decode_all(data: list[bytes]) -> int:
    """aiokafka's Cython decoder: every batch's CRC validated, every record made."""
    from aiokafka.record._crecords import MemoryRecords  # type: ignore[import-untyped, unused-ignore]

    count = 0
    for answer in data:
        found = MemoryRecords(answer)
        while found.has_next():
            batch = found.next_batch()
            batch.validate_crc()
            for record in batch:
                record.value  # noqa: B018 (read, as a consumer does)
                count += 1
    return count


def cython_available() -> bool:
    try:
        from aiokafka.record._crecords import MemoryRecords  # noqa: F401  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        return False
    return True


def rate(path: str, data: list[bytes], records: int) -> float:
    saved = record_path.CHOSEN
    record_path.CHOSEN = record_path.NATIVE if path == "native" else None
    try:
        gc.collect()
        started = time.perf_counter()
        decoded = cython_decode_all(data) if path == "cython" else decode_all(data)
        elapsed = time.perf_counter() - started
    finally:
        record_path.CHOSEN = saved
    assert decoded == records, (decoded, records)
    return records / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000", help="value sizes, bytes (default 100,1000)")
    parser.add_argument("--codecs", default=",".join(CODECS), help=f"of {', '.join(CODECS)} (default all)")
    parser.add_argument("--records", type=int, default=300_000, help="records per cell (default 300,000)")
    parser.add_argument("--runs", type=int, default=3, help="runs per path and cell, alternating (default 3)")
    parser.add_argument("--batch-kib", type=int, default=64, help="record batch size, KiB (default 64)")
    args = parser.parse_args(argv)
    if record_path.NATIVE is None:
        print("the compiled record path is not installed (no Rust toolchain at install): nothing to compare",
              file=sys.stderr)
        return 1
    paths = ["native", "python"] + (["cython"] if cython_available() else [])
    cython_heads = " aiokafka Cython records/s | native / Cython |" if "cython" in paths else ""
    print(f"| value size | codec | native records/s | python records/s | native / python |{cython_heads}")
    print("|---|---|---|---|---|" + ("---|---|" if "cython" in paths else ""))
    for size in (int(s) for s in args.sizes.split(",")):
        for name in args.codecs.split(","):
            data, records = answers(size, CODECS[name], args.records, args.batch_kib)
            rates: dict[str, list[float]] = {path: [] for path in paths}
            for _ in range(args.runs):
                for path in paths:
                    rates[path].append(rate(path, data, records))
            native, python = statistics.median(rates["native"]), statistics.median(rates["python"])
            cython = f" {statistics.median(rates['cython']):,.0f} | {native / statistics.median(rates['cython']):.2f} |" \
                if "cython" in paths else ""
            print(f"| {size} B | {name} | {native:,.0f} | {python:,.0f} | {native / python:.2f} |{cython}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
