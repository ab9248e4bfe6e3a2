"""What GroupConsumer's mixins (``queries.py``, ``positions.py``) may use of the consumer: the
parts ``GroupConsumer.__init__`` builds.  Declared once here so each mixin type-checks alone."""

from __future__ import annotations

from typing import Any

from ..clock import Clock
from ..network.client import NetworkClient
from .commits import OffsetCommitter
from .fetcher import Fetcher
from .metrics import ConsumerMetrics
from .thread_ownership import ThreadOwnership
from .subscription import SubscriptionState


class ConsumerParts:
    config: dict[str, Any]
    _clock: Clock
    _client: NetworkClient
    _fetcher: Fetcher
    _subscription: SubscriptionState
    _ownership: ThreadOwnership
    _committer: OffsetCommitter | None
    _metrics: ConsumerMetrics | None
    _iterator: Any

    def _ensure_open(self) -> None:
        raise NotImplementedError
