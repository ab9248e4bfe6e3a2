"""Where a group lives: Kafka's partitioning of group ids over ``__consumer_offsets``."""

from __future__ import annotations

from functools import lru_cache


def java_string_hashcode(text: str) -> int:
    """``java.lang.String.hashCode``: s[0]*31^(n-1) + ... over UTF-16 code units, as int32."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


@lru_cache(maxsize=65536)  # every group request asks it: the hash is a Python loop over the id
def offsets_partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode) % groupMetadataTopicPartitionCount``.

    Kafka's ``Utils.abs`` maps Integer.MIN_VALUE to 0 rather than overflowing.
    """
    h = java_string_hashcode(group_id)
    return (0 if h == -(2**31) else abs(h)) % num_partitions


def elect_leader(partition: int, node_ids: list[int], live: set[int]) -> int | None:
    """The preferred node if it is live, else the next live node in ring order."""
    if not node_ids:
        return None
    start = partition % len(node_ids)
    for step in range(len(node_ids)):
        candidate = node_ids[(start + step) % len(node_ids)]
        if candidate in live:
            return candidate
    return None
