"""What GroupConsumer's mixins (``queries.py``, ``positions.py``, ``group_polling.py``) may use of
the consumer: the parts ``GroupConsumer.__init__`` builds.  Declared once here so each mixin
type-checks alone."""

from __future__ import annotations

from typing import Any

from ..clock import Clock, Timer
from ..member.any_member import AnyMember
from ..member.heartbeat_thread import HeartbeatThread
from ..member.join import GroupJoin
from ..network.client import NetworkClient
from .commits import OffsetCommitter
from .fetcher import Fetcher
from .group_hooks import ConsumerGroupHooks
from .metrics import ConsumerMetrics
from .reconciler import Reconciler
from .subscription import SubscriptionState
from .thread_ownership import ThreadOwnership


class ConsumerParts:
    config: dict[str, Any]
    _clock: Clock
    _client: NetworkClient
    _fetcher: Fetcher
    _subscription: SubscriptionState
    _ownership: ThreadOwnership
    _committer: OffsetCommitter | None
    _hooks: ConsumerGroupHooks | None
    _member: AnyMember | None
    _join: GroupJoin | None
    _reconciler: Reconciler | None
    _heartbeat_thread: HeartbeatThread | None
    _metrics: ConsumerMetrics | None
    _iterator: Any

    def _ensure_open(self) -> None:
        raise NotImplementedError

    def _raise_pending(self) -> None:
        raise NotImplementedError

    def _positions_known_in_time(self, timer: Timer) -> bool:
        raise NotImplementedError
