"""aiokafka's struct names, for imports that move over: ``from groupclient.aio.structs import
TopicPartition, OffsetAndMetadata``.

They are groupclient's (kafka-python's) classes: ``TopicPartition(topic, partition)`` as in
aiokafka; ``OffsetAndMetadata(offset, metadata)`` builds as aiokafka's does and has a third field,
``leader_epoch`` (default -1); ``ConsumerRecord`` has every attribute of aiokafka's plus
``leader_epoch`` and ``serialized_header_size``, and is a named tuple where aiokafka's is a
dataclass (compare and read records by attribute names, as with aiokafka).
"""

from __future__ import annotations

from ..structs import ConsumerRecord, OffsetAndMetadata, OffsetAndTimestamp, TopicPartition

__all__ = ["ConsumerRecord", "OffsetAndMetadata", "OffsetAndTimestamp", "TopicPartition"]
