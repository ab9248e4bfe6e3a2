"""Consumer-group administration over the Kafka protocol: list, describe, watch.

:class:`GroupAdmin` works against any broker that speaks the Kafka group protocols (Apache
Kafka, the embedded coordinator), with classic groups and consumer-protocol (KIP-848) ones;
``groupclient groups`` is its command line.
"""

from __future__ import annotations

from .client import (
    AdminConnection, AdminError, AdminTimeoutError, BrokerAnswerError, GroupNotFoundError, UnreachableError,
)
from .groups import GroupAdmin
from .model import Coordinator, GroupDescription, ListedGroup, Member, PartitionLag

__all__ = [
    "AdminConnection", "AdminError", "AdminTimeoutError", "BrokerAnswerError", "Coordinator", "GroupAdmin",
    "GroupDescription", "GroupNotFoundError", "ListedGroup", "Member", "PartitionLag", "UnreachableError",
]
