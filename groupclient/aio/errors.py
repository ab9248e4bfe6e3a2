"""aiokafka 0.14's error names (``aiokafka.errors.__all__``), for ``except`` clauses that move over
by an import change: ``from groupclient.aio.errors import CommitFailedError``.

Each name is the class groupclient raises (so also the ``kafka.errors`` class of that name, as for
:class:`~groupclient.GroupConsumer`), kafka-python's class where groupclient has none of its own,
or, for the few names neither has, a class of this module.  Kafka error codes keep their numbers.
"""

from __future__ import annotations

import kafka.errors as kafka_errors
from kafka.errors import (
    BrokerResponseError, BrokerNotAvailableError, ClusterAuthorizationFailedError, CorrelationIdError,
    CorruptRecordError, GroupAuthorizationFailedError, IllegalArgumentError, IllegalGenerationError,
    IllegalSaslStateError, InconsistentGroupProtocolError, IncompatibleBrokerVersion, InvalidCommitOffsetSizeError,
    InvalidConfigurationError, InvalidFetchRequestError, InvalidGroupIdError, InvalidPartitionsError,
    InvalidReplicationAssignmentError, InvalidReplicationFactorError, InvalidRequestError, InvalidRequiredAcksError,
    InvalidSessionTimeoutError, InvalidTimestampError, InvalidTopicError, KafkaConnectionError, KafkaError,
    KafkaProtocolError, LeaderNotAvailableError, MessageSizeTooLargeError, NoError, NoOffsetForPartitionError,
    NotControllerError, NotEnoughReplicasAfterAppendError, NotEnoughReplicasError, NotLeaderForPartitionError,
    OffsetMetadataTooLargeError, OffsetOutOfRangeError, PolicyViolationError, RecordListTooLargeError,
    ReplicaNotAvailableError, StaleControllerEpochError, StaleMetadata, TooManyInFlightRequests,
    TopicAlreadyExistsError, TopicAuthorizationFailedError, UnknownError, UnknownMemberIdError,
    UnknownTopicOrPartitionError, UnrecognizedBrokerVersion, UnsupportedForMessageFormatError,
    UnsupportedSaslMechanismError, UnsupportedVersionError,
)

from ..errors import (
    AuthenticationError, CommitFailedError, GroupClientError, IllegalStateError, KafkaTimeoutError,
    NoBrokersAvailableError, NodeNotReadyError, RebalanceInProgressError, RequestTimedOutError,
    UnsupportedCodecError,
)


class ConsumerStoppedError(IllegalStateError):
    """The consumer was stopped: ``getone()``/``getmany()`` after (or during) ``stop()``, as in
    aiokafka; ``async for`` ends instead.  Also an IllegalStateError: create a new consumer."""


class IllegalOperation(IllegalStateError):
    """aiokafka's error for a call the consumer's settings do not allow (commit() or committed()
    without a group_id); also an IllegalStateError, as GroupConsumer raises there."""


class RecordTooLargeError(GroupClientError):
    """aiokafka's name for a record larger than a setting allows."""


class ProducerClosed(GroupClientError):
    """aiokafka's producer error; groupclient has no producer and never raises it."""


class AuthenticationMethodNotSupported(AuthenticationError):
    """aiokafka's name for a SASL mechanism the broker does not offer; groupclient raises
    SaslAuthenticationError (an AuthenticationError, as this is)."""


class KafkaUnavailableError(GroupClientError):
    """aiokafka's legacy name; groupclient raises NoBrokersAvailable (NoBrokersAvailableError)."""


Cancelled = kafka_errors.Cancelled
CorruptRecordException = CorruptRecordError
NoBrokersAvailable = NoBrokersAvailableError
AuthenticationFailedError = AuthenticationError
StaleLeaderEpochCodeError = kafka_errors.NetworkExceptionError  # code 13 in Kafka's table today
GroupLoadInProgressError = kafka_errors.CoordinatorLoadInProgressError
GroupCoordinatorNotAvailableError = kafka_errors.CoordinatorNotAvailableError
NotCoordinatorForGroupError = kafka_errors.NotCoordinatorError

__all__ = [
    "ConsumerStoppedError", "NoOffsetForPartitionError", "RecordTooLargeError", "ProducerClosed", "KafkaError",
    "IllegalStateError", "IllegalArgumentError", "NoBrokersAvailable", "NodeNotReadyError", "KafkaProtocolError",
    "CorrelationIdError", "Cancelled", "TooManyInFlightRequests", "StaleMetadata", "UnrecognizedBrokerVersion",
    "IncompatibleBrokerVersion", "CommitFailedError", "AuthenticationMethodNotSupported",
    "AuthenticationFailedError", "BrokerResponseError", "NoError", "UnknownError", "OffsetOutOfRangeError",
    "CorruptRecordException", "UnknownTopicOrPartitionError", "InvalidFetchRequestError",
    "LeaderNotAvailableError", "NotLeaderForPartitionError", "RequestTimedOutError", "BrokerNotAvailableError",
    "ReplicaNotAvailableError", "MessageSizeTooLargeError", "StaleControllerEpochError",
    "OffsetMetadataTooLargeError", "StaleLeaderEpochCodeError", "GroupLoadInProgressError",
    "GroupCoordinatorNotAvailableError", "NotCoordinatorForGroupError", "InvalidTopicError",
    "RecordListTooLargeError", "NotEnoughReplicasError", "NotEnoughReplicasAfterAppendError",
    "InvalidRequiredAcksError", "IllegalGenerationError", "InconsistentGroupProtocolError", "InvalidGroupIdError",
    "UnknownMemberIdError", "InvalidSessionTimeoutError", "RebalanceInProgressError",
    "InvalidCommitOffsetSizeError", "TopicAuthorizationFailedError", "GroupAuthorizationFailedError",
    "ClusterAuthorizationFailedError", "InvalidTimestampError", "UnsupportedSaslMechanismError",
    "IllegalSaslStateError", "UnsupportedVersionError", "TopicAlreadyExistsError", "InvalidPartitionsError",
    "InvalidReplicationFactorError", "InvalidReplicationAssignmentError", "InvalidConfigurationError",
    "NotControllerError", "InvalidRequestError", "UnsupportedForMessageFormatError", "PolicyViolationError",
    "KafkaUnavailableError", "KafkaTimeoutError", "KafkaConnectionError", "UnsupportedCodecError",
    "IllegalOperation",  # not in aiokafka's __all__, but what its consumer raises without a group_id
]
