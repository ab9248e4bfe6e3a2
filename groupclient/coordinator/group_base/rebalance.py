"""Why a group rebalanced, and who is told: one vocabulary for both kinds of group, so the
coordinator's metrics (telemetry.py) count a classic generation and a consumer group epoch alike."""

from __future__ import annotations

import enum
from collections.abc import Callable


class RebalanceCause(enum.Enum):
    """Why a group's generation (classic) or group epoch (consumer protocol) moved, in a word or
    two: a metric attribute (telemetry.py), so never a member id nor a client's own reason text,
    which only the log lines carry."""

    MEMBER_JOINED = "member_joined"
    MEMBER_LEFT = "member_left"
    # classic: no heartbeat within the session; consumer protocol: the session or the time to
    # give partitions up ran out
    MEMBER_EXPIRED = "member_expired"
    METADATA_CHANGED = "metadata_changed"  # classic: a member rejoined with other protocols
    LEADER_REJOINED = "leader_rejoined"
    STATIC_MEMBER_REJOINED = "static_member_rejoined"
    SYNC_TIMEOUT = "sync_timeout"  # members did not send SyncGroup within the rebalance timeout
    CONVERTED = "converted"  # a consumer group left with classic members only became a classic group
    SUBSCRIPTION_CHANGED = "subscription_changed"
    TOPICS_CHANGED = "topics_changed"  # a subscribed topic was created, deleted or grown; a pattern matched others


# Told of each new generation or group epoch: the group id, the group's protocol ("classic" or
# "consumer", Kafka's group types) and why, when the coordinator knows.
RebalanceHook = Callable[[str, str, RebalanceCause | None], None]
CLASSIC, CONSUMER = "classic", "consumer"
