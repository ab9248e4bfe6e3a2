"""AsyncGroupConsumer's subscription calls: ``subscribe``, ``unsubscribe``, ``assign`` and what they
leave (a mixin).

Each call checks its arguments and the consumer's state on the loop, at the call, with aiokafka's
error classes (TypeError and ValueError for arguments, IllegalStateError for subscribe-after-
assign and the reverse), and records the consumer's *mode* there: subscribed to a group's
assignment, assigned by hand, or neither.  What the GroupConsumer does about it runs on the
consumer thread as a job nobody awaits, in order with the rest (it cannot fail on what was
checked here; anything else it raises comes from the next ``getmany()``/``getone()``).
"""

from __future__ import annotations

import enum
import logging
import re
import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from ..consumer.any_thread import AnyThreadAccess
from ..consumer.broker_regex import broker_regex
from ..consumer.config import check_name
from ..consumer.group_consumer import GroupConsumer
from ..consumer.queries import check_partition
from ..consumer.subscription import TopicPattern
from ..protocol.re2j import compile_re2j
from ..errors import ArgumentTypeError, ConfigurationError, IllegalStateError
from ..structs import TopicPartition
from .consumer_thread import ConsumerThread
from .listener import LoopListener, RebalanceListener
from .record_buffer import RecordBuffer

log = logging.getLogger("groupclient.aio")

LISTENER_METHODS = ("on_partitions_revoked", "on_partitions_assigned", "on_partitions_lost")


class Mode(enum.Enum):
    """What the application asked for last (aiokafka's subscription types)."""

    NONE = "neither subscribed nor assigned"
    SUBSCRIBED = "subscribed"  # the group assigns (or, without a group_id, every partition)
    ASSIGNED = "assigned by hand"  # assign(); assign([]) too, as aiokafka


def check_subscription(topics: object, pattern: object, listener: object,
                       broker_side: bool = False) -> tuple[tuple[str, ...], TopicPattern | None]:
    """aiokafka's checks of ``subscribe()``'s arguments, at the call: the topic names and the
    compiled pattern (TypeError for a wrong kind of argument, ValueError for a bad name or regex).
    ``broker_side`` (``group_protocol='consumer'``): the broker evaluates the pattern, so it is
    checked as its RE2/J reads it (consumer/broker_regex.py), not as Python's ``re``."""
    if isinstance(topics, (str, bytes)) or not isinstance(topics, (list, tuple, set, frozenset)):
        raise ArgumentTypeError(f"topics must be a list of topic names, not {topics!r}")
    names = tuple(topics)
    if names and pattern is not None:
        raise ArgumentTypeError("subscribe() takes topics or a pattern, not both")
    if not names and pattern is None:
        raise ArgumentTypeError("subscribe() needs topics or a pattern")
    for name in names:
        if not isinstance(name, str):
            raise ArgumentTypeError(f"topic names are strings, not {name!r}")
        check_name("topic name", name)
    if listener is not None and not any(callable(getattr(listener, m, None)) for m in LISTENER_METHODS):
        raise ArgumentTypeError(f"listener {listener!r} has none of {', '.join(LISTENER_METHODS)}")
    if pattern is None:
        return names, None
    if not isinstance(pattern, str):
        raise ArgumentTypeError(f"pattern must be a string, not {pattern!r}")
    if broker_side:
        return names, compile_re2j(broker_regex(pattern))
    try:
        return names, re.compile(pattern)
    except re.error as exc:
        raise ConfigurationError(f"{pattern!r} is not a valid pattern: {exc}") from None


def check_partitions(partitions: object) -> set[TopicPartition]:
    """assign()'s argument: TopicPartitions (TypeError for anything else)."""
    if isinstance(partitions, (str, bytes)) or not isinstance(partitions, Iterable):
        raise ArgumentTypeError(f"assign() takes a list of TopicPartition, not {partitions!r}")
    return {check_partition(tp) for tp in partitions}


