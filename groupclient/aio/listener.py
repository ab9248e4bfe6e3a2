"""Rebalance listeners for AsyncGroupConsumer: coroutine methods (plain ones too), run on the loop."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from ..structs import TopicPartition
from .consumer_thread import ConsumerThread


class OnPartitionsRevoked(Protocol):
    """A listener with ``on_partitions_revoked`` (a coroutine method, or a plain one)."""

    def on_partitions_revoked(self, revoked: set[TopicPartition], /) -> Awaitable[object] | None:
        """See :meth:`ConsumerRebalanceListener.on_partitions_revoked`."""


class OnPartitionsAssigned(Protocol):
    """A listener with ``on_partitions_assigned`` (a coroutine method, or a plain one)."""

    def on_partitions_assigned(self, assigned: set[TopicPartition], /) -> Awaitable[object] | None:
        """See :meth:`ConsumerRebalanceListener.on_partitions_assigned`."""


class OnPartitionsLost(Protocol):
    """A listener with ``on_partitions_lost`` (a coroutine method, or a plain one)."""

    def on_partitions_lost(self, lost: set[TopicPartition], /) -> Awaitable[object] | None:
        """See :meth:`ConsumerRebalanceListener.on_partitions_lost`."""


# What ``AsyncGroupConsumer.subscribe(listener=...)`` takes: an object with any of the three
# methods (each one optional, as the consumer checks at the call), each taking the set of
# partitions, ``async def`` or plain: a :class:`ConsumerRebalanceListener`, aiokafka's, or any
# object of your own.
RebalanceListener = OnPartitionsRevoked | OnPartitionsAssigned | OnPartitionsLost


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

    def __init__(self, user: RebalanceListener, thread: ConsumerThread) -> None:
        self._user = user
        self._thread = thread

    def _call(self, *names: str) -> Callable[[set[TopicPartition]], None]:
        method: Callable[[set[TopicPartition]], object] | None = None
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
