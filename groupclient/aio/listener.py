"""Rebalance listeners for AsyncGroupConsumer: coroutine methods (plain ones too), run on the loop."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..structs import TopicPartition
from .consumer_thread import ConsumerThread


class ConsumerRebalanceListener:
    """Override what you need, with ``async def`` (or plain) methods; aiokafka's listeners work
    as they are.

    The methods run on the event loop, as tasks of their own, while the consumer's thread waits
    for them inside the rebalance (so the rebalance goes on only after they finished, as in
    aiokafka); they may await the consumer's ``commit()``, ``position()``, ``committed()`` and
    seek.  An exception raised here is re-raised from the next ``getmany()``/``getone()`` as
    RebalanceListenerError, after the rebalance step finished.
    """

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Awaitable[None] | None:
        """Before a rebalance: these partitions are about to be taken away; commit what you must."""
        return None

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Awaitable[None] | None:
        """After a rebalance: these partitions are now this consumer's."""
        return None

    def on_partitions_lost(self, lost: set[TopicPartition]) -> Awaitable[None] | None:
        """The partitions were already given to others (session, poll interval or lease ran
        out): do not commit.  By default this is treated like a revocation, as in Java."""
        return self.on_partitions_revoked(lost)


class LoopListener:
    """What the GroupConsumer calls on the consumer thread: each call runs the user's method on
    the loop and waits for it (:meth:`ConsumerThread.run_on_loop`)."""

    def __init__(self, user: object, thread: ConsumerThread) -> None:
        self._user = user
        self._thread = thread

    def _call(self, *names: str) -> Callable[[set[TopicPartition]], None]:
        method: Callable[[set[TopicPartition]], Any] | None = None
        for name in names:
            method = getattr(self._user, name, None)
            if callable(method):
                break
        found = method

        def call(partitions: set[TopicPartition]) -> None:
            if found is not None:
                self._thread.run_on_loop(lambda: found(partitions))
        return call

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        """The user's on_partitions_revoked, on the loop."""
        self._call("on_partitions_revoked")(revoked)

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        """The user's on_partitions_assigned, on the loop."""
        self._call("on_partitions_assigned")(assigned)

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        """The user's on_partitions_lost (else on_partitions_revoked, as Java), on the loop."""
        self._call("on_partitions_lost", "on_partitions_revoked")(lost)
