"""The durable staging area of a batch read: where records are delivered before their offsets are
committed.

A task writes each batch of records as one Parquet file and commits the batch's offsets to the
group only once the file is in place.  So every committed offset has its records in a file that
outlives the task, whatever happens to the task after the commit.  A file is written under a
hidden name, its offset ranges are written to ``_ranges/``, and then it is renamed into place:
a reader never sees half a file, and every visible file has its ranges.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

RANGES_DIR = "_ranges"  # a leading "_" keeps Spark's file listing out of it


def arrow_uri(uri: str) -> str:
    """pyarrow's name for a Hadoop-style URI (s3a:// is s3:// to pyarrow)."""
    for hadoop, arrow in (("s3a://", "s3://"), ("s3n://", "s3://")):
        if uri.startswith(hadoop):
            return arrow + uri[len(hadoop):]
    return uri


def spark_uri(location: str) -> str:
    """A location with a scheme, so that Spark does not read a bare path on its default
    filesystem (HDFS on most clusters) while the tasks wrote to their local disk."""
    if "://" in location:
        return location
    return "file://" + os.path.abspath(location)


@dataclass(frozen=True)
class FileRanges:
    name: str
    ranges: dict[tuple[str, int], tuple[int, int]]  # (topic, partition) -> first, last offset


class Staging:
    def __init__(self, uri: str) -> None:
        self.uri = spark_uri(uri)
        self._fs, self._path = pafs.FileSystem.from_uri(arrow_uri(self.uri))
        self._local = isinstance(self._fs, pafs.LocalFileSystem)

    def create(self) -> None:
        self._fs.create_dir(f"{self._path}/{RANGES_DIR}", recursive=True)

    def write(self, table: pa.Table, name: str) -> FileRanges:
        """Write ``table`` as ``name`` durably; returns the offsets it holds."""
        ranges = table_ranges(table)
        final, hidden = f"{self._path}/{name}", f"{self._path}/.{name}.tmp"
        pq.write_table(table, hidden, filesystem=self._fs)
        self._sync(hidden)
        encoded = json.dumps([[t, p, first, last] for (t, p), (first, last) in sorted(ranges.items())])
        with self._fs.open_output_stream(f"{self._path}/{RANGES_DIR}/{name}.json") as out:
            out.write(encoded.encode())
        self._sync(f"{self._path}/{RANGES_DIR}/{name}.json")
        self._fs.move(hidden, final)
        self._sync(self._path)
        return FileRanges(name, ranges)

    def files(self) -> list[FileRanges]:
        """Every data file in place, with its ranges."""
        found = []
        selector = pafs.FileSelector(self._path, allow_not_found=True)
        for info in self._fs.get_file_info(selector):
            base = info.base_name
            if info.type != pafs.FileType.File or base.startswith((".", "_")):
                continue
            with self._fs.open_input_stream(f"{self._path}/{RANGES_DIR}/{base}.json") as src:
                entries = json.loads(src.read().decode())
            found.append(FileRanges(base, {(t, p): (first, last) for t, p, first, last in entries}))
        return sorted(found, key=lambda f: f.name)

    def remove(self) -> None:
        self._fs.delete_dir(self._path)

    def _sync(self, path: str) -> None:
        # a local file survives the death of the process once written; fsync makes it survive
        # the machine's too.  Object stores make an object durable when the upload completes.
        if not self._local:
            return
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def table_ranges(table: pa.Table) -> dict[tuple[str, int], tuple[int, int]]:
    grouped = table.group_by(["topic", "partition"]).aggregate([("offset", "min"), ("offset", "max")])
    return {(t, p): (lo, hi) for t, p, lo, hi in zip(grouped["topic"].to_pylist(), grouped["partition"].to_pylist(),
                                                     grouped["offset_min"].to_pylist(),
                                                     grouped["offset_max"].to_pylist())}


def overlapping(files: list[FileRanges]) -> list[tuple[Any, ...]]:
    """(topic, partition, file, other file) for every two files whose ranges of one partition
    overlap: the rows a retried or fenced task delivered twice."""
    by_partition: dict[tuple[str, int], list[tuple[int, int, str]]] = {}
    for f in files:
        for tp, (first, last) in f.ranges.items():
            by_partition.setdefault(tp, []).append((first, last, f.name))
    found = []
    for (topic, partition), spans in sorted(by_partition.items()):
        spans.sort()
        reach, owner = -1, ""
        for first, last, name in spans:
            if first <= reach:
                found.append((topic, partition, owner, name))
            if last > reach:
                reach, owner = last, name
    return found

