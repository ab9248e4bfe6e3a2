"""A member of a consumer-protocol group (KIP-848): one request, ConsumerGroupHeartbeat, carries
the member's subscription and what it owns; the answers carry its epoch, the heartbeat interval
and its target assignment (the Java client's ``ConsumerMembershipManager`` and
``ConsumerHeartbeatRequestManager``).

There is no join barrier and no leader: the broker assigns.  The member owns a partition only once
the broker has assigned it, gives up what the broker takes away before it says so (the
application thread reconciles: :mod:`groupclient.consumer.reconciler`), and says so at once.

Both threads run the methods here; one lock guards the state and every decision is one locked
step, as in :class:`~groupclient.member.group_member.GroupMember`.  No user code and no future
listener runs under the lock; the partitions are dropped (``on_ownership_lost``) after it is
released.  See docs/design.md.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Any

from ..clock import Clock
from ..error_codes import ErrorCode, error_name
from ..errors import BrokerError, DisconnectedError, FatalError, FatalGroupError
from ..network.future import RequestFuture
from ..network.transport import Transport
from ..protocol.apis import ApiKey
from ..protocol.consumer_group_heartbeat import (
    JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
)
from ..protocol.error_table import Action, action_for, error_for
from .consumer_heartbeat_fields import (
    NO_PARTITIONS, HeartbeatInputs, SentFields, Subscribed, Target, TopicIdPartitions, heartbeat_fields,
)
from .consumer_timing import ConsumerHeartbeatTimer
from .consumer_lease import ConsumerLease
from .coordinator_lookup import CoordinatorLookup
from .group_session import GroupSessionTimeout
from .states import IN_GROUP, ConsumerMemberState, check_transition
from .types import CommitIdentity, GroupConfig, MemberSnapshot, PartitionOwnership

log = logging.getLogger("groupclient.member")

S = ConsumerMemberState
SESSION_REFRESH_MS = 300_000  # how often the group's session timeout is asked again


class ConsumerGroupMember(ConsumerLease):
    """One member of one consumer-protocol group, as both threads see it."""

    def __init__(self, client: Transport, clock: Clock, config: GroupConfig, coordinator: CoordinatorLookup,
                 ownership: PartitionOwnership, member_id: str, server_assignor: str | None = None,
                 rack_id: str | None = None, rng: random.Random | None = None) -> None:
        self.client = client
        self.clock = clock
        self.config = config
        self.coordinator = coordinator
        self.ownership = ownership
        self.server_assignor = server_assignor
        self.rack_id = rack_id
        self.member_id = member_id  # the member's own, for the consumer's lifetime (KIP-1082)
        self._lock = threading.Lock()
        self.state = S.UNSUBSCRIBED
        self.epoch = JOIN_EPOCH
        self._subscribed = Subscribed()
        self._sent: SentFields | None = None  # None: the next heartbeat states every field
        # when heartbeats are due, the poll timeout and the lease: pure in now, under the lock
        self._timer = ConsumerHeartbeatTimer(config.rebalance_timeout_ms, config.retry_backoff_ms,
                                             clock.monotonic_ms(), rng or random.Random(0))
        self.owned: TopicIdPartitions = NO_PARTITIONS  # reconciled: what the member owns, by topic id
        self._target: Target | None = None
        self._target_versions = 0
        self._owned_version = 0  # reconciliations so far (Java's local assignment epoch)
        # the target a heartbeat in flight, or not answered, stated owning only part of
        self._stated_part_of: int | None = None
        self.session = GroupSessionTimeout(
            config.group_id, lambda request, response, build: self.send_to_coordinator(request, response, build),
            SESSION_REFRESH_MS)
        self.fatal_error: BaseException | None = None
        self._to_raise: BaseException | None = None  # raised once from poll()
        self._init_losses()  # see losses.py
        self.join_reason = "initial join"
        self.join_started_at = 0

    # -- state ---------------------------------------------------------------------------
    def _transition(self, target: ConsumerMemberState, why: str, level: int = logging.INFO) -> None:
        """Callers hold the lock."""
        if target is not self.state:
            check_transition(self.state, target)
            log.log(level, "group %s member %s epoch %d: %s -> %s (%s)", self.config.group_id, self.member_id,
                    self.epoch, self.state.value, target.value, why)
            self.state = target

    def member_state(self) -> ConsumerMemberState:
        with self._lock:
            return self.state

    def is_dynamic(self) -> bool:
        return self.config.group_instance_id is None

    @property
    def interval_ms(self) -> int:
        """The heartbeat interval the broker gave (0 until its first answer)."""
        return self._timer.interval_ms

    def snapshot(self) -> MemberSnapshot:
        with self._lock:
            return MemberSnapshot(self.member_id, self.epoch, "epoch", self.state)

    def commit_identity(self) -> CommitIdentity | None:
        """The member id and epoch a commit carries: while the member has an epoch (the broker
        checks it: STALE_MEMBER_EPOCH otherwise)."""
        with self._lock:
            if self.state in IN_GROUP and self.epoch > 0:
                return CommitIdentity(self.member_id, self.epoch)
            return None

    def offset_fetch_identity(self) -> CommitIdentity | None:
        """OffsetFetch v9 (KIP-848): a member with an epoch names itself, and the broker checks it."""
        return self.commit_identity()

    def is_stable(self) -> bool:
        with self._lock:
            return self.state is S.STABLE

    def rebalance_in_progress(self) -> bool:
        with self._lock:
            return self.state in (S.JOINING, S.RECONCILING, S.ACKNOWLEDGING)

    def rebalance_timing(self) -> tuple[str, int, int]:
        with self._lock:
            return self.join_reason, self.join_started_at, self.join_started_at

    def set_fatal(self, error: BaseException) -> None:
        """Keep the first fatal error, raised once from poll() (called from any thread)."""
        with self._lock:
            if self.fatal_error is None:
                self.fatal_error = self._to_raise = error

    def note_failure(self, error: BaseException) -> None:
        if isinstance(error, FatalError):
            self.set_fatal(error)

    def take_error(self) -> BaseException | None:
        """What poll() raises now: a refusal, once (Java's ErrorEvent); None otherwise."""
        with self._lock:
            error, self._to_raise = self._to_raise, None
            return error

    def request_rejoin(self, reason: str) -> None:
        """The classic protocol's rejoin has no counterpart here: the broker reassigns by itself
        (Java's AsyncKafkaConsumer only logs, too)."""
        log.debug("group %s: no rejoin under the consumer protocol (%s)", self.config.group_id, reason)

    def fenced_if_still(self, sent: CommitIdentity, reason: str, keep_member_id: bool) -> None:
        """A commit was answered "fenced" or "unknown member" in the epoch it was sent in: the
        partitions may be others' already; drop them and join again at epoch 0 (same id)."""
        with self._lock:
            fenced = self.state in IN_GROUP and self.epoch == sent.generation_id_or_member_epoch
            if fenced:
                self._clear_assignment()
                self._join(reason)
                loss = self._lose(reason)
        if fenced:
            self._drop(loss, reason)

    def maybe_leave_group(self, reason: str,
                          before_sending: Callable[[], None] | None = None) -> RequestFuture[None] | None:
        """Leave (as :meth:`leave`), for the consumer's close path shared with the classic member."""
        if before_sending is not None:
            before_sending()
        return self.leave(reason)

    # -- the application thread's steps ----------------------------------------------------
    def subscribe(self, subscribed: Subscribed | None, reason: str) -> None:
        """The subscription changed (None: unsubscribed).  A member in the group sends it with its
        next heartbeat; one out of it joins."""
        with self._lock:
            self._subscribed = subscribed or Subscribed()
            if subscribed is not None and self.state in (S.UNSUBSCRIBED, S.STALE):
                self._join(reason)

    def _join(self, reason: str) -> None:
        """Callers hold the lock: join with epoch 0, stating everything."""
        self._transition(S.JOINING, reason)
        self.epoch = JOIN_EPOCH
        self._sent = None
        self._timer.send_at_once()
        self.join_reason = reason
        self.join_started_at = self.clock.monotonic_ms()

    def poll_heartbeat(self, now: int) -> None:
        """The application polls: the poll timer restarts, and a member that left because it did
        not poll in time joins again (Java's ``maybeRejoinStaleMember``)."""
        with self._lock:
            self._timer.polled(now)
            if self.state is S.STALE:
                self._join("rejoining after poll() was not called within max_poll_interval_ms")

    def target_to_reconcile(self) -> Target | None:
        """The target assignment the application thread must reconcile now, if any: none while a
        heartbeat that stated owning only part of it awaits its answer (the broker may have given
        the rest to others on reading it; the answer says what is still this member's)."""
        with self._lock:
            if self.state is not S.RECONCILING or self._target is None:
                return None
            return None if self._target.version == self._stated_part_of else self._target

    def on_reconciled(self, target: Target, owned: TopicIdPartitions) -> None:
        """The application thread owns ``owned`` of ``target`` now (all of it once every topic id
        was resolved): acknowledge with the next heartbeat, at once."""
        with self._lock:
            if self.state is not S.RECONCILING or self._target is None or self._target.version != target.version:
                return  # fenced, left, or a newer target came: that one is reconciled next
            self.owned = dict(owned)
            self._owned_version += 1  # stated again with the acknowledgement, even if the same set
            if _covers(target.partitions, self.owned):
                self._timer.revoked()
            self._transition(S.ACKNOWLEDGING, f"reconciled epoch {target.epoch}", logging.DEBUG)
            self._timer.send_at_once()

    def leave(self, reason: str) -> RequestFuture[None] | None:
        """Leave (close, unsubscribe): epoch -1, or -2 for a static member that comes back.  The
        application thread has run the listener and dropped the partitions already."""
        with self._lock:
            if self.state not in IN_GROUP:
                if self.state is not S.FATAL:
                    self._transition(S.UNSUBSCRIBED, f"not in the group: {reason}", logging.DEBUG)
                return None
            self._transition(S.LEAVING, reason)
            self._leave_fields()
        if self.coordinator_unknown():
            with self._lock:
                self._transition(S.UNSUBSCRIBED, "left without a coordinator to tell")
            return None
        return self._send_heartbeat(self.clock.monotonic_ms())

    def _leave_fields(self) -> None:
        """Callers hold the lock."""
        self.owned = NO_PARTITIONS
        self._target = None
        self._timer.revoked()
        self.epoch = LEAVE_EPOCH if self.is_dynamic() else STATIC_LEAVE_EPOCH

    # -- heartbeats (either thread) ----------------------------------------------------------
    def heartbeat_enabled(self) -> bool:
        with self._lock:
            return self.state in IN_GROUP or self.state is S.LEAVING

    def _due(self, now: int) -> bool:
        """Callers hold the lock."""
        return (self.state in IN_GROUP or self.state is S.LEAVING) and self._timer.due(now)

    def time_to_next_heartbeat(self, now: int) -> int:
        """Until the next heartbeat is due (see :meth:`ConsumerHeartbeatTimer.time_to_next`)."""
        with self._lock:
            return self._timer.time_to_next(now)

    def time_to_poll_timeout(self, now: int) -> int:
        with self._lock:
            return self._timer.time_to_poll_timeout(now)

    def send_heartbeat_if_due(self, now: int) -> RequestFuture[None] | None:
        if self.coordinator_unknown():
            return None
        with self._lock:
            if not self._due(now):
                return None
        return self._send_heartbeat(now)

    def _send_heartbeat(self, sent_at: int) -> RequestFuture[None]:
        """Decide what the heartbeat states (one locked step; the acknowledgement and the leave
        count as done once it is on its way, as in Java), then send it outside the lock."""
        coordinator = self.coordinator.connection
        version = self.client.version_for(coordinator, ApiKey.CONSUMER_GROUP_HEARTBEAT) if coordinator is not None else None
        with self._lock:
            if self._subscribed.regex is not None and version == 0:
                self._fail(FatalGroupError(ErrorCode.UNSUPPORTED_VERSION, (
                    f"ConsumerGroupHeartbeat of group {self.config.group_id!r}: subscribe(pattern=...) under "
                    "group_protocol='consumer' needs ConsumerGroupHeartbeat v1 (Kafka 4.0 or later) and this "
                    "broker has only v0; subscribe to topic names, or set group_protocol='classic'")))
                return RequestFuture.failed_with(self.fatal_error or RuntimeError("fatal"))
            fields, stated = heartbeat_fields(HeartbeatInputs(
                self.state, self.config.group_id, self.member_id, self.epoch, self.config.group_instance_id,
                self.config.rebalance_timeout_ms, self._subscribed, self.owned, self.server_assignor, self.rack_id,
                self._sent, self._owned_version), version if version is not None else 1)
            sent_epoch = self.epoch
            if "topic_partitions" in fields and self._target is not None and self._target.partitions != self.owned:
                self._stated_part_of = self._target.version  # until an answer, take no more of it
            if self.state is S.ACKNOWLEDGING:
                # a newer target that came meanwhile is reconciled next
                done = self._target is not None and self._target.partitions == self.owned
                self._transition(S.STABLE if done else S.RECONCILING, "acknowledged", logging.DEBUG)
            elif self.state is S.LEAVING:
                self._transition(S.UNSUBSCRIBED if self._timer.poll_ok(sent_at) else S.STALE, "leave sent")
            self._timer.sent(sent_at)

        def build(version: int) -> Any:
            if version < 1:
                fields.pop("subscribed_topic_regex", None)
            return ConsumerGroupHeartbeatRequest(version=version, **fields)

        future = self.send_to_coordinator(ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, build)
        future.add_errback(self._heartbeat_failed)
        handled: RequestFuture[None] = future.compose(
            lambda r, f: self._handle_heartbeat(r, f, stated, sent_epoch, sent_at))
        return handled.add_errback(self.note_failure)

    def poll_timed_out(self, now: int) -> bool:
        """The application has not polled within max_poll_interval_ms."""
        with self._lock:
            return not self._timer.poll_ok(now)

    def _heartbeat_failed(self, exc: BaseException) -> None:
        """The heartbeat got no answer (either thread): state everything next time, after the
        backoff; a broker without the API is a refusal, named."""
        fatal: BaseException | None = None
        loss = 0
        with self._lock:
            self._sent = None
            self._timer.failed(self.clock.monotonic_ms())
            unsupported = isinstance(exc, BrokerError) and exc.code == ErrorCode.UNSUPPORTED_VERSION
            if unsupported and self.state is not S.FATAL:
                # the coordinator has no ConsumerGroupHeartbeat at all (before Kafka 3.7)
                fatal = FatalGroupError(ErrorCode.UNSUPPORTED_VERSION, f"ConsumerGroupHeartbeat of group "
                                        f"{self.config.group_id!r}: {_NO_CONSUMER_PROTOCOL}")
                self._fail(fatal)
                loss = self._lose(str(fatal))
        if fatal is not None:
            self._drop(loss, str(fatal))
        if isinstance(exc, DisconnectedError):
            self.mark_coordinator_dead(f"ConsumerGroupHeartbeat failed: {exc}")

    def _fail(self, error: BaseException) -> None:
        """Callers hold the lock: refused for good."""
        self._transition(S.FATAL, str(error), logging.ERROR)
        self.owned = NO_PARTITIONS
        self._target = None
        if self.fatal_error is None:
            self.fatal_error = self._to_raise = error

    def _handle_heartbeat(self, response: Any, future: RequestFuture[None], stated: SentFields | None,
                          sent_epoch: int, sent_at: int) -> None:
        error = response.error_code
        action = action_for(error, ApiKey.CONSUMER_GROUP_HEARTBEAT)
        now = self.clock.monotonic_ms()
        lost = ""
        loss = 0
        raised: BrokerError | None = None
        if action is Action.NONE:
            with self._lock:
                self._timer.answered()
                self._stated_part_of = None
                new_target = self._took(response, stated, sent_epoch, sent_at, now)
            if new_target:
                # a poll() waiting for records reconciles it now, not when its wait ends: what
                # it revokes goes to its next owner that much sooner
                self.client.interrupt()
            return future.success(None)  # outside the lock: no listener runs under it
        with self._lock:
            self._stated_part_of = None  # an error answer changed nothing on the broker's side
            self._sent = None  # after any error, the next heartbeat states everything (Java)
            self._timer.failed(now)
            what = f"ConsumerGroupHeartbeat of group {self.config.group_id!r}"
            detail = f" ({response.error_message})" if response.error_message else ""
            raised = error_for(error, ApiKey.CONSUMER_GROUP_HEARTBEAT, what + detail, self._sent_settings())
            if action is Action.RESET_GENERATION and self.state in IN_GROUP and sent_epoch == self.epoch:
                # fenced: the partitions may be others' already; join again at epoch 0, same id
                lost = f"the coordinator answered a heartbeat with {error_name(error)}"
                self._clear_assignment()
                self._join(lost)
            elif action is Action.FATAL and self.state is not S.FATAL:
                lost = str(raised)
                self._fail(raised)
            elif action is Action.REDISCOVER:
                self._timer.send_at_once()
            elif action is Action.RAISE:
                self._to_raise = self._to_raise or raised
            if lost:
                loss = self._lose(lost)
        if lost:
            self._drop(loss, lost)
        if action is Action.REDISCOVER:
            self.mark_coordinator_dead(f"ConsumerGroupHeartbeat answered {error_name(error)}")
        elif action is not Action.FATAL:
            log.warning("group %s: heartbeat answered %s%s", self.config.group_id, error_name(error),
                        f" ({response.error_message})" if response.error_message else "")
        future.failure(raised)

    def _sent_settings(self) -> dict[str, object]:
        """Callers hold the lock: what a refusal's hint names."""
        return {"group_remote_assignor": self.server_assignor or "the broker's default",
                "pattern": self._subscribed.regex, "group_instance_id": self.config.group_instance_id}

    def _clear_assignment(self) -> None:
        """Callers hold the lock."""
        self.owned = NO_PARTITIONS
        self._target = None
        self._timer.revoked()

    def _took(self, response: Any, stated: SentFields | None, sent_epoch: int, sent_at: int, now: int) -> bool:
        """Callers hold the lock: a heartbeat answered without error.  Whether it brought a new
        target assignment."""
        if self.state not in IN_GROUP or response.member_epoch < 0 or sent_epoch < 0:
            return False  # the answer to a leave, or to a heartbeat of a membership since left
        if sent_epoch != self.epoch and sent_epoch != JOIN_EPOCH:
            return False  # sent before a fence: the heartbeat of the new join answers for the member
        self.epoch = response.member_epoch
        if response.version == 0 and response.member_id and response.member_id != self.member_id:
            # a broker of ConsumerGroupHeartbeat v0 (Kafka 3.7-3.9) may hand out its own id: use it
            self.member_id = response.member_id
        # an acknowledgement waiting for this answer goes at once, not an interval later
        self._timer.proven(sent_at, response.heartbeat_interval_ms, at_once=self.state is S.ACKNOWLEDGING)
        if stated is not None:
            self._sent = stated
        target_before = self._target.version if self._target is not None else None
        target_before_partitions = self._target.partitions if self._target is not None else NO_PARTITIONS
        if response.assignment is not None:
            partitions = {tp.topic_id: frozenset(tp.partitions) for tp in response.assignment.topic_partitions
                          if tp.partitions}
            if self._target is None or self._target.partitions != partitions:
                self._target_versions += 1
                self._target = Target(self._target_versions, response.member_epoch, partitions)
                if self.state is not S.JOINING:
                    self.join_reason = f"new target assignment of epoch {response.member_epoch}"
                    self.join_started_at = now
                if not _covers(partitions, self.owned):
                    # the broker fences a member that has not given these up within the
                    # rebalance timeout, counted from when it took this heartbeat
                    self._timer.must_revoke_by(sent_at)
            elif self._target.epoch != response.member_epoch:
                self._target = Target(self._target.version, response.member_epoch, self._target.partitions)
        target_after = self._target.partitions if self._target is not None else NO_PARTITIONS
        if sent_epoch == JOIN_EPOCH or _gains(target_before_partitions, target_after):
            self._timer.gaining(sent_at)
        if self._target is None:
            return False  # joined, no assignment yet: it comes with a later answer
        if self.state in (S.JOINING, S.STABLE) and (self._target.partitions != self.owned or self.state is S.JOINING):
            self._transition(S.RECONCILING, f"target assignment of epoch {self._target.epoch}")
        return self._target.version != target_before and self.state is S.RECONCILING


def _gains(before: TopicIdPartitions, after: TopicIdPartitions) -> bool:
    """Whether ``after`` holds a partition ``before`` did not."""
    return any(not p <= before.get(t, frozenset()) for t, p in after.items())


def _covers(target: TopicIdPartitions, owned: TopicIdPartitions) -> bool:
    """Whether the target keeps every partition owned (nothing to give up)."""
    return all(p <= target.get(t, frozenset()) for t, p in owned.items())


_NO_CONSUMER_PROTOCOL = ("the cluster does not serve the consumer group protocol (KIP-848: Apache Kafka 4.0 "
                         "or later, with group.coordinator.rebalance.protocols including consumer); set "
                         "group_protocol='classic' until it does")
