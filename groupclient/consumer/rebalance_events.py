"""Every rebalance of a member as data: a :class:`RebalanceEvent` logged and handed to callbacks.

One event per completed join (a cooperative rebalance that revokes partitions is two: the round
that takes them away and the follow-up that hands them on).  What the event counts:

- ``revoke_ms``: the time before the JoinGroup went out: the commit before the rebalance and the
  listener's ``on_partitions_revoked`` / ``on_partitions_lost``;
- ``join_ms``: from the first JoinGroup (a MEMBER_ID_REQUIRED round trip is part of it) to the
  SyncGroup, including the leader's assignor;
- ``sync_ms``: from the SyncGroup to the assignment being applied, listener included;
- ``revoked`` / ``lost`` / ``assigned``: what the listener was told during this rebalance (and
  partitions lost since the previous one), ``owned`` what the member holds afterwards.

Under the consumer group protocol (``rebalance_protocol`` "consumer", KIP-848) one event is one
target assignment reconciled; ``generation_id`` is the member epoch, ``join_ms`` the time from the
join (or from the heartbeat answer that brought the target) to the reconciliation on the
application thread, ``sync_ms`` the reconciliation itself (commit, listener, applying it).

The recorder lives on the application thread (the one running ``poll()``): it is fed from the
rebalance listener calls and from the consumer's join hooks, which all run there, so it needs
no lock.  Callbacks run on that thread too, outside any lock; one that raises is logged and does
not break the poll loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..structs import TopicPartition

log = logging.getLogger("groupclient.rebalance")


def _names(partitions: frozenset[TopicPartition]) -> list[str]:
    return sorted(f"{tp.topic}-{tp.partition}" for tp in partitions)


@dataclass(frozen=True)
class RebalanceEvent:
    group_id: str
    member_id: str
    generation_id: int
    reason: str
    assignor: str
    rebalance_protocol: str  # "eager", "cooperative", or "consumer" (KIP-848)
    revoked: frozenset[TopicPartition]
    lost: frozenset[TopicPartition]
    assigned: frozenset[TopicPartition]
    owned: frozenset[TopicPartition]
    revoke_ms: int
    join_ms: int
    sync_ms: int
    total_ms: int
    completed_at: float  # seconds since the epoch (the consumer's clock) when the assignment was applied

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: partitions as "topic-partition" strings."""
        return {
            "group_id": self.group_id, "member_id": self.member_id, "generation_id": self.generation_id,
            "reason": self.reason, "assignor": self.assignor, "rebalance_protocol": self.rebalance_protocol,
            "revoked": _names(self.revoked), "lost": _names(self.lost), "assigned": _names(self.assigned),
            "owned": _names(self.owned), "revoke_ms": self.revoke_ms, "join_ms": self.join_ms,
            "sync_ms": self.sync_ms, "total_ms": self.total_ms, "completed_at": self.completed_at,
        }

    def summary(self) -> str:
        """One line for a log: the reason, what moved, what is owned, and the timings."""
        consumer = self.rebalance_protocol == "consumer"
        counter = "epoch" if consumer else "generation"
        parts = [f"group {self.group_id} member {self.member_id} {counter} {self.generation_id} ({self.reason}):"]
        for name, partitions in (("revoked", self.revoked), ("lost", self.lost), ("assigned", self.assigned)):
            if partitions:
                parts.append(f"{name} {_names(partitions)}")
        steps = (f"revoke {self.revoke_ms}, until reconciled {self.join_ms}, reconcile {self.sync_ms}" if consumer
                 else f"revoke {self.revoke_ms}, join {self.join_ms}, sync {self.sync_ms}")
        parts.append(f"owns {len(self.owned)} partitions; {self.total_ms} ms ({steps})")
        return " ".join(parts)


EventCallback = Callable[[RebalanceEvent], Any]


@dataclass
class RebalanceRecorder:
    """Collects one rebalance's facts as they happen; :meth:`complete` makes the event."""

    callbacks: list[EventCallback] = field(default_factory=list)
    _started_at: int | None = None
    _revoke_ms: int = 0
    _revoked: set[TopicPartition] = field(default_factory=set)
    _lost: set[TopicPartition] = field(default_factory=set)
    _assigned: set[TopicPartition] = field(default_factory=set)

    def preparing(self, now_ms: int) -> None:
        if self._started_at is None:
            self._started_at = now_ms

    def prepared(self, started_ms: int, now_ms: int) -> None:
        self._revoke_ms += now_ms - started_ms

    def listener_called(self, method: str, partitions: set[TopicPartition]) -> None:
        target = {"on_partitions_revoked": self._revoked, "on_partitions_lost": self._lost,
                  "on_partitions_assigned": self._assigned}.get(method)
        if target is not None:
            target |= partitions

    def complete(self, group_id: str, member_id: str, generation_id: int, reason: str, assignor: str,
                 rebalance_protocol: str, owned: set[TopicPartition], join_started_ms: int, sync_sent_ms: int,
                 now_ms: int, wall_ms: int = 0) -> RebalanceEvent:
        """The event of the rebalance that just completed (``now_ms`` on the monotonic clock,
        ``wall_ms`` the same instant on the wall clock: both the consumer's injected clock)."""
        started = self._started_at if self._started_at is not None else join_started_ms
        event = RebalanceEvent(
            group_id, member_id, generation_id, reason, assignor, rebalance_protocol,
            frozenset(self._revoked), frozenset(self._lost), frozenset(self._assigned), frozenset(owned),
            self._revoke_ms, max(0, sync_sent_ms - join_started_ms), max(0, now_ms - sync_sent_ms),
            max(0, now_ms - started), wall_ms / 1000)
        self._started_at, self._revoke_ms = None, 0
        self._revoked, self._lost, self._assigned = set(), set(), set()
        return event

    def emit(self, event: RebalanceEvent) -> None:
        log.info("%s", event.summary(), extra={"rebalance": event.as_dict()})
        for callback in list(self.callbacks):
            try:
                callback(event)
            except Exception as exc:
                log.error("rebalance event callback %r failed: %r", callback, exc)
