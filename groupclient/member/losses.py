"""Losses a member decides under its lock and drops after releasing it, by either thread.

A loss (the ownership lease ran out, a fence, a refusal, a reset generation) is decided in the
member's locked step: the member forgets what it owns and will join again.  The partitions are
dropped (``PartitionOwnership.on_ownership_lost``) only once the lock is released, since dropping
takes the subscription's lock (one lock at a time).  The other thread can run in between: it sees
a member that owns nothing and is joining, so without a number on the loss it would find no lease
to end, hand out records of partitions that may be others' already, and prepare its rejoin as a
revocation instead of a loss.  So each loss is numbered when decided, and the next step of either
thread drops a numbered loss not yet dropped (:meth:`LossBookkeeping.drop_decided_loss`); the
subscription applies each number once.
"""

from __future__ import annotations

import threading

from .types import PartitionOwnership


class LossBookkeeping:
    """Mixin of both protocols' members: ``_lock`` is the member's lock, ``ownership`` its
    partitions; call :meth:`_init_losses` in ``__init__``."""

    _lock: threading.Lock
    ownership: PartitionOwnership

    def _init_losses(self) -> None:
        # losses decided (numbered; the last one's reason) and the last one dropped
        self._losses = 0
        self._loss_reason = ""
        self._losses_dropped = 0

    def _lose(self, reason: str) -> int:
        """Callers hold the lock, and have just decided the partitions may be others' now: the
        loss's number, for :meth:`_drop` once the lock is released."""
        self._losses += 1
        self._loss_reason = reason
        return self._losses

    def _drop(self, loss: int, reason: str) -> None:
        """Drop the partitions of a loss decided (outside the lock); a loss the other thread
        dropped already is not dropped again (nor what was assigned since)."""
        self.ownership.on_ownership_lost(reason, loss)
        with self._lock:
            self._losses_dropped = max(self._losses_dropped, loss)

    def drop_decided_loss(self) -> bool:
        """Either thread, before it hands out a record, joins or reconciles: drop a loss the
        other thread decided and has not dropped yet.  True if there was one."""
        with self._lock:
            loss, reason = self._losses, self._loss_reason
            if loss <= self._losses_dropped:
                return False
        self._drop(loss, reason)
        return True
