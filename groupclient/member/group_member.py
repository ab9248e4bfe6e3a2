"""The member's place in the group: its state, generation and rejoin reason, heartbeats, the
ownership lease, and leaving (the Java client's AbstractCoordinator without the join sequence,
which is :mod:`.join`, and without coordinator discovery, which is :mod:`.coordinator_lookup`).

One lock guards the member's state and its :class:`Heartbeat` timers; it is held only for
bookkeeping, never across network calls, the partition hooks or user code.  Both the application
thread (joins, commits) and the heartbeat thread (heartbeats, the ownership lease, the poll
timeout) run the methods here; every decision that reads this state and changes it is one method,
taking the lock once.  See docs/design.md.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kafka.protocol.consumer.group import HeartbeatRequest, HeartbeatResponse, LeaveGroupRequest, LeaveGroupResponse

from ..clock import Clock
from ..error_codes import ErrorCode, error_name
from ..errors import BrokerError, FatalError
from ..network.future import RequestFuture
from ..network.transport import Transport
from ..protocol.apis import ApiKey
from ..protocol.error_table import Action, action_for, error_for
from .coordinated import Coordinated
from .coordinator_lookup import CoordinatorLookup
from .heartbeat import Heartbeat
from .losses import LossBookkeeping
from .states import ClassicMemberState, check_transition
from .types import NO_GENERATION, CommitIdentity, Generation, GroupConfig, MemberSnapshot, PartitionOwnership

log = logging.getLogger("groupclient.member")


class GroupMember(Coordinated, LossBookkeeping):
    """One member of one group, as both threads see it (see the module's docstring)."""

    def __init__(self, client: Transport, clock: Clock, config: GroupConfig, coordinator: CoordinatorLookup,
                 ownership: PartitionOwnership, keeps_partitions_while_rejoining: bool = False) -> None:
        self.client = client
        self.clock = clock
        self.config = config
        self.coordinator = coordinator
        self.ownership = ownership
        # COOPERATIVE members keep their partitions while rejoining (KIP-429), so their lease
        # runs in every state, not only while STABLE
        self.keeps_partitions_while_rejoining = keeps_partitions_while_rejoining
        self._lock = threading.Lock()
        self.state = ClassicMemberState.UNJOINED
        self.generation = NO_GENERATION
        self.rejoin_reason: str | None = "initial join"
        self.heartbeat = Heartbeat(config.session_timeout_ms, config.heartbeat_interval_ms,
                                   config.rebalance_timeout_ms, config.retry_backoff_ms)
        self.fatal_error: BaseException | None = None
        self._sync_sent_at = 0
        self._join_sent_at = 0
        # what started the current rebalance, and when its first JoinGroup went out: the
        # rebalance events report them (a MEMBER_ID_REQUIRED round trip is part of the same join)
        self.join_reason = "initial join"
        self.join_started_at = 0
        self._member_id_retry = False
        self._init_losses()  # a loss decided here is dropped by whichever thread comes next (losses.py)

    # -- state ---------------------------------------------------------------------------
    def _transition(self, target: ClassicMemberState, why: str, level: int = logging.INFO) -> None:
        """Callers hold the lock."""
        if target is not self.state:
            check_transition(self.state, target)
            log.log(level, "group %s member %s: %s -> %s (%s)", self.config.group_id,
                    self.generation.member_id or "-", self.state.value, target.value, why)
            self.state = target

    def request_rejoin(self, reason: str) -> None:
        with self._lock:
            if self.rejoin_reason is None:
                log.info("group %s: rejoin requested: %s", self.config.group_id, reason)
                self.rejoin_reason = reason

    def rejoin_needed(self) -> bool:
        with self._lock:
            return self.rejoin_reason is not None or self.state is not ClassicMemberState.STABLE

    def is_dynamic(self) -> bool:
        return self.config.group_instance_id is None

    def _reset_generation(self, reason: str, keep_member_id: bool = False) -> None:
        """Callers hold the lock."""
        self._transition(ClassicMemberState.UNJOINED, reason)
        self.generation = Generation(-1, self.generation.member_id if keep_member_id else "")
        if self.rejoin_reason is None:
            self.rejoin_reason = reason

    def fenced_if_still(self, sent: CommitIdentity, reason: str, keep_member_id: bool) -> None:
        """Forget the generation if it is still the one a request was sent in (stale answers change
        nothing); the group has moved on without this member, so its partitions are lost now."""
        loss = 0
        with self._lock:
            current = self.generation
            if (current.member_id, current.generation_id) == (sent.member_id, sent.generation_id_or_member_epoch):
                self._reset_generation(reason, keep_member_id)
                loss = self._lose(reason)
        if loss:
            self._drop(loss, reason)

    def is_stable(self) -> bool:
        with self._lock:
            return self.state is ClassicMemberState.STABLE

    def set_fatal(self, error: BaseException) -> None:
        """Keep the first fatal error for poll() to raise (called from any thread)."""
        with self._lock:
            if self.fatal_error is None:
                self.fatal_error = error

    def note_failure(self, error: BaseException) -> None:
        """A request of this member failed: a :class:`FatalError` (the group's refusal for good,
        a bug of groupclient's) is kept, and raised from every later poll()."""
        if isinstance(error, FatalError):
            self.set_fatal(error)

    def rebalance_timing(self) -> tuple[str, int, int]:
        """The current join's reason, when its first JoinGroup and its SyncGroup were sent."""
        with self._lock:
            return self.join_reason, self.join_started_at, self._sync_sent_at

    def current_generation(self) -> Generation:
        with self._lock:
            return self.generation

    def generation_and_state(self) -> tuple[Generation, ClassicMemberState]:
        with self._lock:
            return self.generation, self.state

    def snapshot(self) -> MemberSnapshot:
        with self._lock:
            return MemberSnapshot(self.generation.member_id, self.generation.generation_id, "generation", self.state)

    def rebalance_in_progress(self) -> bool:
        with self._lock:
            return self.state in (ClassicMemberState.PREPARING_REBALANCE, ClassicMemberState.COMPLETING_REBALANCE)

    def commit_identity(self) -> CommitIdentity | None:
        """The generation a commit carries: only while STABLE (a commit during a rebalance is
        refused by the coordinator, and one after a reset would be from nobody)."""
        with self._lock:
            if self.state is not ClassicMemberState.STABLE:
                return None
            return CommitIdentity(self.generation.member_id, self.generation.generation_id)

    def offset_fetch_identity(self) -> CommitIdentity | None:
        """None: a classic group's OffsetFetch names no member (KIP-848's v9 fields are the
        consumer protocol's)."""
        return None

    def take_error(self) -> BaseException | None:
        """What poll() raises now: a refusal for good, every time (a classic member stays refused)."""
        with self._lock:
            return self.fatal_error

    # -- the join sequence's steps (each one locked step; see join.py) -----------------------
    def begin_join(self) -> tuple[str, int, Generation]:
        """A JoinGroup is about to go out: PREPARING_REBALANCE, the rejoin reason consumed; the
        reason, the level to log it at, and the generation it is sent in."""
        with self._lock:
            # the second JoinGroup of KIP-394 (with the member id the coordinator handed out)
            # is the same join, not news
            retry, self._member_id_retry = self._member_id_retry, False
            level = logging.DEBUG if retry else logging.INFO
            reason = self.join_reason if retry else (self.rejoin_reason or "rejoin")
            self._transition(ClassicMemberState.PREPARING_REBALANCE, reason, level)
            self.rejoin_reason = None
            if not retry:
                self.join_reason = reason
                self.join_started_at = self.clock.monotonic_ms()
            return reason, level, self.generation

    def mark_join_sent(self) -> None:
        with self._lock:
            self._join_sent_at = self.clock.monotonic_ms()

    def on_join_answer(self, error: int, response: Any, sent: Generation) -> bool:
        """Apply a JoinGroup answer (either thread may read it); False if it is stale."""
        action = action_for(error, ApiKey.JOIN_GROUP)
        with self._lock:
            stale = self.generation != sent or self.state is not ClassicMemberState.PREPARING_REBALANCE
            if action is Action.NONE and not stale:
                self.generation = Generation(response.generation_id, response.member_id, response.protocol_name)
                # in the new generation: the coordinator restarted the session when it completed
                # the join, and any later rebalance begins after that
                self.heartbeat.joined(self._join_sent_at)
                self._transition(ClassicMemberState.COMPLETING_REBALANCE, f"joined generation {response.generation_id}")
            elif action is Action.RETRY_WITH_MEMBER_ID:
                self.generation = Generation(-1, response.member_id)
            elif action is Action.RESET_MEMBER:
                self.generation = NO_GENERATION
            elif action is Action.RESET_GENERATION:
                self.generation = Generation(-1, self.generation.member_id)
        return not stale

    def on_join_failed(self, exc: BaseException, reason: str | None = None) -> None:
        """The join failed (either thread): out of the group, and a rejoin asked for, with
        ``reason`` when given."""
        # MEMBER_ID_REQUIRED is the first answer of every dynamic member's join (KIP-394)
        expected = isinstance(exc, BrokerError) and exc.code == ErrorCode.MEMBER_ID_REQUIRED
        with self._lock:
            if self.state is not ClassicMemberState.UNJOINED:
                self._transition(ClassicMemberState.UNJOINED, f"join failed: {exc}",
                                 logging.DEBUG if expected else logging.INFO)
            if reason is not None:
                self.rejoin_reason = reason
            elif self.rejoin_reason is None:
                self._member_id_retry = expected
                self.rejoin_reason = self.join_reason if expected else f"retrying after: {exc}"

    def mark_sync_sent(self) -> None:
        with self._lock:
            # the coordinator restarts this member's session when it answers the SyncGroup, so the
            # lease of the assignment that comes back runs from here
            self._sync_sent_at = self.clock.monotonic_ms()

    def on_sync_answer(self, error: int, sent: Generation) -> bool:
        """Apply a SyncGroup answer (either thread may read it); False if it is stale."""
        action = action_for(error, ApiKey.SYNC_GROUP)
        with self._lock:
            current = self.generation == sent and self.state is ClassicMemberState.COMPLETING_REBALANCE
            if action is Action.NONE and current:
                self._transition(ClassicMemberState.STABLE, f"received the assignment of generation {sent.generation_id}")
                self.heartbeat.joined(self._sync_sent_at)
                if self.keeps_partitions_while_rejoining:
                    self.heartbeat.follow_up(self.clock.monotonic_ms() + self.config.retry_backoff_ms)
            elif action is Action.RESET_MEMBER and self.generation == sent:
                self.generation = NO_GENERATION
            elif action is Action.RESET_GENERATION and self.generation == sent:
                self.generation = Generation(-1, self.generation.member_id)
        return current

    def unjoin(self, reason: str) -> None:
        """Out of the group until the next join (an assignment this member cannot use)."""
        with self._lock:
            self._transition(ClassicMemberState.UNJOINED, reason)
            self.rejoin_reason = self.rejoin_reason or reason

    def assignment_came_too_late(self) -> bool:
        """An assignment read only after its lease ended (its answer lay unread while the
        application did not poll) may already belong to others: rejoin instead of using it."""
        reason = "the assignment was read only after the session could have expired"
        with self._lock:
            if self.state is not ClassicMemberState.STABLE or not self.heartbeat.lease_expired(self.clock.monotonic_ms()):
                return False
            self._transition(ClassicMemberState.UNJOINED, reason)
            self.rejoin_reason = self.rejoin_reason or reason
            loss = self._lose(reason)
        log.warning("group %s: %s; rejoining", self.config.group_id, reason)
        # a cooperative member still holds its previous partitions: they may be others' now too
        self._drop(loss, reason)
        return True

    # -- heartbeats and the ownership lease ------------------------------------------------
    def heartbeat_enabled(self) -> bool:
        """Heartbeats run once the member has joined (COMPLETING_REBALANCE and STABLE), and also
        while a member of a generation rejoins (PREPARING_REBALANCE): answered
        REBALANCE_IN_PROGRESS, they prove it is still in the group, so a cooperative member keeps
        its partitions through a long join (Java does not heartbeat there).  They go over their
        own connection, so a JoinGroup the coordinator holds does not hold them up."""
        with self._lock:
            return self._heartbeat_enabled()

    def _heartbeat_enabled(self) -> bool:
        """Callers hold the lock."""
        if self.state is ClassicMemberState.PREPARING_REBALANCE:
            return self.generation.generation_id >= 0 and bool(self.generation.member_id)
        return self.state in (ClassicMemberState.COMPLETING_REBALANCE, ClassicMemberState.STABLE)

    def poll_heartbeat(self, now: int) -> None:
        """The application is polling (called on every turn of its poll loop)."""
        with self._lock:
            self.heartbeat.poll(now)

    def poll_timed_out(self, now: int) -> bool:
        """The application has not polled within max_poll_interval_ms."""
        with self._lock:
            return self.heartbeat.poll_timeout_expired(now)

    def send_heartbeat_if_due(self, now: int) -> RequestFuture[None] | None:
        """Send a heartbeat if one is due (either thread: the application's poll sends a due one
        too, as the heartbeat thread may be asleep until later).  Whether it is due and marking
        it sent are one locked step, so the two threads never both send it."""
        if self.coordinator_unknown():
            return None
        with self._lock:
            if not self._heartbeat_enabled() or not self.heartbeat.should_heartbeat(now):
                return None
            self.heartbeat.sent(now)
            generation = self.generation
        return self._send_heartbeat(generation, now)

    def time_to_next_heartbeat(self, now: int) -> int:
        with self._lock:
            return self.heartbeat.time_to_next_heartbeat(now)

    def time_to_poll_timeout(self, now: int) -> int:
        with self._lock:
            return self.heartbeat.time_to_poll_timeout(now)

    def time_to_lease_end(self, now: int) -> int | None:
        """Until the ownership lease ends (None when the member holds no lease)."""
        rejoining_owner = self.keeps_partitions_while_rejoining and self.ownership.owns_partitions()
        with self._lock:
            if self.state is not ClassicMemberState.STABLE and not rejoining_owner:
                return None
            return max(0, self.heartbeat.lease_deadline() - now)

    def _end_expired_lease(self, now: int, reason: str) -> tuple[int, bool]:
        """If the member holds partitions past its lease, end the lease: (the loss's number, 0 if
        none; was STABLE).

        A STABLE member goes UNJOINED and asks for a rejoin; member id and generation are kept:
        if the coordinator still has this member, the rejoin gets the same assignment back
        without a rebalance.  A cooperative member that is rejoining keeps its join going and
        only lets its partitions go (the caller drops them)."""
        rejoining_owner = self.keeps_partitions_while_rejoining and self.ownership.owns_partitions()
        with self._lock:
            if not self.heartbeat.lease_expired(now):
                return 0, False
            if self.state is ClassicMemberState.STABLE:
                self._transition(ClassicMemberState.UNJOINED, reason)
                self.rejoin_reason = self.rejoin_reason or reason
                return self._lose(reason), True
            return (self._lose(reason) if rejoining_owner else 0), False

    def check_lease(self, now: int) -> bool:
        """If the ownership lease ran out, give the partitions up now (and rejoin); True if it did.
        A loss the other thread decided and has not dropped yet is dropped here too.

        The lease ends before the coordinator can have expired the member or completed a
        rebalance without it (see Heartbeat), so at no instant do two members own a partition."""
        reason = (f"no heartbeat answered within the session timeout ({self.config.session_timeout_ms} ms) "
                  "or rejoined within the rebalance timeout; the partitions may belong to others now")
        loss, was_stable = self._end_expired_lease(now, reason)
        if not loss:
            # the other thread may have decided a loss (the lease, a fenced generation) and not
            # dropped it yet: this member then looks UNJOINED with nothing to end, and its join
            # would prepare as a revocation (a commit, on_partitions_revoked) what is a loss
            return self.drop_decided_loss()
        log.warning("group %s: %s", self.config.group_id, reason)
        self._drop(loss, reason)
        if was_stable:
            self.mark_coordinator_dead("the ownership lease ran out")
        return True

    def send_heartbeat(self) -> RequestFuture[None]:
        """Send a heartbeat now, due or not."""
        sent_at = self.clock.monotonic_ms()
        with self._lock:
            self.heartbeat.sent(sent_at)
            sent = self.generation
        return self._send_heartbeat(sent, sent_at)

    def _send_heartbeat(self, sent: Generation, sent_at: int) -> RequestFuture[None]:
        cfg = self.config

        def build(version: int) -> Any:
            return HeartbeatRequest(version=version, group_id=cfg.group_id, generation_id=sent.generation_id,
                                    member_id=sent.member_id, group_instance_id=cfg.group_instance_id)

        future = self.send_to_coordinator(HeartbeatRequest, HeartbeatResponse, build, heartbeat=True)
        future.add_errback(lambda exc: self._heartbeat_failed())
        handled: RequestFuture[None] = future.compose(lambda r, f: self._handle_heartbeat(r, f, sent, sent_at))
        return handled.add_errback(self.note_failure)

    def _heartbeat_failed(self) -> None:
        with self._lock:
            self.heartbeat.failed(self.clock.monotonic_ms())

    def _handle_heartbeat(self, response: Any, future: RequestFuture[None], sent: Generation, sent_at: int) -> None:
        now = self.clock.monotonic_ms()
        error = response.error_code
        action = action_for(error, ApiKey.HEARTBEAT)
        lost = 0
        with self._lock:
            current = self.generation == sent and self.state is not ClassicMemberState.PREPARING_REBALANCE
            if action is Action.NONE:
                self.heartbeat.received(now, sent_at, group_stable=True)
            elif action is Action.REJOIN:
                # still a member: the session goes on, and the member rejoins (Java ignores this
                # answer outside STABLE: the join under way is the rejoin)
                self.heartbeat.received(now, sent_at, group_stable=False)
                if current and self.state is ClassicMemberState.STABLE and self.rejoin_reason is None:
                    self.rejoin_reason = "the group is rebalancing"
            else:
                self.heartbeat.failed(now)
                if current and action in (Action.RESET_GENERATION, Action.RESET_MEMBER):
                    self._reset_generation(f"Heartbeat answered {error_name(error)}",
                                           keep_member_id=action is Action.RESET_GENERATION)
                    lost = self._lose(f"the coordinator answered a heartbeat with {error_name(error)}")
        if lost:
            self._drop(lost, f"the coordinator answered a heartbeat with {error_name(error)}")
        if action is Action.REDISCOVER:
            self.mark_coordinator_dead(f"Heartbeat answered {error_name(error)}")
        if action is Action.NONE:
            return future.success(None)
        if action in (Action.RETRY, Action.RAISE):
            log.warning("group %s: heartbeat failed with %s; retrying after %d ms", self.config.group_id,
                        error_name(error), self.config.retry_backoff_ms)
        future.failure(error_for(error, ApiKey.HEARTBEAT))

    # -- leaving -------------------------------------------------------------------------
    def maybe_leave_group(self, reason: str,
                          before_sending: Callable[[], None] | None = None) -> RequestFuture[None] | None:
        """Send LeaveGroup (dynamic members only) and forget the generation either way.

        ``before_sending`` runs once the generation is forgotten and before the LeaveGroup goes
        out: the poll timeout drops the partitions there, so that no other member can be given
        them while this one still holds them, and a join completing meanwhile on the application
        thread sees the reset generation before it can see the partitions gone."""
        with self._lock:
            left = self._forget_generation_to_leave(reason)
        return self._send_leave_group(left, reason, before_sending)

    def leave_if_poll_timed_out(self, now: int, before_sending: Callable[[], None]) -> tuple[bool, RequestFuture[None] | None]:
        """The heartbeat thread's poll-timeout step: if the member is STABLE and the application
        has not polled within max_poll_interval_ms, leave (as :meth:`maybe_leave_group`).  The
        check and the forgetting of the generation are one locked step: a poll() the
        application makes meanwhile either comes first (and the member stays) or after."""
        reason = "the application did not call poll() within max_poll_interval_ms"
        with self._lock:
            if self.state is not ClassicMemberState.STABLE or not self.heartbeat.poll_timeout_expired(now):
                return False, None
            left = self._forget_generation_to_leave(reason)
        log.warning("group %s: poll() was not called within max_poll_interval_ms (%d ms); leaving the group",
                    self.config.group_id, self.config.rebalance_timeout_ms)
        return True, self._send_leave_group(left, reason, before_sending)

    def _forget_generation_to_leave(self, reason: str) -> tuple[Generation, ClassicMemberState]:
        """Callers hold the lock: the generation and state the member leaves from."""
        left = self.generation, self.state
        self._reset_generation(f"leaving: {reason}")
        self.rejoin_reason = f"left the group ({reason})"
        return left

    def _send_leave_group(self, left: tuple[Generation, ClassicMemberState], reason: str,
                          before_sending: Callable[[], None] | None) -> RequestFuture[None] | None:
        generation, state = left
        if before_sending is not None:
            before_sending()
        if not (self.is_dynamic() and generation.member_id and state is not ClassicMemberState.UNJOINED):
            return None
        if self.coordinator_unknown():
            return None
        cfg = self.config
        log.info("group %s: member %s leaves the group (%s)", cfg.group_id, generation.member_id, reason)

        def build(version: int) -> Any:
            if version >= 3:
                return LeaveGroupRequest(version=version, group_id=cfg.group_id, members=[
                    LeaveGroupRequest.MemberIdentity(member_id=generation.member_id, group_instance_id=None,
                                                     reason=reason)])
            return LeaveGroupRequest(version=version, group_id=cfg.group_id, member_id=generation.member_id)

        future = self.send_to_coordinator(LeaveGroupRequest, LeaveGroupResponse, build)
        return future.compose(self._handle_leave)

    def _handle_leave(self, response: Any, future: RequestFuture[None]) -> None:
        """The member is gone either way: an error is only reported (Java logs it), and a
        coordinator that moved is looked up again by whoever needs it next."""
        errors = [response.error_code, *(m.error_code for m in getattr(response, "members", None) or ())]
        error = next((e for e in errors if e), 0)
        action = action_for(error, ApiKey.LEAVE_GROUP)
        if action is Action.NONE:
            return future.success(None)
        if action is Action.REDISCOVER:
            self.mark_coordinator_dead(f"LeaveGroup answered {error_name(error)}")
        future.failure(error_for(error, ApiKey.LEAVE_GROUP, "LeaveGroup"))
