"""The durable staging area of a batch read: where records are delivered before their offsets are
committed.

A task gathers the records it polls (:class:`PendingFile`) and writes them as one Parquet file
once they reach a size or an age (64 MB or 5 s by default) and before it gives partitions up or
stops; it commits their offsets to the group only once the file is in place.  So every committed
offset has its records in a file that outlives the task, whatever happens to the task after the
commit.  A file is written under a hidden name, fsynced and renamed into place (the directory
fsynced after), so a reader never sees half a file; the offset ranges it holds are in its own
footer (key ``groupclient.ranges``), written with it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..structs import TopicPartition
from .arrow import ARROW_SCHEMA

RANGES_KEY = b"groupclient.ranges"
FILE_BYTES = 64 << 20  # records gathered (Arrow, in memory) before a file is written
FILE_MS = 5000  # the longest a polled record waits for its file (and its commit)


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


Ranges = dict[tuple[str, int], tuple[int, int]]  # (topic, partition) -> first, last offset


@dataclass(frozen=True)
class FileRanges:
    name: str
    ranges: Ranges


class Staging:
    def __init__(self, uri: str) -> None:
        self.uri = spark_uri(uri)
        self._fs, self._path = pafs.FileSystem.from_uri(arrow_uri(self.uri))
        self._local = isinstance(self._fs, pafs.LocalFileSystem)

    def create(self) -> None:
        self._fs.create_dir(self._path, recursive=True)

    def write(self, table: pa.Table, name: str, ranges: Ranges | None = None) -> FileRanges:
        """Write ``table`` as ``name`` durably, its offset ranges (computed when not given) in
        its footer; returns them."""
        ranges = table_ranges(table) if ranges is None else ranges
        encoded = json.dumps([[t, p, first, last] for (t, p), (first, last) in sorted(ranges.items())])
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), RANGES_KEY: encoded.encode()})
        final, hidden = f"{self._path}/{name}", f"{self._path}/.{name}.tmp"
        pq.write_table(table, hidden, filesystem=self._fs)
        self._sync(hidden)
        self._fs.move(hidden, final)
        self._sync(self._path)  # the rename itself, before the commit that relies on it
        return FileRanges(name, ranges)

    def files(self) -> list[FileRanges]:
        """Every data file in place, with its ranges."""
        found = []
        selector = pafs.FileSelector(self._path, allow_not_found=True)
        for info in self._fs.get_file_info(selector):
            base = info.base_name
            if info.type != pafs.FileType.File or base.startswith((".", "_")):
                continue
            metadata = pq.read_schema(f"{self._path}/{base}", filesystem=self._fs).metadata or {}
            entries = json.loads(metadata[RANGES_KEY].decode())
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


class PendingFile:
    """The records a task polled and has not staged yet, by partition, with the offsets their
    file's commit will cover.  ``take()`` hands them over as one table for one file."""

    def __init__(self, file_bytes: int = FILE_BYTES, file_ms: int = FILE_MS) -> None:
        self.file_bytes = file_bytes
        self.file_ms = file_ms
        self._batches: dict[TopicPartition, list[pa.RecordBatch]] = {}
        self._offsets: dict[TopicPartition, int] = {}
        self._ranges: Ranges = {}
        self._bytes = 0
        self._since_ms: int | None = None  # when the oldest pending record was added

    def add(self, tp: TopicPartition, batch: pa.RecordBatch | None, commit_offset: int, now_ms: int) -> None:
        """Records of one partition (``batch``, in offset order; None when there were none) and the
        offset to commit for the partition once they are staged."""
        if batch is not None and batch.num_rows:
            self._batches.setdefault(tp, []).append(batch)
            first, last = batch.column(2)[0].as_py(), batch.column(2)[-1].as_py()
            known = self._ranges.get((tp.topic, tp.partition))
            self._ranges[(tp.topic, tp.partition)] = (known[0] if known else first, last)
            self._bytes += batch.nbytes
        self._offsets[tp] = max(self._offsets.get(tp, 0), commit_offset)
        if self._since_ms is None:
            self._since_ms = now_ms

    def due(self, now_ms: int) -> bool:
        """Whether the records gathered are to be staged now: big or old enough."""
        if self._since_ms is None:
            return False
        return self._bytes >= self.file_bytes or now_ms - self._since_ms >= self.file_ms

    def empty(self) -> bool:
        return self._since_ms is None

    def forget(self, partitions: Mapping[TopicPartition, Any] | set[TopicPartition]) -> None:
        """Drop what is pending of ``partitions`` (lost: their next owner reads them again)."""
        for tp in partitions:
            for batch in self._batches.pop(tp, []):
                self._bytes -= batch.nbytes
            self._offsets.pop(tp, None)
            self._ranges.pop((tp.topic, tp.partition), None)
        if not self._offsets:
            self._since_ms = None

    def take(self) -> tuple[pa.Table | None, Ranges, dict[TopicPartition, int]]:
        """(the table to stage, or None when no record is pending; its ranges; the offsets to
        commit once it is staged), and start afresh."""
        batches = [b for tp in sorted(self._batches) for b in self._batches[tp]]
        table = pa.Table.from_batches(batches, schema=ARROW_SCHEMA) if batches else None
        taken = (table, self._ranges, self._offsets)
        self._batches, self._offsets, self._ranges, self._bytes, self._since_ms = {}, {}, {}, 0, None
        return taken


def table_ranges(table: pa.Table) -> Ranges:
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

