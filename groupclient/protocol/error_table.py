"""What the client does about an error code on a given API: decided here, once.

Every response handler calls :func:`action_for` with the code and the API it came on, and
:func:`error_for` to build what it raises, so retriable / rediscover / rejoin / fatal is a
property of (API, error), never of a call site.  The tables follow the Java client's response
handlers (AbstractCoordinator, ConsumerCoordinator, Fetcher).  A code that an API does not
expect, including one newer than this client, gets that API's default: the heartbeat only fails
the heartbeat (retried after the backoff), FindCoordinator is asked again, a topic's code in
Metadata is asked about again after the backoff, everything else raises it once as
:class:`UnexpectedBrokerError` and goes on.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from ..errors import BrokerError, FatalGroupError, RequestFailedError, RetriableError, UnexpectedBrokerError
from .apis import ApiKey
from ..error_codes import ErrorCode, known

E = ErrorCode
A = ApiKey


class Action(enum.Enum):
    NONE = "none"
    RETRY = "retry"  # back off and send the same request again
    REDISCOVER = "rediscover"  # mark the coordinator dead, look it up again, then retry
    REJOIN = "rejoin"  # a rebalance is on: join again, keep member id and generation
    RESET_MEMBER = "reset-member"  # forget member id and generation, then join again
    RESET_GENERATION = "reset-generation"  # forget the generation (keep the member id), rejoin
    RETRY_WITH_MEMBER_ID = "retry-with-member-id"  # KIP-394: join again with the given id
    REFRESH_METADATA = "refresh-metadata"  # leadership moved: refresh metadata, then retry
    RESET_OFFSET = "reset-offset"  # the position is out of range: apply auto_offset_reset
    RAISE = "raise"  # raise to the caller once; the consumer itself goes on
    FATAL = "fatal"  # raise from every poll(); this member cannot go on


# What every request to the group coordinator shares.
_COORDINATOR: dict[ErrorCode, Action] = {
    E.NONE: Action.NONE,
    E.COORDINATOR_LOAD_IN_PROGRESS: Action.RETRY,
    E.COORDINATOR_NOT_AVAILABLE: Action.REDISCOVER,
    E.NOT_COORDINATOR: Action.REDISCOVER,
    E.REQUEST_TIMED_OUT: Action.REDISCOVER,
    E.NETWORK_EXCEPTION: Action.REDISCOVER,
    E.GROUP_AUTHORIZATION_FAILED: Action.FATAL,
    E.INVALID_GROUP_ID: Action.FATAL,
    E.FENCED_INSTANCE_ID: Action.FATAL,
    E.UNSUPPORTED_VERSION: Action.FATAL,
}

_MEMBERSHIP: dict[ErrorCode, Action] = {
    **_COORDINATOR,
    E.REBALANCE_IN_PROGRESS: Action.REJOIN,
    E.UNKNOWN_MEMBER_ID: Action.RESET_MEMBER,
    E.ILLEGAL_GENERATION: Action.RESET_GENERATION,
}

_PARTITION_DATA: dict[ErrorCode, Action] = {
    E.NONE: Action.NONE,
    E.NOT_LEADER_OR_FOLLOWER: Action.REFRESH_METADATA,
    E.LEADER_NOT_AVAILABLE: Action.REFRESH_METADATA,
    E.UNKNOWN_TOPIC_OR_PARTITION: Action.REFRESH_METADATA,
    E.UNKNOWN_TOPIC_ID: Action.REFRESH_METADATA,
    E.FENCED_LEADER_EPOCH: Action.REFRESH_METADATA,
    E.UNKNOWN_LEADER_EPOCH: Action.REFRESH_METADATA,
    E.KAFKA_STORAGE_ERROR: Action.REFRESH_METADATA,
    E.OFFSET_NOT_AVAILABLE: Action.RETRY,
    E.REQUEST_TIMED_OUT: Action.RETRY,
    E.NETWORK_EXCEPTION: Action.RETRY,
    E.OFFSET_OUT_OF_RANGE: Action.RESET_OFFSET,
    E.TOPIC_AUTHORIZATION_FAILED: Action.RAISE,
    E.CORRUPT_MESSAGE: Action.RAISE,
}

TABLES: dict[ApiKey, dict[ErrorCode, Action]] = {
    A.FIND_COORDINATOR: {E.NONE: Action.NONE, E.GROUP_AUTHORIZATION_FAILED: Action.FATAL,
                         E.INVALID_REQUEST: Action.FATAL},
    A.JOIN_GROUP: {
        **_MEMBERSHIP,
        E.MEMBER_ID_REQUIRED: Action.RETRY_WITH_MEMBER_ID,
        E.INCONSISTENT_GROUP_PROTOCOL: Action.FATAL,
        E.INVALID_SESSION_TIMEOUT: Action.FATAL,
        E.GROUP_MAX_SIZE_REACHED: Action.FATAL,
    },
    A.SYNC_GROUP: {**_MEMBERSHIP, E.INCONSISTENT_GROUP_PROTOCOL: Action.FATAL},
    A.HEARTBEAT: dict(_MEMBERSHIP),
    A.LEAVE_GROUP: dict(_MEMBERSHIP),
    A.OFFSET_COMMIT: {
        **_MEMBERSHIP,
        E.UNKNOWN_TOPIC_OR_PARTITION: Action.RETRY,
        # v10: the topic id is not (or no longer) the topic's: retried once the metadata is
        # refreshed (Java's CommitRequestManager retries it)
        E.UNKNOWN_TOPIC_ID: Action.RETRY,
        E.OFFSET_METADATA_TOO_LARGE: Action.RAISE,
        E.INVALID_COMMIT_OFFSET_SIZE: Action.RAISE,
        E.TOPIC_AUTHORIZATION_FAILED: Action.RAISE,
        # KIP-848: the epoch moved on since the commit was sent; a commit_sync sends it again with
        # the new one (the member still owns the partitions it commits: it gives them up only
        # after the commit before a revocation)
        E.STALE_MEMBER_EPOCH: Action.RETRY,
        E.FENCED_MEMBER_EPOCH: Action.RESET_GENERATION,
    },
    A.OFFSET_FETCH: {
        **_COORDINATOR,
        E.UNSTABLE_OFFSET_COMMIT: Action.RETRY,  # a transaction's commit is pending: ask again
        E.STALE_MEMBER_EPOCH: Action.RETRY,  # KIP-848: asked again with the member's new epoch
        # KIP-848 (v9): the member was fenced meanwhile; asked again as it is now (no member
        # check while it rejoins, its new epoch after)
        E.UNKNOWN_MEMBER_ID: Action.RETRY,
        E.UNKNOWN_TOPIC_OR_PARTITION: Action.RAISE,
        E.UNKNOWN_TOPIC_ID: Action.RETRY,  # v10, as for OffsetCommit
        E.TOPIC_AUTHORIZATION_FAILED: Action.RAISE,
    },
    # KIP-848 (Java's ConsumerHeartbeatRequestManager): fenced -> the partitions are lost and the
    # member joins again at epoch 0 with the same id; refusals are fatal; a topic refusal is raised
    # once and the member goes on
    A.CONSUMER_GROUP_HEARTBEAT: {
        **_COORDINATOR,
        E.FENCED_MEMBER_EPOCH: Action.RESET_GENERATION,
        E.UNKNOWN_MEMBER_ID: Action.RESET_GENERATION,
        E.UNRELEASED_INSTANCE_ID: Action.FATAL,
        E.UNSUPPORTED_ASSIGNOR: Action.FATAL,
        E.INVALID_REGULAR_EXPRESSION: Action.FATAL,
        E.GROUP_MAX_SIZE_REACHED: Action.FATAL,
        E.INVALID_REQUEST: Action.FATAL,
        E.GROUP_ID_NOT_FOUND: Action.FATAL,
        E.TOPIC_AUTHORIZATION_FAILED: Action.RAISE,
    },
    # KIP-932 (Java's ShareHeartbeatRequestManager): as the consumer protocol's, less what a share
    # group has not (static members, assignors, patterns)
    A.SHARE_GROUP_HEARTBEAT: {
        **_COORDINATOR,
        E.FENCED_MEMBER_EPOCH: Action.RESET_GENERATION,
        E.UNKNOWN_MEMBER_ID: Action.RESET_GENERATION,
        E.GROUP_MAX_SIZE_REACHED: Action.FATAL,
        E.INVALID_REQUEST: Action.FATAL,
        E.GROUP_ID_NOT_FOUND: Action.FATAL,
        E.INCONSISTENT_GROUP_PROTOCOL: Action.FATAL,
        E.TOPIC_AUTHORIZATION_FAILED: Action.RAISE,
    },
    # KIP-932 (Java's ShareConsumeRequestManager and ShareFetchCollector), the request's code and a
    # partition's in one table: the session's errors start a new session (the acknowledgements
    # it carried fail); a moved leader or topic asks for metadata; what the application must
    # hear of is raised once from poll()
    A.SHARE_FETCH: {
        E.NONE: Action.NONE,
        **{code: Action.REFRESH_METADATA for code in (
            E.NOT_LEADER_OR_FOLLOWER, E.LEADER_NOT_AVAILABLE, E.REPLICA_NOT_AVAILABLE, E.KAFKA_STORAGE_ERROR,
            E.FENCED_LEADER_EPOCH, E.OFFSET_NOT_AVAILABLE, E.UNKNOWN_TOPIC_OR_PARTITION, E.UNKNOWN_TOPIC_ID,
            E.INCONSISTENT_TOPIC_ID)},
        **{code: Action.RETRY for code in (
            E.UNKNOWN_LEADER_EPOCH, E.UNKNOWN_SERVER_ERROR, E.REQUEST_TIMED_OUT, E.NETWORK_EXCEPTION,
            E.SHARE_SESSION_NOT_FOUND, E.INVALID_SHARE_SESSION_EPOCH, E.SHARE_SESSION_LIMIT_REACHED,
            E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE)},
        E.TOPIC_AUTHORIZATION_FAILED: Action.RAISE,
        E.GROUP_AUTHORIZATION_FAILED: Action.RAISE,
        E.CORRUPT_MESSAGE: Action.RAISE,
        E.INVALID_REQUEST: Action.RAISE,
    },
    # acknowledgements are not sent again: each partition's outcome is reported (commit_sync, the
    # callback), and a moved leader or topic asks for metadata
    A.SHARE_ACKNOWLEDGE: {
        E.NONE: Action.NONE,
        **{code: Action.REFRESH_METADATA for code in (
            E.NOT_LEADER_OR_FOLLOWER, E.LEADER_NOT_AVAILABLE, E.FENCED_LEADER_EPOCH, E.UNKNOWN_TOPIC_OR_PARTITION,
            E.UNKNOWN_TOPIC_ID, E.INCONSISTENT_TOPIC_ID, E.KAFKA_STORAGE_ERROR)},
        **{code: Action.RETRY for code in (
            E.SHARE_SESSION_NOT_FOUND, E.INVALID_SHARE_SESSION_EPOCH, E.REQUEST_TIMED_OUT, E.NETWORK_EXCEPTION)},
        E.INVALID_RECORD_STATE: Action.RAISE,
        E.TOPIC_AUTHORIZATION_FAILED: Action.RAISE,
        E.GROUP_AUTHORIZATION_FAILED: Action.RAISE,
        E.INVALID_REQUEST: Action.RAISE,
        E.FENCED_STATE_EPOCH: Action.RAISE,
    },
    A.FETCH: _PARTITION_DATA,
    # an offset looked up by time is never "out of range" (Java has no reset here either)
    A.LIST_OFFSETS: {e: a for e, a in _PARTITION_DATA.items() if a is not Action.RESET_OFFSET},
    A.METADATA: {E.NONE: Action.NONE, E.LEADER_NOT_AVAILABLE: Action.REFRESH_METADATA,
                 E.UNKNOWN_TOPIC_OR_PARTITION: Action.REFRESH_METADATA,
                 E.TOPIC_AUTHORIZATION_FAILED: Action.RAISE, E.INVALID_TOPIC_EXCEPTION: Action.RAISE},
}

# A hint for a code on one API, where the code's general hint does not say what to do.
API_HINTS: dict[tuple[ApiKey, ErrorCode], str] = {
    (A.CONSUMER_GROUP_HEARTBEAT, E.UNSUPPORTED_VERSION):
        "the cluster does not serve the consumer group protocol (KIP-848: Apache Kafka 4.0 or later, with "
        "group.coordinator.rebalance.protocols including consumer); set group_protocol='classic' until it does",
    (A.CONSUMER_GROUP_HEARTBEAT, E.UNSUPPORTED_ASSIGNOR):
        "group_remote_assignor={group_remote_assignor!r} is not one of the broker's group.consumer.assignors "
        "(Kafka's default: uniform, range); name one of them, or leave group_remote_assignor unset",
    (A.CONSUMER_GROUP_HEARTBEAT, E.GROUP_MAX_SIZE_REACHED):
        "the group has as many members as the broker's group.consumer.max.size allows (Kafka's default: "
        "2147483647); stop another member of the group, or raise it on the broker",
    (A.CONSUMER_GROUP_HEARTBEAT, E.UNRELEASED_INSTANCE_ID):
        "group_instance_id={group_instance_id!r} is still held by another member that has not left; give each "
        "consumer its own group_instance_id, or wait until the other has left",
    (A.CONSUMER_GROUP_HEARTBEAT, E.INVALID_REGULAR_EXPRESSION):
        "the pattern {pattern!r} is not a regular expression the broker accepts (Kafka compiles it with RE2/J); "
        "see docs/consumer.md for what RE2/J accepts",
    (A.CONSUMER_GROUP_HEARTBEAT, E.INVALID_REQUEST):
        "the broker refused the heartbeat as invalid (a bug of groupclient's, or a broker that differs from "
        "Kafka): please report it",
    (A.SHARE_GROUP_HEARTBEAT, E.UNSUPPORTED_VERSION):
        "the cluster does not serve share groups (KIP-932: Apache Kafka 4.2 or later, with the feature "
        "share.version at 1 or more, as 4.2 sets it by default); enable them on the cluster, or use a "
        "GroupConsumer",
    (A.SHARE_GROUP_HEARTBEAT, E.GROUP_MAX_SIZE_REACHED):
        "the share group has as many members as the broker's group.share.max.size allows (Kafka's default: "
        "200); stop another member of the group, or raise it on the broker",
    (A.SHARE_GROUP_HEARTBEAT, E.INVALID_REQUEST):
        "the broker refused the heartbeat as invalid (a bug of groupclient's, or a broker that differs from "
        "Kafka): please report it",
    (A.SHARE_GROUP_HEARTBEAT, E.GROUP_ID_NOT_FOUND):
        "the group id names a group of another type (a consumer or classic group); give the share group an "
        "id of its own",
    (A.SHARE_GROUP_HEARTBEAT, E.INCONSISTENT_GROUP_PROTOCOL):
        "the group id names a group of another type (a consumer or classic group); give the share group an "
        "id of its own",
    (A.CONSUMER_GROUP_HEARTBEAT, E.GROUP_ID_NOT_FOUND):
        "the group is gone (deleted, or converted to a classic group); close the consumer",
}

# What an API does with a code it does not expect (Java: "unexpected error in ... response"); a
# topic's unexpected code in Metadata is asked about again after the backoff, as Java's Metadata
# does (it raises only TOPIC_AUTHORIZATION_FAILED and INVALID_TOPIC_EXCEPTION)
DEFAULTS: dict[ApiKey, Action] = {A.HEARTBEAT: Action.RETRY, A.CONSUMER_GROUP_HEARTBEAT: Action.RETRY,
                                  A.SHARE_GROUP_HEARTBEAT: Action.RETRY,
                                  A.FIND_COORDINATOR: Action.RETRY,
                                  A.LEAVE_GROUP: Action.RAISE, A.METADATA: Action.REFRESH_METADATA}

# Explanations raised with fatal errors, so the user knows what to change: what the client sent
# that the broker refused, the broker setting it hit (with Kafka's default, since the broker does
# not say its own value), and what to do.  ``{name}`` is filled from the ``sent`` of error_for.
FATAL_HINTS: dict[ErrorCode, str] = {
    E.INCONSISTENT_GROUP_PROTOCOL: "this member's partition_assignment_strategy ({assignors}) shares no "
                                   "assignor with the group's members (or the group uses another protocol "
                                   "type); give every member of the group an assignor in common",
    E.INVALID_SESSION_TIMEOUT: "session_timeout_ms={session_timeout_ms} is outside the broker's bounds "
                               "group.min.session.timeout.ms .. group.max.session.timeout.ms (Kafka's "
                               "defaults: 6000 .. 1800000 ms); set session_timeout_ms within them, or "
                               "change the broker's settings",
    E.GROUP_AUTHORIZATION_FAILED: "this client may not use the group (an ACL of the broker refused it)",
    E.FENCED_INSTANCE_ID: "another consumer with the same group_instance_id joined the group; give "
                          "each consumer its own group_instance_id",
    E.INVALID_GROUP_ID: "the group id is invalid",
    E.GROUP_MAX_SIZE_REACHED: "the group has as many members as the broker's group.max.size allows "
                              "(Kafka's default: 2147483647); stop another member of the group, or raise "
                              "group.max.size on the broker",
    E.UNSUPPORTED_VERSION: "the broker does not support a request version this client needs",
}


class _Sent(dict[str, object]):
    """The values a hint names; one the caller did not give reads as ``?``."""

    def __missing__(self, key: str) -> str:
        return "?"


RETRIABLE_ACTIONS = frozenset({Action.RETRY, Action.REDISCOVER, Action.REJOIN, Action.RESET_MEMBER,
                               Action.RESET_GENERATION, Action.RETRY_WITH_MEMBER_ID,
                               Action.REFRESH_METADATA})


def action_for(code: int, api: ApiKey) -> Action:
    """What to do about ``code`` answered on ``api`` (any integer; unknown codes included)."""
    error = known(code)
    table = TABLES.get(api, {})
    if error is not None and error in table:
        return table[error]
    if code == 0:
        return Action.NONE
    return DEFAULTS.get(api, Action.RAISE)


def error_for(code: int, api: ApiKey, what: str = "", sent: Mapping[str, object] | None = None) -> BrokerError:
    """The exception for ``code`` on ``api``: fatal, retriable or unexpected, per the table.
    ``what`` names the request; ``sent`` holds the settings a fatal error's hint names."""
    action = action_for(code, api)
    where = what or api.name
    if action is Action.FATAL:
        error = known(code)
        hint = (API_HINTS.get((api, error)) or FATAL_HINTS.get(error, "the broker refused this member")
                if error is not None else "")
        hint = hint.format_map(_Sent(sent or {}))
        return FatalGroupError(code, f"{where}: {hint}")
    if action in RETRIABLE_ACTIONS:
        return RetriableError(code, where)
    if known(code) in TABLES.get(api, {}):
        return RequestFailedError(code, where)
    return UnexpectedBrokerError(code, f"{where}: an answer this request does not expect")
