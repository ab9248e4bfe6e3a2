"""groupclient: Kafka's classic consumer-group protocol in pure Python."""

from __future__ import annotations

from kafka.structs import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition  # the same types as kafka-python

from .consumer.group_consumer import GroupConsumer
from .consumer.interceptors import ConsumerInterceptor
from .consumer.listener import ConsumerRebalanceListener
from .consumer.rebalance_events import RebalanceEvent
from .errors import (
    ArgumentTypeError, CommitFailedError, ConcurrentAccessError, ConfigurationError, FatalError, FatalGroupError,
    GroupClientError, IllegalStateError, InternalError, KafkaTimeoutError, NoBrokersAvailableError,
    RebalanceInProgressError, RebalanceListenerError, RecordDeserializationError, RetriableError,
    UnassignedPartitionError, WakeupError,
)
from .version import __version__

__all__ = [
    "ArgumentTypeError", "CommitFailedError", "ConcurrentAccessError", "ConfigurationError", "ConsumerInterceptor",
    "ConsumerRebalanceListener", "FatalError", "FatalGroupError", "GroupClientError", "GroupConsumer",
    "IllegalStateError", "InternalError",
    "KafkaTimeoutError", "NoBrokersAvailableError", "OffsetAndMetadata", "OffsetAndTimestamp", "RebalanceEvent",
    "RebalanceInProgressError", "RebalanceListenerError", "RecordDeserializationError", "RetriableError", "TopicPartition",
    "UnassignedPartitionError", "WakeupError", "__version__",
]
