"""A member of a share group (KIP-932): ShareGroupHeartbeat carries its subscription; the answers
carry its epoch, the heartbeat interval and, when it changed, its assignment (the Java client's
``ShareMembershipManager`` and ``ShareHeartbeatRequestManager``).

A share group has no revocation: a partition may be assigned to several members at once, and the
broker, not the member, keeps each record to one consumer at a time (its acquisition lock).  So an
assignment is taken the moment it comes, with nothing to give up first and nothing to acknowledge:
the member goes JOINING -> STABLE, leaves with epoch -1, and after a fence joins again at epoch 0
with the same id.  Its states are the consumer protocol's (:mod:`.states`) without RECONCILING and
ACKNOWLEDGING.

Both threads run the methods here; one lock guards the state, and no future listener runs under
it.  The heartbeat thread (:mod:`.heartbeat_thread`) sends the heartbeats and, when the
application has not polled within ``max_poll_interval_ms``, the leave.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Any

from ..clock import Clock
from ..error_codes import ErrorCode, error_name
from ..errors import BrokerError, DisconnectedError, FatalError
from ..network.future import RequestFuture
from ..network.transport import Transport
from ..protocol.apis import ApiKey
from ..protocol.error_table import Action, action_for, error_for
from ..protocol.share_group import LEAVE_EPOCH, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse
from .consumer_heartbeat_fields import NO_PARTITIONS, TopicIdPartitions
from .consumer_timing import ConsumerHeartbeatTimer
from .coordinated import Coordinated
from .coordinator_lookup import CoordinatorLookup
from .states import ConsumerMemberState, check_transition
from .types import GroupConfig

log = logging.getLogger("groupclient.member")

S = ConsumerMemberState
JOIN_EPOCH = 0
IN_SHARE_GROUP = frozenset({S.JOINING, S.STABLE})  # the states with a place (and an epoch) in the group
_BEATING = IN_SHARE_GROUP | {S.LEAVING}


class ShareGroupMember(Coordinated):
    """One member of one share group, as both threads see it."""

    def __init__(self, client: Transport, clock: Clock, config: GroupConfig, coordinator: CoordinatorLookup,
                 member_id: str, rack_id: str | None = None, rng: random.Random | None = None) -> None:
        self.client = client
        self.clock = clock
        self.config = config
        self.coordinator = coordinator
        self.member_id = member_id  # its own, for the consumer's lifetime, as Java's
        self.rack_id = rack_id
        self._lock = threading.Lock()
        self.state = S.UNSUBSCRIBED
        self.epoch = JOIN_EPOCH
        self._topics: frozenset[str] = frozenset()
        self._topics_sent: frozenset[str] | None = None  # None: the next heartbeat names them
        self._timer = ConsumerHeartbeatTimer(config.rebalance_timeout_ms, config.retry_backoff_ms,
                                             clock.monotonic_ms(), rng or random.Random(0))
        self._assignment: TopicIdPartitions = NO_PARTITIONS
        self._assignment_version = 0
        self._stale_on_leave = False  # the leave under way is the poll timeout's
        self.fatal_error: BaseException | None = None
        self._to_raise: BaseException | None = None  # raised once from poll()

    # -- what it is ---------------------------------------------------------------------------
    def _transition(self, target: ConsumerMemberState, why: str, level: int = logging.INFO) -> None:
        """Callers hold the lock."""
        if target is not self.state:
            check_transition(self.state, target)
            log.log(level, "share group %s member %s epoch %d: %s -> %s (%s)", self.config.group_id,
                    self.member_id, self.epoch, self.state.value, target.value, why)
            self.state = target

    def member_state(self) -> ConsumerMemberState:
        with self._lock:
            return self.state

    def member_epoch(self) -> int:
        with self._lock:
            return self.epoch

    def assignment(self) -> tuple[int, TopicIdPartitions]:
        """The partitions the group assigned to this member, by topic id, and a number that changes
        with them."""
        with self._lock:
            return self._assignment_version, self._assignment

    def set_fatal(self, error: BaseException) -> None:
        """Keep the first fatal error, raised once from poll() (any thread)."""
        with self._lock:
            if self.fatal_error is None:
                self.fatal_error = self._to_raise = error
            if self.state is not S.FATAL:
                self._fail_locked(error)

    def note_failure(self, error: BaseException) -> None:
        if isinstance(error, FatalError):
            self.set_fatal(error)

    def take_error(self) -> BaseException | None:
        """What poll() raises now: a refusal, once; None otherwise."""
        with self._lock:
            error, self._to_raise = self._to_raise, None
            return error

    def _fail_locked(self, error: BaseException) -> None:
        self._transition(S.FATAL, str(error), logging.ERROR)
        self._set_assignment(NO_PARTITIONS)
        if self.fatal_error is None:
            self.fatal_error = self._to_raise = error

    def _set_assignment(self, assignment: TopicIdPartitions) -> None:
        """Callers hold the lock."""
        if assignment != self._assignment:
            self._assignment = assignment
            self._assignment_version += 1

    # -- the application thread's steps -------------------------------------------------------
    def subscribe(self, topics: frozenset[str]) -> None:
        """The subscription changed (empty: unsubscribed, see :meth:`leave`).  A member in the
        group names it in its next heartbeat, at once; one out of the group joins."""
        with self._lock:
            if self.state is S.FATAL:
                return
            self._topics = topics
            if self.state in (S.UNSUBSCRIBED, S.STALE):
                self._join("subscribed")
            elif self._topics_sent != topics:
                self._timer.send_at_once()

    def _join(self, reason: str) -> None:
        """Callers hold the lock: join with epoch 0, naming the subscription."""
        self._transition(S.JOINING, reason)
        self.epoch = JOIN_EPOCH
        self._topics_sent = None
        self._timer.send_at_once()

    def poll_heartbeat(self, now: int) -> None:
        """The application polls: the poll timer restarts, and a member that left because it did
        not poll in time joins again (Java's ``maybeRejoinStaleMember``)."""
        with self._lock:
            self._timer.polled(now)
            if self.state is S.STALE:
                self._join("rejoining after poll() was not called within max_poll_interval_ms")

    def leave(self, reason: str) -> RequestFuture[None] | None:
        """Leave the group (close, unsubscribe): a heartbeat with epoch -1; None when there is
        nothing to tell (not in the group, or no coordinator)."""
        with self._lock:
            self._topics = frozenset()
            if self.state not in IN_SHARE_GROUP:
                if self.state is not S.FATAL:
                    self._transition(S.UNSUBSCRIBED, f"not in the group: {reason}", logging.DEBUG)
                return None
            self._transition(S.LEAVING, reason)
            self._set_assignment(NO_PARTITIONS)
            self.epoch = LEAVE_EPOCH
            self._stale_on_leave = False
        if self.coordinator_unknown():
            with self._lock:
                self._transition(S.UNSUBSCRIBED, "left without a coordinator to tell")
            return None
        return self._send_heartbeat(self.clock.monotonic_ms())

    # -- what the heartbeat thread asks (see heartbeat_thread.Beating) --------------------------
    def heartbeat_enabled(self) -> bool:
        with self._lock:
            return self.state in _BEATING

    def check_lease(self, now: int) -> bool:
        """A share member holds no partition exclusively: nothing ends with a lease."""
        return False

    def time_to_lease_end(self, now: int) -> int | None:
        return None

    def time_to_next_heartbeat(self, now: int) -> int:
        with self._lock:
            return self._timer.time_to_next(now)

    def time_to_poll_timeout(self, now: int) -> int:
        with self._lock:
            return self._timer.time_to_poll_timeout(now)

    def leave_if_poll_timed_out(self, now: int,
                                before_sending: Callable[[], None]) -> tuple[bool, RequestFuture[None] | None]:
        """A member whose application has not polled within max_poll_interval_ms leaves, and joins
        again on its next poll() (as Java's).  The records it holds go back to the group when their
        locks run out, or at once when its share sessions close."""
        with self._lock:
            if self.state not in IN_SHARE_GROUP or self._timer.poll_ok(now):
                return False, None
            self._transition(S.LEAVING, "poll() was not called within max_poll_interval_ms", logging.WARNING)
            self._set_assignment(NO_PARTITIONS)
            self.epoch = LEAVE_EPOCH
            self._stale_on_leave = True  # joins again on the next poll, even one that comes first
        before_sending()
        if self.coordinator_unknown():
            with self._lock:
                self._transition(S.STALE, "left without a coordinator to tell")
                self._stale_on_leave = False
            return True, None
        return True, self._send_heartbeat(now)

    def send_heartbeat_if_due(self, now: int) -> RequestFuture[None] | None:
        if self.coordinator_unknown():
            return None
        with self._lock:
            if self.state not in _BEATING or not self._timer.due(now):
                return None
        return self._send_heartbeat(now)

    # -- heartbeats ---------------------------------------------------------------------------
    def _send_heartbeat(self, sent_at: int) -> RequestFuture[None]:
        """Decide what the heartbeat says (one locked step; a leave counts as done once it is on
        its way, as in Java), then send it outside the lock."""
        with self._lock:
            sent_epoch = self.epoch
            joining = sent_epoch == JOIN_EPOCH
            topics = self._topics if joining or self._topics_sent != self._topics else None
            fields = {"group_id": self.config.group_id, "member_id": self.member_id, "member_epoch": sent_epoch,
                      "rack_id": self.rack_id if joining else None,
                      "subscribed_topic_names": sorted(topics) if topics is not None else None}
            if self.state is S.LEAVING:
                self._transition(S.STALE if self._stale_on_leave else S.UNSUBSCRIBED, "leave sent")
                self._stale_on_leave = False
            self._timer.sent(sent_at)

        def build(version: int) -> Any:
            return ShareGroupHeartbeatRequest(version=version, **fields)

        future = self.send_to_coordinator(ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, build,
                                          heartbeat=True)
        future.add_errback(self._heartbeat_failed)
        handled: RequestFuture[None] = future.compose(
            lambda r, f: self._handle_heartbeat(r, f, topics, sent_epoch, sent_at))
        return handled.add_errback(self.note_failure)

    def _heartbeat_failed(self, exc: BaseException) -> None:
        """No answer (either thread): name the subscription again, after the backoff; a broker
        without the API is a refusal, named."""
        with self._lock:
            self._topics_sent = None
            self._timer.failed(self.clock.monotonic_ms())
            if isinstance(exc, BrokerError) and exc.code == ErrorCode.UNSUPPORTED_VERSION and self.state is not S.FATAL:
                self._fail_locked(error_for(ErrorCode.UNSUPPORTED_VERSION, ApiKey.SHARE_GROUP_HEARTBEAT,
                                            f"ShareGroupHeartbeat of share group {self.config.group_id!r}"))
        if isinstance(exc, DisconnectedError):
            self.mark_coordinator_dead(f"ShareGroupHeartbeat failed: {exc}")

    def _handle_heartbeat(self, response: Any, future: RequestFuture[None], topics: frozenset[str] | None,
                          sent_epoch: int, sent_at: int) -> None:
        error = response.error_code
        action = action_for(error, ApiKey.SHARE_GROUP_HEARTBEAT)
        now = self.clock.monotonic_ms()
        if action is Action.NONE:
            with self._lock:
                self._timer.answered()
                changed = self._took(response, topics, sent_epoch, sent_at)
            if changed:
                self.client.interrupt()  # a poll() waiting for records fetches the new partitions now
            return future.success(None)
        with self._lock:
            self._topics_sent = None
            self._timer.failed(now)
            what = f"ShareGroupHeartbeat of share group {self.config.group_id!r}"
            detail = f" ({response.error_message})" if response.error_message else ""
            raised = error_for(error, ApiKey.SHARE_GROUP_HEARTBEAT, what + detail)
            if action is Action.RESET_GENERATION and self.state in IN_SHARE_GROUP and sent_epoch == self.epoch:
                self._set_assignment(NO_PARTITIONS)
                self._join(f"the coordinator answered a heartbeat with {error_name(error)}")
            elif action is Action.FATAL and self.state is not S.FATAL:
                self._fail_locked(raised)
            elif action is Action.REDISCOVER:
                self._timer.send_at_once()
            elif action is Action.RAISE:
                self._to_raise = self._to_raise or raised
        if action is Action.REDISCOVER:
            self.mark_coordinator_dead(f"ShareGroupHeartbeat answered {error_name(error)}")
        elif action is not Action.FATAL:
            log.warning("share group %s: heartbeat answered %s%s", self.config.group_id, error_name(error), detail)
        future.failure(raised)

    def _took(self, response: Any, topics: frozenset[str] | None, sent_epoch: int, sent_at: int) -> bool:
        """Callers hold the lock: a heartbeat answered without error.  Whether the assignment
        changed."""
        if self.state not in IN_SHARE_GROUP or response.member_epoch < 0 or sent_epoch < 0:
            return False  # the answer to a leave, or to a heartbeat of a membership since left
        if sent_epoch != self.epoch and sent_epoch != JOIN_EPOCH:
            return False  # sent before a fence: the heartbeat of the new join answers for it
        self.epoch = response.member_epoch
        self._timer.proven(sent_at, response.heartbeat_interval_ms, at_once=False)
        if topics is not None:
            self._topics_sent = topics
        if self.state is S.JOINING:
            self._transition(S.STABLE, f"joined at epoch {self.epoch}")
        if sent_epoch == JOIN_EPOCH:
            # Kafka assigns a partition once its share coordinator has initialised it: the first
            # answers may come without it, so heartbeat at the settling cadence for a while
            self._timer.gaining(sent_at)
        if response.assignment is None:
            return False
        before, old = self._assignment_version, self._assignment
        self._set_assignment({tp.topic_id: frozenset(tp.partitions)
                              for tp in response.assignment.topic_partitions if tp.partitions})
        if any(not p <= old.get(t, frozenset()) for t, p in self._assignment.items()):
            self._timer.gaining(sent_at)
        return self._assignment_version != before