class AsyncSubscriptions:
    """``subscribe``, ``unsubscribe``, ``assign``, ``assignment`` and ``subscription`` of
    AsyncGroupConsumer (see the module doc)."""

    _state: str
    _settings: dict[str, Any]  # the consumer's GroupConsumer settings
    _mode: Mode
    _buffer: RecordBuffer
    _access: AnyThreadAccess | None
    _name: str
    # before start(): what to apply once the GroupConsumer exists
    _initial: tuple[tuple[str, ...], str | None, RebalanceListener | None] | None
    _initial_assign: set[TopicPartition] | None
    _membership_jobs: int  # subscribe()/unsubscribe()/assign() jobs queued and not done
    _assign_after: set[TopicPartition] | None  # an assign() queued behind them
    _pending_error: BaseException | None

    def _running(self) -> tuple[GroupConsumer, AnyThreadAccess, ConsumerThread]:
        raise NotImplementedError

    def _started(self) -> bool:
        return self._state not in ("new", "starting")

    def subscribe(self, topics: Iterable[str] = (), pattern: str | None = None,
                  listener: RebalanceListener | None = None) -> None:
        """Subscribe to topics or a regex pattern, with an optional rebalance listener (methods
        may be coroutines).  Checked at the call: TypeError for topics given as one string, both
        or neither of topics and pattern, or a listener with no listener method; ValueError for a
        bad topic name or pattern; IllegalStateError after ``assign()``.  The group is joined (or
        rejoined) in the background; before ``start()``, ``start()`` joins it."""
        broker_side = str(self._settings.get("group_protocol", "classic")).lower() == "consumer"
        names, _ = check_subscription(topics, pattern, listener, broker_side)
        if self._mode is Mode.ASSIGNED:
            raise IllegalStateError("subscribe() after assign(): call unsubscribe() first")
        if not self._started():
            self._mode = Mode.SUBSCRIBED
            self._initial = (names, pattern, listener)
            return
        _, _, thread = self._running()
        self._mode = Mode.SUBSCRIBED
        bridged = LoopListener(listener, thread) if listener is not None else None
        self._membership(lambda c: c.subscribe(list(names), pattern=pattern, listener=bridged))

    def subscription(self) -> frozenset[str]:
        """The topics subscribed to (a pattern's matches so far), or by ``assign()``: the
        assigned partitions' topics; empty when neither."""
        if self._mode is Mode.NONE:
            return frozenset()
        if self._mode is Mode.ASSIGNED:
            return frozenset(tp.topic for tp in self.assignment())
        if self._initial is not None:
            return frozenset(self._initial[0])
        if self._access is None or not self._access.is_group_subscribed():
            return frozenset()
        return frozenset(self._access.subscribed_topics())

    def unsubscribe(self) -> None:
        """Leave the group (the listener hears the revocation) or drop the assignment: at once,
        ``assignment()`` and ``subscription()`` are empty."""
        if not self._started():
            self._mode = Mode.NONE
            self._initial, self._initial_assign = None, None
            return
        self._running()
        self._mode = Mode.NONE
        self._buffer.drop()
        self._assign_after = None
        self._membership(lambda c: c.unsubscribe())

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Consume exactly these partitions, outside any group's assignment (IllegalStateError
        while subscribed; ``assign([])`` assigns nothing and stays assigned by hand, as aiokafka)."""
        wanted = check_partitions(partitions)
        if self._mode is Mode.SUBSCRIBED:
            raise IllegalStateError("assign() after subscribe(): call unsubscribe() first")
        if not self._started():
            self._mode = Mode.ASSIGNED
            self._initial_assign = wanted
            return
        _, access, _ = self._running()
        self._mode = Mode.ASSIGNED
        self._buffer.drop(access.assignment() - wanted)
        if not wanted or self._membership_jobs:
            # nothing (the GroupConsumer's way is to unsubscribe), or behind a subscription job
            # still queued, which would undo it: queued too, in order
            self._assign_after = wanted
            self._membership(lambda c: c.assign(wanted) if wanted else c.unsubscribe())
            return
        access.assign(wanted)  # at once, as aiokafka: pause() or seek() may follow

    def _membership(self, run: Callable[[GroupConsumer], object]) -> None:
        """A subscription job: nobody awaits it; it runs in order with the fetches (not inside a
        rebalance); an error it meets is raised by the next getmany()/getone()."""
        consumer, _, thread = self._running()
        future = thread.submit(lambda: run(consumer))
        self._membership_jobs += 1

        def done(finished: asyncio.Future[object]) -> None:
            self._membership_jobs -= 1
            error = None if finished.cancelled() else finished.exception()
            if error is not None:
                log.error("%s: %r (raised by the next getmany() or getone())", self._name, error)
                self._pending_error = self._pending_error or error
            if self._membership_jobs == 0:
                self._assign_after = None
        future.add_done_callback(done)

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions this consumer owns now (or was told to assign)."""
        if self._mode is Mode.NONE:
            return frozenset()
        if self._initial_assign is not None:
            return frozenset(self._initial_assign)
        if self._assign_after is not None:
            return frozenset(self._assign_after)
        return frozenset() if self._access is None else frozenset(self._access.assignment())
