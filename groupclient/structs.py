"""The record and partition types of the consumer's API: kafka-python's own classes, typed.

At run time these are kafka-python's namedtuples themselves (``kafka.structs.TopicPartition``,
``kafka.consumer.fetcher.ConsumerRecord``, ...), so a kafka-python program that builds, compares,
pickles or ``isinstance``-checks them works unchanged.  kafka-python ships no types, so to a type
checker they would be ``Any``; the declarations under ``TYPE_CHECKING`` give them their fields and
types: ``record.offset`` is an ``int``, ``consumer.poll()`` a ``dict[TopicPartition,
list[ConsumerRecord]]``, and a misspelt field is an error before the program runs.

A record's ``key`` and ``value`` are ``bytes`` (or ``None``) without a deserializer, and whatever
the deserializer returns with one: they are typed ``Any``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Sequence

    class TopicPartition(NamedTuple):
        """A partition of a topic."""

        topic: str
        partition: int

    class OffsetAndMetadata(NamedTuple):
        """An offset to commit (the next record to read) with its metadata string and leader epoch."""

        offset: int
        metadata: str = ""
        leader_epoch: int = -1

    class OffsetAndTimestamp(NamedTuple):
        """The answer of ``offsets_for_times``: the first offset at or after a timestamp."""

        offset: int
        timestamp: int
        leader_epoch: int

    class ConsumerRecord(NamedTuple):
        """One record ``poll()`` returns.  ``timestamp`` is milliseconds since the epoch,
        ``timestamp_type`` 0 (create time) or 1 (log append time); ``headers`` are
        ``(key, value)`` pairs; ``checksum`` is None (record batches have one CRC per batch);
        the sizes are those of the serialized key, value and headers (-1 for a missing one)."""

        topic: str
        partition: int
        leader_epoch: int
        offset: int
        timestamp: int
        timestamp_type: int
        key: Any
        value: Any
        headers: Sequence[tuple[str, bytes | None]]  # a list; a tuple in groupclient.aio's records
        checksum: int | None
        serialized_key_size: int
        serialized_value_size: int
        serialized_header_size: int
else:
    from kafka.consumer.fetcher import ConsumerRecord
    from kafka.structs import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition

__all__ = ["ConsumerRecord", "OffsetAndMetadata", "OffsetAndTimestamp", "TopicPartition"]
