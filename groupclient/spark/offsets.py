"""Offsets the driver looks up: a topic's partitions, their end offsets, the group's commits.

Plain data out ({topic: {partition: offset}}), so it travels to the executors and into Spark's
offset log as it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..structs import OffsetAndMetadata, TopicPartition

from ..consumer.group_consumer import GroupConsumer
from ..errors import ConfigurationError
from .options import without_group

Offsets = dict[str, dict[int, int]]


def partitions_of(consumer: GroupConsumer, topics: Iterable[str]) -> list[TopicPartition]:
    found: list[TopicPartition] = []
    for topic in topics:
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            raise ConfigurationError(f"topic {topic!r} does not exist (or has no partitions)")
        found.extend(TopicPartition(topic, p) for p in sorted(partitions))
    return found


def end_offsets(topics: Iterable[str], config: dict[str, Any]) -> Offsets:
    """Each partition's end offset now, looked up by a consumer that joins no group."""
    with GroupConsumer(**without_group(config)) as consumer:
        return nested(consumer.end_offsets(partitions_of(consumer, topics)))


def nested(flat: dict[TopicPartition, int]) -> Offsets:
    out: Offsets = {}
    for tp, offset in sorted(flat.items()):
        out.setdefault(tp.topic, {})[tp.partition] = offset
    return out


def flat(offsets: dict[str, dict[Any, int]]) -> dict[TopicPartition, int]:
    """The inverse of nested(); partition keys may be strings (JSON offsets in Spark's log)."""
    return {TopicPartition(t, int(p)): int(o) for t, parts in offsets.items() for p, o in parts.items()}


def committed_offsets(consumer: GroupConsumer, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
    """The group's committed offset of each partition that has one."""
    found = {}
    for tp in partitions:
        offset = consumer.committed(tp)
        if isinstance(offset, int) and offset >= 0:
            found[tp] = offset
    return found


def committed_or_reset(consumer: GroupConsumer, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
    """Where the group goes on from for each partition: its committed offset, or, without one,
    where ``auto_offset_reset`` points (``none`` makes that an error, as in the consumer)."""
    positions: dict[TopicPartition, int] = {}
    missing = []
    for tp in partitions:
        found = consumer.committed(tp, metadata=True)
        if isinstance(found, OffsetAndMetadata) and found.offset >= 0:
            positions[tp] = found.offset
        else:
            missing.append(tp)
    if missing:
        reset = consumer.config["auto_offset_reset"]
        if reset == "none":
            raise ConfigurationError(f"no committed offset for {missing} and auto_offset_reset is 'none'")
        lookup = consumer.beginning_offsets if reset == "earliest" else consumer.end_offsets
        positions.update(lookup(missing))
    return positions
