"""Reading one partition's offset range with a consumer that joins no group (executor side)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from ..structs import TopicPartition

from ..clock import Clock, SystemClock
from ..consumer.group_consumer import GroupConsumer
from ..errors import KafkaTimeoutError
from .arrow import columns_to_batch
from .options import without_group
from .telemetry import annotate


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    start: int  # first offset to read
    end: int  # first offset not to read

    def __post_init__(self) -> None:
        if self.start > self.end:
            raise ValueError(f"offset range of {self.topic}:{self.partition} runs backwards: {self.start} > {self.end}")


def read_range(config: dict[str, Any], span: OffsetRange, timeout_ms: int, clock: Clock | None = None,
               attributes: Mapping[str, Any] | None = None) -> Iterator[pa.RecordBatch]:
    """Every record of ``span`` as Arrow batches.  Raises KafkaTimeoutError when the range is
    not read within ``timeout_ms`` (a broker down, or offsets that no longer exist and
    ``auto_offset_reset`` moved the position past them).  ``attributes``: carried by every span
    and measurement of the consumer (its Spark task's, telemetry.py)."""
    if span.start >= span.end:
        return
    clock = clock or SystemClock()
    tp = TopicPartition(span.topic, span.partition)
    give_up = clock.monotonic_ms() + timeout_ms
    with GroupConsumer(**without_group(config)) as consumer:
        annotate(consumer, attributes or {})
        consumer.assign([tp])
        consumer.seek(tp, span.start)
        while True:
            parts = consumer._poll_columns(timeout_ms=500).get(tp, [])  # noqa: SLF001 - groupclient.spark's
            kept = [part.part(bisect_left(part.offsets, span.start), bisect_left(part.offsets, span.end))
                    for part in parts]
            if any(len(part) for part in kept):
                yield columns_to_batch(kept)
            if consumer.position(tp) >= span.end:
                return
            if clock.monotonic_ms() >= give_up:
                raise KafkaTimeoutError(f"read {span.topic}:{span.partition} only up to offset "
                                        f"{consumer.position(tp)} of {span.start}..{span.end} in {timeout_ms} ms")
