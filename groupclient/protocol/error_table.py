"""What the member does about each error code: decided here, once.

Every response handler looks its error up in :data:`GROUP_ACTIONS` instead of writing its own
``if/except`` ladder, so retriable vs fatal is a property of the error, not of the call site.
"""

from __future__ import annotations

import enum

from .errors import ErrorCode

E = ErrorCode


class Action(enum.Enum):
    NONE = "none"
    RETRY = "retry"  # back off and send the same request again
    REDISCOVER = "rediscover"  # mark the coordinator dead and look it up again
    REJOIN = "rejoin"  # a rebalance is on: join again, keep member id and generation
    RESET_MEMBER = "reset-member"  # forget member id and generation, then join again
    RESET_GENERATION = "reset-generation"  # forget the generation (keep the member id), rejoin
    RETRY_WITH_MEMBER_ID = "retry-with-member-id"  # KIP-394: join again with the given id
    REFRESH_METADATA = "refresh-metadata"  # leadership moved: refresh metadata, then retry
    RESET_OFFSET = "reset-offset"  # the position is out of range: apply auto_offset_reset
    FATAL = "fatal"  # raise from poll(); this member cannot go on


GROUP_ACTIONS: dict[ErrorCode, Action] = {
    E.NONE: Action.NONE,
    E.COORDINATOR_LOAD_IN_PROGRESS: Action.RETRY,
    E.REQUEST_TIMED_OUT: Action.RETRY,
    E.NETWORK_EXCEPTION: Action.RETRY,
    E.COORDINATOR_NOT_AVAILABLE: Action.REDISCOVER,
    E.NOT_COORDINATOR: Action.REDISCOVER,
    E.REBALANCE_IN_PROGRESS: Action.REJOIN,
    E.UNKNOWN_MEMBER_ID: Action.RESET_MEMBER,
    E.ILLEGAL_GENERATION: Action.RESET_GENERATION,
    E.MEMBER_ID_REQUIRED: Action.RETRY_WITH_MEMBER_ID,
    E.NOT_LEADER_OR_FOLLOWER: Action.REFRESH_METADATA,
    E.LEADER_NOT_AVAILABLE: Action.REFRESH_METADATA,
    E.UNKNOWN_TOPIC_OR_PARTITION: Action.REFRESH_METADATA,
    E.OFFSET_OUT_OF_RANGE: Action.RESET_OFFSET,
    E.INCONSISTENT_GROUP_PROTOCOL: Action.FATAL,
    E.INVALID_SESSION_TIMEOUT: Action.FATAL,
    E.GROUP_AUTHORIZATION_FAILED: Action.FATAL,
    E.FENCED_INSTANCE_ID: Action.FATAL,
    E.INVALID_GROUP_ID: Action.FATAL,
    E.GROUP_MAX_SIZE_REACHED: Action.FATAL,
    E.UNSUPPORTED_VERSION: Action.FATAL,
    E.OFFSET_METADATA_TOO_LARGE: Action.FATAL,
    E.INVALID_COMMIT_OFFSET_SIZE: Action.FATAL,
}

# Explanations raised with fatal errors, so the user knows what to change.
FATAL_HINTS: dict[ErrorCode, str] = {
    E.INCONSISTENT_GROUP_PROTOCOL: "this member's partition_assignment_strategy shares no assignor with "
                                   "the group's members (or the group uses another protocol type)",
    E.INVALID_SESSION_TIMEOUT: "session_timeout_ms is outside the broker's group.min/max.session.timeout.ms",
    E.GROUP_AUTHORIZATION_FAILED: "this client may not use the group",
    E.FENCED_INSTANCE_ID: "another consumer with the same group_instance_id joined the group",
    E.INVALID_GROUP_ID: "the group id is invalid",
    E.GROUP_MAX_SIZE_REACHED: "the group has reached the broker's group.max.size",
    E.UNSUPPORTED_VERSION: "the broker does not support a request version this client needs",
}


def action_for(code: int) -> Action:
    try:
        return GROUP_ACTIONS.get(ErrorCode(code), Action.FATAL)
    except ValueError:
        return Action.FATAL  # an error code this client does not know
