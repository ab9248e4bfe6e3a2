"""The record and partition types of the consumer's API: kafka-python's own classes, typed.

At run time these are kafka-python's namedtuples themselves (``kafka.structs.TopicPartition``,
``kafka.consumer.fetcher.ConsumerRecord``, ...), so a kafka-python program that builds, compares,
pickles or ``isinstance``-checks them works unchanged.  kafka-python ships no types, so to a type
checker they would be ``Any``; the declarations under ``TYPE_CHECKING`` give them their fields and
types: ``record.offset`` is an ``int``, ``consumer.poll()`` a ``dict[TopicPartition,
list[ConsumerRecord[K, V]]]``, and a misspelt field is an error before the program runs.

``ConsumerRecord[K, V]`` is generic in its key and value types, as aiokafka's is: ``key`` is
``K | None`` and ``value`` ``V | None``.  ``GroupConsumer[K, V]`` and ``AsyncGroupConsumer[K, V]``
take K and V from their ``key_deserializer`` and ``value_deserializer`` (what they return), and
are ``bytes`` without one.  ``None`` is a missing key or a tombstone's value, which
``GroupConsumer`` hands out without calling the deserializer (``AsyncGroupConsumer``, as aiokafka,
calls it with ``None``: there ``None`` comes only if the deserializer returns it).  A bare
``ConsumerRecord`` is ``ConsumerRecord[bytes, bytes]``.

At run time ``ConsumerRecord[bytes, bytes]`` is a ``types.GenericAlias`` of kafka-python's class
(a namedtuple is a tuple, and ``tuple`` is subscriptable), so annotations that are evaluated
(without ``from __future__ import annotations``, or by ``typing.get_type_hints``) work too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

if TYPE_CHECKING:
    from collections.abc import Sequence

    # PEP 696 defaults (bytes: no deserializer) for type checkers; at run time the plain
    # TypeVars below (typing's has no default before Python 3.13, and defaults change nothing
    # at run time)
    from typing_extensions import TypeVar as DefaultedTypeVar

    K = DefaultedTypeVar("K", covariant=True, default=bytes)
    V = DefaultedTypeVar("V", covariant=True, default=bytes)

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

    class ConsumerRecord(NamedTuple, Generic[K, V]):
        """One record ``poll()`` returns.  ``key`` and ``value`` are what the deserializers made
        of them (``bytes`` without one), None for a missing key or a tombstone's value (see the
        module's docstring); ``timestamp`` is milliseconds since the epoch, ``timestamp_type`` 0
        (create time) or 1 (log append time); ``headers`` are ``(key, value)`` pairs; ``checksum``
        is None (record batches have one CRC per batch); the sizes are those of the serialized
        key, value and headers (-1 for a missing one)."""

        topic: str
        partition: int
        leader_epoch: int
        offset: int
        timestamp: int
        timestamp_type: int
        key: K | None
        value: V | None
        headers: Sequence[tuple[str, bytes | None]]  # a list; a tuple in groupclient.aio's records
        checksum: int | None
        serialized_key_size: int
        serialized_value_size: int
        serialized_header_size: int
else:
    from kafka.consumer.fetcher import ConsumerRecord
    from kafka.structs import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition

    K = TypeVar("K", covariant=True)
    V = TypeVar("V", covariant=True)

__all__ = ["ConsumerRecord", "OffsetAndMetadata", "OffsetAndTimestamp", "TopicPartition"]
