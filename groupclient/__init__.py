"""groupclient: Kafka's classic consumer-group protocol in pure Python."""

from __future__ import annotations

__version__ = "0.1.0.dev0"

from kafka.structs import (  # noqa: E402  (the same types as kafka-python)
    OffsetAndMetadata, OffsetAndTimestamp, TopicPartition,
)

from .consumer.group_consumer import GroupConsumer  # noqa: E402
from .consumer.interceptors import ConsumerInterceptor  # noqa: E402
from .consumer.listener import ConsumerRebalanceListener  # noqa: E402
from .consumer.rebalance_events import RebalanceEvent  # noqa: E402
from .errors import (  # noqa: E402
    ArgumentTypeError, CommitFailedError, ConcurrentAccessError, ConfigurationError, FatalGroupError,
    GroupClientError, IllegalStateError, KafkaTimeoutError, NoBrokersAvailableError, RebalanceInProgressError,
    RebalanceListenerError, RetriableError, UnassignedPartitionError, WakeupError,
)

__all__ = [
    "ArgumentTypeError", "CommitFailedError", "ConcurrentAccessError", "ConfigurationError", "ConsumerInterceptor",
    "ConsumerRebalanceListener", "FatalGroupError", "GroupClientError", "GroupConsumer", "IllegalStateError",
    "KafkaTimeoutError", "NoBrokersAvailableError", "OffsetAndMetadata", "OffsetAndTimestamp", "RebalanceEvent",
    "RebalanceInProgressError", "RebalanceListenerError", "RetriableError", "TopicPartition",
    "UnassignedPartitionError", "WakeupError", "__version__",
]
