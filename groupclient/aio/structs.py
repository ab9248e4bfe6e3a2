"""aiokafka's struct names, for imports that move over: ``from groupclient.aio.structs import
TopicPartition, OffsetAndMetadata``.

- ``TopicPartition(topic, partition)``: groupclient's (kafka-python's), as aiokafka's.
- ``OffsetAndMetadata(offset, metadata)`` and ``OffsetAndTimestamp(offset, timestamp)``:
  aiokafka's two-field tuples (``offsets_for_times()`` returns the latter; ``commit()`` takes the
  former, groupclient's three-field one, an int or ``(offset, metadata)``).
- ``ConsumerRecord`` is groupclient's record: every attribute of aiokafka's plus ``leader_epoch``
  and ``serialized_header_size``; a named tuple where aiokafka's is a dataclass, with headers as
  a list of ``(key, value)`` pairs where aiokafka's are a tuple of them (docs/asyncio.md: one
  record type for the sync and asyncio consumers and Spark, read by attribute names).
"""

from __future__ import annotations

from typing import NamedTuple

from ..structs import ConsumerRecord, TopicPartition


class OffsetAndMetadata(NamedTuple):
    """aiokafka's: an offset to commit and its metadata string."""

    offset: int
    metadata: str


class OffsetAndTimestamp(NamedTuple):
    """aiokafka's: what ``offsets_for_times()`` found, the offset and its record's timestamp."""

    offset: int
    timestamp: int


__all__ = ["ConsumerRecord", "OffsetAndMetadata", "OffsetAndTimestamp", "TopicPartition"]
