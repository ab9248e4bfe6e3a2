"""What Kafka 4.1 refuses in a ConsumerGroupHeartbeat before it looks at any group
(``GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid``): INVALID_REQUEST and
UNSUPPORTED_ASSIGNOR, in Kafka's order and words.  A blank string is an empty one, as Java's
``trim().isEmpty()`` has it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...error_codes import ErrorCode
from .errors import HeartbeatError

E = ErrorCode


def _empty(value: str | None) -> bool:
    return value is not None and not value.strip()


def validate_heartbeat(request: Any, assignors: Sequence[str]) -> None:
    """Raise HeartbeatError for what Kafka refuses whatever the group (``assignors``: the ones served)."""
    def invalid(message: str) -> HeartbeatError:
        return HeartbeatError(E.INVALID_REQUEST, message)

    epoch = request.member_epoch
    if (request.version >= 1 or epoch > 0 or epoch == -1) and _empty(request.member_id):
        raise invalid("MemberId can't be empty.")
    if _empty(request.group_id):
        raise invalid("GroupId can't be empty.")
    if _empty(request.instance_id):
        raise invalid("InstanceId can't be empty.")
    if _empty(request.rack_id):
        raise invalid("RackId can't be empty.")
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or request.topic_partitions:
            raise invalid("TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and regex_of(request) is None:
            raise invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    elif epoch == -2:
        if request.instance_id is None:
            raise invalid("InstanceId can't be null.")
    elif epoch < -2:
        raise invalid("MemberEpoch is invalid.")
    if request.server_assignor is not None and request.server_assignor not in assignors:
        raise HeartbeatError(E.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {request.server_assignor} is not supported. "
                                                     f"Supported assignors: {', '.join(assignors)}.")


def regex_of(request: Any) -> str | None:
    """The request's SubscribedTopicRegex (v1; None in v0)."""
    return getattr(request, "subscribed_topic_regex", None)
