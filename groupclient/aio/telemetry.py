"""AsyncGroupConsumer's OpenTelemetry spans, made on the event loop in the application's context.

Only imported when the OpenTelemetry API is installed (``groupclient[otel]``): without it the
consumer holds ``None`` and pays nothing.

The work is split between two :class:`~groupclient.consumer.telemetry.ConsumerTelemetry`
instances of the same providers (docs/design.md, "asyncio", has the threads):

- the consumer thread's GroupConsumer keeps its own, with its spans off
  (:meth:`ConsumerTelemetry.disable_spans`, before its first poll): the metrics and gauges of
  what that thread and the heartbeat thread do (records and bytes drained, lag, time lag, fetch,
  commit, heartbeat and rebalance durations);
- :class:`LoopTelemetry` holds the second (``gauges=False``) and makes every span, on the loop
  only: a coroutine runs in its caller's task, so a span started there has the application's
  current span as its parent, and the process span made current in ``__anext__`` stays current
  in the iterating task (a coroutine awaited in a task sets context variables in that task's
  context).  Span processors and exporters the application configured thus never run on the
  consumer thread or the heartbeat thread.

The process span is ended by the next ``__anext__``, by ``stop()`` or when iteration ends; ending
is one step that may come from any task, but *un-setting* it as the current span can only be
done in the task that set it (a context token is reset in its own context).  So a ``stop()``
from another task ends the span at once, and the iterating task's context is restored by its own
next ``__anext__`` (which then ends the iteration).  One process span is open at a time, as for
GroupConsumer's iteration: when several tasks iterate one consumer, a task taking a record ends
the span of the record another task holds, and each task un-sets its own at its next
``__anext__`` (so its next process span is not a child of its previous one).

No method raises: a span processor of the application's that fails is logged, and the records
a call already took out of the buffer still reach the caller (and ``stop()`` still stops).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace

from ..consumer.group_consumer import GroupConsumer
from ..consumer.observers import make_telemetry
from ..consumer.rebalance_events import RebalanceEvent
from ..consumer.telemetry import ConsumerTelemetry
from ..structs import ConsumerRecord
from .record_buffer import Records

log = logging.getLogger("groupclient.aio")

T = TypeVar("T")


def loop_side(consumer: GroupConsumer) -> LoopTelemetry | None:
    """The loop's telemetry for ``consumer``'s providers (its own spans were turned off on the
    consumer thread as it was built)."""
    # no gauges here (the consumer thread's telemetry reports them): what they would read is unused
    telemetry = make_telemetry(consumer.config, dict, set, lambda: 0, gauges=False)
    return LoopTelemetry(telemetry) if telemetry is not None else None


class LoopTelemetry:
    """The spans of one AsyncGroupConsumer (see the module doc); every call on the loop."""

    def __init__(self, telemetry: ConsumerTelemetry) -> None:
        self._telemetry = telemetry
        # per iterating task, the token that un-sets the process span it was handed last (weak:
        # a task that is gone has no context left to restore); typed loosely, as telemetry.py's:
        # attach() returns Token[Context] in newer APIs, object in the 1.30 floor
        self._attached: weakref.WeakKeyDictionary[asyncio.Task[Any], Any] = weakref.WeakKeyDictionary()

    def received(self, records: Records, started_ns: int) -> None:
        """getmany()/getone() begun at ``started_ns`` (wall clock) returns ``records``."""
        if records:
            _logged(lambda: self._telemetry.trace_receive(records, started_ns))

    def start_process(self, record: ConsumerRecord[object, object]) -> None:
        """``async for`` hands ``record`` to the caller's task: its process span, current there."""
        self.end_process()
        span = _logged(lambda: self._telemetry.start_process(record, attach=False))
        task = asyncio.current_task()
        if span is not None and task is not None:
            self._attached[task] = otel_context.attach(trace.set_span_in_context(span))

    def end_process(self) -> None:
        """End the process span (if open), from any task; un-set the one this task was handed
        (the others' are un-set by their own next call: see the module doc)."""
        _logged(self._telemetry.end_process)
        task = asyncio.current_task()
        token = self._attached.pop(task, None) if task is not None else None
        if token is not None:
            otel_context.detach(token)

    def rebalanced(self, event: RebalanceEvent) -> None:
        """The ``rebalance {group}`` span of ``event`` (the consumer thread's telemetry recorded
        its duration).  Called from a callback the consumer thread posted to the loop: its
        context is that thread's, so the span is a root span (no application span caused it)."""
        _logged(lambda: self._telemetry.trace_rebalance(event))

    def close(self) -> None:
        """stop(): end the process span (see the module doc)."""
        self.end_process()
        _logged(self._telemetry.close)


def _logged(call: Callable[[], T]) -> T | None:
    """``call()``, or None when it raised (logged): see the module doc."""
    try:
        return call()
    except Exception:
        log.warning("OpenTelemetry failed (a span processor or exporter?)", exc_info=True)
        return None
