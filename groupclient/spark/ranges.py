"""Reading one partition's offset range with a consumer that joins no group (executor side)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from ..structs import TopicPartition

from ..clock import Clock, SystemClock
from ..consumer.group_consumer import GroupConsumer
from ..errors import KafkaTimeoutError
from .arrow import records_to_batch
from .options import without_group


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    start: int  # first offset to read
    end: int  # first offset not to read

    def __post_init__(self) -> None:
        if self.start > self.end:
            raise ValueError(f"offset range of {self.topic}:{self.partition} runs backwards: {self.start} > {self.end}")


def read_range(config: dict[str, Any], span: OffsetRange, timeout_ms: int,
               clock: Clock | None = None) -> Iterator[pa.RecordBatch]:
    """Every record of ``span`` as Arrow batches.  Raises KafkaTimeoutError when the range is
    not read within ``timeout_ms`` (a broker down, or offsets that no longer exist and
    ``auto_offset_reset`` moved the position past them)."""
    if span.start >= span.end:
        return
    clock = clock or SystemClock()
    tp = TopicPartition(span.topic, span.partition)
    give_up = clock.monotonic_ms() + timeout_ms
    with GroupConsumer(**without_group(config)) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, span.start)
        while True:
            batch = consumer.poll(timeout_ms=500).get(tp, [])
            kept = [r for r in batch if span.start <= r.offset < span.end]
            if kept:
                yield records_to_batch(kept)
            if consumer.position(tp) >= span.end:
                return
            if clock.monotonic_ms() >= give_up:
                raise KafkaTimeoutError(f"read {span.topic}:{span.partition} only up to offset "
                                        f"{consumer.position(tp)} of {span.start}..{span.end} in {timeout_ms} ms")
