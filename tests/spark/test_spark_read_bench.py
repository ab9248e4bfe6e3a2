"""benchmarks/spark_read.py runs: groupclient's readers on the embedded coordinator, one small run
in the tests' session (Spark's Kafka source is left out: it needs a Maven download)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.spark_read import main

pytestmark = pytest.mark.integration

READERS = ["read_batch", "consume", "datasource"]


def test_the_benchmark_reads_every_record_with_each_groupclient_reader(spark: Any, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results.json"
    code = main(["--brokers", "embedded", "--readers", ",".join(READERS), "--records", "5000", "--partitions", "4",
                 "--runs", "1", "--no-warmup", "--out", str(out)], spark=spark)
    assert code == 0
    (result,) = json.loads(out.read_text())["brokers"]
    assert result["broker"] == "embedded"
    assert list(result["readers"]) == READERS
    for reader, cell in result["readers"].items():
        assert cell["ok"] and cell["rows"] == [5000], reader
        assert cell["records_per_s"] > 0 and cell["ratio"] is None, reader  # no Spark Kafka source to compare to
    for reader in ("read_batch", "consume"):
        (members,) = result["readers"][reader]["member_records"]
        assert len(members) == 2 and sum(members) == 5000, reader
    printed = capsys.readouterr().out
    for reader in READERS:
        assert f"| {reader} |" in printed and "ok 5,000" in printed
