"""The consumer-protocol member's lease on its partitions and its poll timeout: when the broker
may have given the partitions to others (a revocation not done within the rebalance timeout, or
no heartbeat answered within the group's session timeout), the member drops them itself, at once;
and a member whose application stopped polling leaves.  A mixin of
:class:`~groupclient.member.consumer_member.ConsumerGroupMember`, kept apart because both threads
run it for one purpose: never to hand out a record of a partition that may be another's.  The
deadlines are :class:`~groupclient.member.consumer_timing.ConsumerHeartbeatTimer`'s; each decision
is one locked step, and the partitions are dropped after the lock is released (losses.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..network.future import RequestFuture
from .consumer_heartbeat_fields import TopicIdPartitions
from .consumer_timing import ConsumerHeartbeatTimer
from .coordinated import Coordinated
from .group_session import GroupSessionTimeout
from .losses import LossBookkeeping
from .states import IN_GROUP, ConsumerMemberState
from .types import GroupConfig

log = logging.getLogger("groupclient.member")

S = ConsumerMemberState


class ConsumerLease(Coordinated, LossBookkeeping):
    """What the member's lease and poll timeout need of it (set by ``ConsumerGroupMember``)."""

    config: GroupConfig
    state: ConsumerMemberState
    epoch: int
    owned: TopicIdPartitions
    session: GroupSessionTimeout
    _timer: ConsumerHeartbeatTimer

    def _transition(self, target: ConsumerMemberState, why: str, level: int = logging.INFO) -> None:
        raise NotImplementedError

    def _join(self, reason: str) -> None:
        raise NotImplementedError

    def _clear_assignment(self) -> None:
        raise NotImplementedError

    def _leave_fields(self) -> None:
        raise NotImplementedError

    def _send_heartbeat(self, sent_at: int) -> RequestFuture[None]:
        raise NotImplementedError

    def ask_session_timeout(self, now: int) -> None:
        """Learn the group's session timeout once in the group (application thread)."""
        with self._lock:
            joined = self.state in IN_GROUP and self.epoch > 0
        if joined:
            self.session.maybe_ask(now)

    def _holds_partitions(self) -> bool:
        """Callers hold the lock: whether a session expiry would take partitions away."""
        return self.state in IN_GROUP and bool(self.owned)

    def time_to_lease_end(self, now: int) -> int | None:
        session_ms = self.session.timeout_ms
        with self._lock:
            end = self._timer.lease_end(session_ms, self._holds_partitions())
        return None if end is None else max(0, end - now)

    def check_lease(self, now: int) -> bool:
        """The broker may have given the partitions away: drop them, now.  Either the partitions it
        asked back were not given up within the rebalance timeout (the member is fenced by then), or
        no heartbeat was answered within the group's session timeout (the member is expired by then:
        it joins again at epoch 0, as after a fence).  A loss the other thread decided and has not
        dropped yet is dropped here too.  True if it dropped them."""
        session_ms = self.session.timeout_ms
        with self._lock:
            if self.state not in IN_GROUP:
                reason = ""
            elif self._timer.expired_session(now, session_ms, self._holds_partitions()):
                reason = (f"no heartbeat was answered within the group's session timeout ({session_ms} ms, "
                          f"consumer.session.timeout.ms); the partitions may belong to others now")
                self._clear_assignment()
                self._join(reason)
            elif self._timer.missed_revocation(now):
                self._timer.revoked()
                reason = (f"the partitions the coordinator took away were not given up within the rebalance "
                          f"timeout (max_poll_interval_ms={self.config.rebalance_timeout_ms}); they may belong to "
                          "others now")
            else:
                reason = ""
            loss = self._lose(reason) if reason else 0
        if not reason:
            # the other thread may have decided a loss (the lease, a fence) and not dropped it yet
            return self.drop_decided_loss()
        self._drop(loss, reason)
        log.warning("group %s: %s", self.config.group_id, reason)
        return True

    def leave_if_poll_timed_out(self, now: int, before_sending: Callable[[], None]) -> tuple[bool, RequestFuture[None] | None]:
        """The heartbeat thread's poll-timeout step: a member whose application has not polled
        within max_poll_interval_ms leaves (its partitions dropped first, as lost: no commit) and
        joins again on its next poll()."""
        with self._lock:
            if self.state not in IN_GROUP or self._timer.poll_ok(now):
                return False, None
            reason = "poll() was not called within max_poll_interval_ms"
            self._transition(S.LEAVING, reason, logging.WARNING)
            self._leave_fields()
            loss = self._lose(reason)
        self._drop(loss, reason)  # a poll() from now on finds it dropped
        before_sending()
        if self.coordinator_unknown():
            with self._lock:
                self._transition(S.STALE, "left without a coordinator to tell")
            return True, None
        return True, self._send_heartbeat(now)
