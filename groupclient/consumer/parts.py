"""What GroupConsumer's mixins (``queries.py``, ``positions.py``, ``group_polling.py``) may use of
the consumer: the parts ``GroupConsumer.__init__`` builds.  Declared once here so each mixin
type-checks alone."""

from __future__ import annotations

from typing import Any

from ..clock import Clock, Timer
from ..network.client import NetworkClient
from .fetcher import Fetcher
from .group_driver import GroupDriver
from .metrics import ConsumerMetrics
from .subscription import SubscriptionState
from .thread_ownership import ThreadOwnership


class ConsumerParts:
    config: dict[str, Any]
    _clock: Clock
    _client: NetworkClient
    _fetcher: Fetcher
    _subscription: SubscriptionState
    _ownership: ThreadOwnership
    _group: GroupDriver | None  # None: no group_id
    _metrics: ConsumerMetrics | None
    _iterator: Any

    def _ensure_open(self) -> None:
        raise NotImplementedError

    def _raise_pending(self) -> None:
        raise NotImplementedError

    def _positions_known_in_time(self, timer: Timer) -> bool:
        raise NotImplementedError

    def _default_timer(self, timeout_ms: float | None) -> Timer:
        raise NotImplementedError
