"""The rebalance listener interface and the safe way to call it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from ..structs import TopicPartition

from ..errors import RebalanceListenerError

log = logging.getLogger("groupclient.consumer")


class OnPartitionsRevoked(Protocol):
    """A listener with ``on_partitions_revoked``."""

    def on_partitions_revoked(self, revoked: set[TopicPartition], /) -> None:
        """See :meth:`ConsumerRebalanceListener.on_partitions_revoked`."""


class OnPartitionsAssigned(Protocol):
    """A listener with ``on_partitions_assigned``."""

    def on_partitions_assigned(self, assigned: set[TopicPartition], /) -> None:
        """See :meth:`ConsumerRebalanceListener.on_partitions_assigned`."""


class OnPartitionsLost(Protocol):
    """A listener with ``on_partitions_lost``."""

    def on_partitions_lost(self, lost: set[TopicPartition], /) -> None:
        """See :meth:`ConsumerRebalanceListener.on_partitions_lost`."""


# What ``GroupConsumer.subscribe(listener=...)`` takes: an object with any of the three methods
# (each one optional, as the consumer checks when subscribing), each taking the set of
# partitions and returning None: a :class:`ConsumerRebalanceListener`, kafka-python's, or any
# object of your own.  (A coroutine method is refused: GroupConsumer would not await it.)
RebalanceListener = OnPartitionsRevoked | OnPartitionsAssigned | OnPartitionsLost


class ConsumerRebalanceListener:
    """Override what you need.  Also accepts kafka-python's listener objects (same method names).

    The methods run on the thread that called ``poll()``, inside that call, never under a lock.
    An exception raised here is re-raised from ``poll()`` after the consumer has finished the
    rebalance step, so its state stays consistent.
    """

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        """Before a rebalance: these partitions are about to be taken away; commit what you must."""

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        """After a rebalance: these partitions are now this consumer's."""

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        """The partitions were already given to others (session or poll timeout): do not commit.

        By default this is treated like a revocation, as in the Java client.
        """
        self.on_partitions_revoked(lost)


class ListenerCalls:
    """Calls the user's listener and keeps the first exception for ``poll()`` to raise."""

    def __init__(self, observer: Callable[[str, set[TopicPartition]], None] | None = None) -> None:
        self.listener: RebalanceListener | None = None  # the subscribe() call's listener
        self.pending_error: BaseException | None = None
        # told of every call, listener or not (the rebalance events count partitions here)
        self.observer = observer

    def call(self, method: str, partitions: set[TopicPartition]) -> None:
        if self.observer is not None and partitions:
            self.observer(method, set(partitions))
        listener = self.listener
        if listener is None:
            return
        fn = getattr(listener, method, None)
        if fn is None and method == "on_partitions_lost":
            fn = getattr(listener, "on_partitions_revoked", None)
        if fn is None:
            return
        try:
            fn(set(partitions))
        except Exception as exc:
            log.error("rebalance listener %s failed: %r", method, exc)
            if self.pending_error is None:
                self.pending_error = exc

    def raise_pending(self) -> None:
        error, self.pending_error = self.pending_error, None
        if error is not None:
            raise RebalanceListenerError(f"the rebalance listener raised {error!r}") from error
