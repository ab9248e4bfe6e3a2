"""The consumer's partitions as the member side sees them (``member.types.PartitionOwnership``):
whether it owns any, how often they were lost, and losing them.

The heartbeat thread calls :meth:`AssignedPartitions.on_ownership_lost` the moment the ownership
lease ends (or the group fences the member, or the poll interval runs out): the partitions and
what was fetched of them are dropped at once, and the listener hears of it from the next
``poll()`` on the application thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from .subscription import SubscriptionState

log = logging.getLogger("groupclient.consumer")


class AssignedPartitions:
    """The consumer's :class:`~groupclient.member.types.PartitionOwnership` (either thread)."""

    def __init__(self, subscription: SubscriptionState, drop_fetched: Callable[[], None], group_id: str) -> None:
        self.subscription = subscription
        self.drop_fetched = drop_fetched
        self.group_id = group_id

    def owns_partitions(self) -> bool:
        return bool(self.subscription.assigned())

    def ownership_epoch(self) -> int:
        return self.subscription.losses()

    def on_ownership_lost(self, reason: str, loss: int | None = None) -> None:
        lost = self.subscription.mark_lost(loss)
        if lost is None:
            return  # that loss was applied already, by the other thread
        self.drop_fetched()
        if lost:
            log.warning("group %s: partitions %s are lost: %s", self.group_id,
                        sorted(f"{tp.topic}-{tp.partition}" for tp in lost), reason)
