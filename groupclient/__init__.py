"""groupclient: Kafka's classic consumer-group protocol in pure Python."""

from __future__ import annotations

__version__ = "0.1.0.dev0"

from kafka.structs import OffsetAndMetadata, TopicPartition  # noqa: E402  (the same types as kafka-python)

from .consumer.group_consumer import GroupConsumer  # noqa: E402
from .consumer.listener import ConsumerRebalanceListener  # noqa: E402
from .errors import (  # noqa: E402
    CommitFailedError, ConcurrentAccessError, ConfigurationError, FatalGroupError, GroupClientError,
    IllegalStateError, KafkaTimeoutError, RetriableError, WakeupError,
)

__all__ = [
    "CommitFailedError", "ConcurrentAccessError", "ConfigurationError", "ConsumerRebalanceListener",
    "FatalGroupError", "GroupClientError", "GroupConsumer", "IllegalStateError", "KafkaTimeoutError",
    "OffsetAndMetadata", "RetriableError", "TopicPartition", "WakeupError", "__version__",
]
