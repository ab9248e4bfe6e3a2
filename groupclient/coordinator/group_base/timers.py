"""Keyed deadlines for the sans-IO coordinator core.

Rescheduling a key replaces its deadline; stale heap entries are skipped lazily and the heap
is compacted when they dominate, so a thousand members heartbeating every few seconds cost a
push each, not a scan.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable, Hashable

log = logging.getLogger("groupclient.coordinator.group")

TimerAction = Callable[[int], None]


class TimerQueue:
    """Deadlines by key, each with the action to run at it (one queue per node, both kinds of group)."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Hashable]] = []
        self._live: dict[Hashable, tuple[int, int, TimerAction]] = {}
        self._seq = itertools.count()

    def schedule(self, key: Hashable, deadline: int, action: TimerAction) -> None:
        """Run ``action(now)`` at ``deadline``, replacing what ``key`` had."""
        seq = next(self._seq)
        self._live[key] = (deadline, seq, action)
        heapq.heappush(self._heap, (deadline, seq, key))
        if len(self._heap) > 64 and len(self._heap) > 4 * len(self._live):
            self._compact()

    def cancel(self, key: Hashable) -> None:
        """Forget the key's deadline, if any."""
        self._live.pop(key, None)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._live

    def __len__(self) -> int:
        return len(self._live)

    def next_deadline(self) -> int | None:
        """The earliest deadline (None: none)."""
        self._drop_stale_head()
        return self._heap[0][0] if self._heap else None

    def pop_next_due(self, now: int) -> TimerAction | None:
        """Remove and return the earliest action whose deadline is <= now."""
        self._drop_stale_head()
        if not self._heap or self._heap[0][0] > now:
            return None
        _, _, key = heapq.heappop(self._heap)
        return self._live.pop(key)[2]

    def run_due(self, now: int) -> int:
        """Run due actions one at a time, earliest first; return how many ran.

        One at a time because an action may reschedule or cancel another due timer, which
        must then not fire with its old deadline.  An action that raises is logged and counted;
        the timers of every other group (and member) must still fire.
        """
        ran = 0
        while (action := self.pop_next_due(now)) is not None:
            try:
                action(now)
            except Exception:
                log.exception("a coordinator timer action failed at %d ms", now)
            ran += 1
        return ran

    def _drop_stale_head(self) -> None:
        heap = self._heap
        while heap:
            deadline, seq, key = heap[0]
            live = self._live.get(key)
            if live is not None and live[1] == seq:
                return
            heapq.heappop(heap)

    def _compact(self) -> None:
        self._heap = [(d, s, k) for k, (d, s, _) in self._live.items()]
        heapq.heapify(self._heap)
