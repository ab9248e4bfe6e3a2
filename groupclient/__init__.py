"""groupclient: Kafka's classic consumer-group protocol in pure Python."""

from __future__ import annotations

# kafka-python's own classes at run time, typed for type checkers (structs.py)
from .structs import ConsumerRecord, OffsetAndMetadata, OffsetAndTimestamp, TopicPartition

from .consumer.group_consumer import GroupConsumer
from .consumer.settings import ConsumerSettings
from .consumer.interceptors import ConsumerInterceptor
from .consumer.listener import ConsumerRebalanceListener, RebalanceListener
from .consumer.rebalance_events import RebalanceEvent
from .protocol.share_group import AcknowledgeType
from .share.consumer import ShareConsumer
from .share.records import ShareRecord
from .share.settings import ShareConsumerSettings
from .errors import (
    AcknowledgementFailedError, ArgumentTypeError, CallTimeoutError, CommitFailedError, ConcurrentAccessError, ConfigurationError, FatalError, FatalGroupError,
    GroupClientError, IllegalStateError, InternalError, KafkaTimeoutError, NoBrokersAvailableError,
    InvalidRecordStateError, RebalanceInProgressError, RebalanceListenerError, RecordDeserializationError,
    RetriableError, UnassignedPartitionError, WakeupError,
)
from .version import __version__

__all__ = [
    "AcknowledgeType", "AcknowledgementFailedError", "ArgumentTypeError", "CallTimeoutError", "CommitFailedError", "ConcurrentAccessError", "ConfigurationError", "ConsumerInterceptor",
    "ConsumerRecord", "ConsumerSettings",
    "ConsumerRebalanceListener", "FatalError", "FatalGroupError", "GroupClientError", "GroupConsumer",
    "IllegalStateError", "InternalError", "InvalidRecordStateError",
    "KafkaTimeoutError", "NoBrokersAvailableError", "OffsetAndMetadata", "OffsetAndTimestamp", "RebalanceEvent",
    "RebalanceInProgressError", "RebalanceListener", "RebalanceListenerError", "RecordDeserializationError", "RetriableError", "ShareConsumer",
    "ShareConsumerSettings", "ShareRecord", "TopicPartition",
    "UnassignedPartitionError", "WakeupError", "__version__",
]
