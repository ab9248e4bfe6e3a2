"""The member's core: its state, generation and coordinator, heartbeats, the ownership lease and
leaving (the Java client's AbstractCoordinator without the join, which is in membership.py).

One lock guards the member's state and its :class:`Heartbeat` timers; it is held only for
bookkeeping, never across network calls, hooks or user callbacks.  Both the application thread
(joins, commits) and the heartbeat thread (heartbeats, coordinator lookups, the ownership lease)
run the handlers here; see docs/design.md.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kafka.protocol.consumer.group import HeartbeatRequest, HeartbeatResponse, LeaveGroupRequest, LeaveGroupResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse

from ..clock import Clock, Timer
from ..errors import DisconnectedError, FatalGroupError, NodeNotReadyError, RequestTimedOutError, RetriableError
from ..network.future import RequestFuture
from ..network.transport import Transport
from ..protocol.apis import ApiKey
from ..protocol.error_table import Action, action_for, error_for
from ..error_codes import ErrorCode, error_name
from .heartbeat import Heartbeat
from .member_state import MemberState, check_member_transition
from .types import (
    COORDINATOR_ID_BASE, HEARTBEAT_ID_BASE, NO_GENERATION, Generation, GroupConfig, GroupHooks, Joined,
)

log = logging.getLogger("groupclient.member")


class MemberCore:
    def __init__(self, client: Transport, clock: Clock, config: GroupConfig, hooks: GroupHooks) -> None:
        self.client = client
        self.clock = clock
        self.config = config
        self.hooks = hooks
        self._lock = threading.Lock()
        self.state = MemberState.UNJOINED
        self.generation = NO_GENERATION
        self.coordinator_id: int | None = None
        self.rejoin_reason: str | None = "initial join"
        self.heartbeat = Heartbeat(config.session_timeout_ms, config.heartbeat_interval_ms,
                                   config.rebalance_timeout_ms, config.retry_backoff_ms)
        self.fatal_error: BaseException | None = None
        self.prepared_for_join = False
        # JoinGroup, then SyncGroup: two futures, so that the leader's assignor runs on the
        # application thread (in join_group_if_needed), never in a response handler that the
        # heartbeat thread may run
        self._join_future: RequestFuture[Joined] | None = None
        self._sync_future: RequestFuture[bytes] | None = None
        self._find_future: RequestFuture[int] | None = None
        self._sync_sent_at = 0
        self._join_sent_at = 0
        # what started the current rebalance, and when its first JoinGroup went out: the
        # rebalance events report them (a MEMBER_ID_REQUIRED round trip is part of the same join)
        self.join_reason = "initial join"
        self.join_started_at = 0
        self._member_id_retry = False
        # COOPERATIVE members keep their partitions while rejoining (KIP-429), so their lease
        # runs in every state, not only while STABLE; set by the consumer
        self.keeps_partitions_while_rejoining = False

    # -- state ---------------------------------------------------------------------------
    def _transition(self, target: MemberState, why: str, level: int = logging.INFO) -> None:
        """Callers hold the lock."""
        if target is not self.state:
            check_member_transition(self.state, target)
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
            return self.rejoin_reason is not None or self.state is not MemberState.STABLE

    def rejoin_needed_or_pending(self) -> bool:
        """A rejoin is needed, or a join future exists that join_group_if_needed has not consumed:
        its answer may have been read by another poll, and its assignment must still be applied."""
        return self._join_future is not None or self._sync_future is not None or self.rejoin_needed()

    def is_dynamic(self) -> bool:
        return self.config.group_instance_id is None

    def _reset_generation(self, reason: str, keep_member_id: bool = False) -> None:
        """Callers hold the lock."""
        self._transition(MemberState.UNJOINED, reason)
        self.generation = Generation(-1, self.generation.member_id if keep_member_id else "")
        if self.rejoin_reason is None:
            self.rejoin_reason = reason

    def reset_generation_if(self, sent: Generation, reason: str, keep_member_id: bool) -> None:
        """Forget the generation if it is still the one a request was sent in (stale answers change
        nothing); the group has moved on without this member, so its partitions are lost now."""
        with self._lock:
            reset = self.generation == sent
            if reset:
                self._reset_generation(reason, keep_member_id)
        if reset:
            self.hooks.on_ownership_lost(reason)

    def is_stable(self) -> bool:
        with self._lock:
            return self.state is MemberState.STABLE

    def set_fatal(self, error: BaseException) -> None:
        """Keep the first fatal error for poll() to raise (called from any thread)."""
        with self._lock:
            if self.fatal_error is None:
                self.fatal_error = error

    def rebalance_timing(self) -> tuple[str, int, int]:
        """The current join's reason, when its first JoinGroup and its SyncGroup were sent."""
        with self._lock:
            return self.join_reason, self.join_started_at, self._sync_sent_at

    def current_generation(self) -> Generation:
        with self._lock:
            return self.generation

    def generation_and_state(self) -> tuple[Generation, MemberState]:
        with self._lock:
            return self.generation, self.state

    def rebalance_in_progress(self) -> bool:
        with self._lock:
            return self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE)

    def generation_if_stable(self) -> Generation | None:
        with self._lock:
            return self.generation if self.state is MemberState.STABLE else None

    # -- the coordinator -----------------------------------------------------------------
    def coordinator_unknown(self) -> bool:
        with self._lock:
            coordinator = self.coordinator_id
        if coordinator is None:
            return True
        if self.client.connection_failed(coordinator):
            self.mark_coordinator_dead("the connection to the coordinator failed")
            return True
        return False

    def mark_coordinator_dead(self, reason: str) -> None:
        with self._lock:
            coordinator, self.coordinator_id = self.coordinator_id, None
        if coordinator is not None:
            log.info("group %s: coordinator %d is unavailable (%s); rediscovering", self.config.group_id,
                     COORDINATOR_ID_BASE - coordinator, reason)
            self.client.disconnect(coordinator)
            self.client.disconnect(_heartbeat_connection(coordinator))

    def ensure_coordinator_ready(self, timer: Timer) -> bool:
        """Find the coordinator and connect to it, within the timer; False if it ran out.

        Connected, not only known, as Java's ensureCoordinatorReady: a JoinGroup sent before the
        connection is up would only fail and be retried after a backoff."""
        while True:
            if not self._find_coordinator(timer):
                return False
            with self._lock:
                coordinator = self.coordinator_id
            if coordinator is None:
                continue
            if self.client.ready(coordinator):
                return True
            if timer.expired():
                return False
            # connecting (or backing off): a connect or ApiVersions event ends the wait early
            self.client.poll_until(None, Timer(self.clock, min(timer.remaining_ms(), 100)))

    def _find_coordinator(self, timer: Timer) -> bool:
        while self.coordinator_unknown():
            future = self.lookup_coordinator()
            self.client.poll_until(future, timer)
            if not future.is_done():
                return False
            if future.failed():
                exc = future.exception
                assert exc is not None
                if not isinstance(exc, RetriableError):
                    if isinstance(exc, FatalGroupError):
                        self.set_fatal(exc)
                    raise exc
                self.client.metadata.request_update()
                self.client.sleep(self.config.retry_backoff_ms, timer)
            if timer.expired():
                return not self.coordinator_unknown()
        return True

    def lookup_coordinator(self) -> RequestFuture[int]:
        """Send FindCoordinator, or return the one in flight (either thread may call this)."""
        find = self._find_future
        if find is not None and not find.is_done():
            return find
        node = self.client.least_loaded_node()
        if node is None:
            return RequestFuture.failed_with(NodeNotReadyError("no broker is available"))
        if not self.client.ready(node):
            return RequestFuture.failed_with(NodeNotReadyError(f"node {node} is not connected yet"))
        group_id = self.config.group_id

        def build(version: int) -> Any:
            if version >= 4:
                return FindCoordinatorRequest(version=version, key_type=0, coordinator_keys=[group_id])
            return FindCoordinatorRequest(version=version, key=group_id, key_type=0)

        future = self.client.send(node, FindCoordinatorRequest, FindCoordinatorResponse, build)
        self._find_future = future.compose(self._handle_find_coordinator)
        return self._find_future

    def _handle_find_coordinator(self, response: Any, future: RequestFuture[int]) -> None:
        if response.version >= 4:
            found = response.coordinators[0]
            error, node_id, host, port = found.error_code, found.node_id, found.host, found.port
        else:
            error, node_id, host, port = response.error_code, response.node_id, response.host, response.port
        if error:
            return future.failure(error_for(error, ApiKey.FIND_COORDINATOR))
        connection_id = COORDINATOR_ID_BASE - node_id
        self.client.add_node(connection_id, host, port)
        self.client.add_node(_heartbeat_connection(connection_id), host, port)
        with self._lock:
            self.coordinator_id = connection_id
        log.info("group %s: coordinator is node %d at %s:%d", self.config.group_id, node_id, host, port)
        self.client.ready(connection_id)
        self.client.ready(_heartbeat_connection(connection_id))
        future.success(connection_id)

    def send_to_coordinator(self, request_cls: Any, response_cls: Any, build: Callable[[int], Any],
                             timeout_ms: int | None = None, heartbeat: bool = False) -> RequestFuture[Any]:
        with self._lock:
            coordinator = self.coordinator_id
        if coordinator is None:
            return RequestFuture.failed_with(RetriableError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no coordinator"))
        if heartbeat:
            coordinator = _heartbeat_connection(coordinator)
        if not self.client.ready(coordinator):
            return RequestFuture.failed_with(NodeNotReadyError("the coordinator is not connected yet"))
        future = self.client.send(coordinator, request_cls, response_cls, build, timeout_ms)

        def on_failure(exc: BaseException) -> None:
            if isinstance(exc, (DisconnectedError, RequestTimedOutError)):
                self.mark_coordinator_dead(str(exc))

        future.add_errback(on_failure)
        return future

    def _end_expired_lease(self, now: int, reason: str) -> bool:
        """If the member holds partitions past its lease, end the lease; True if so.

        A STABLE member goes UNJOINED and asks for a rejoin; member id and generation are kept:
        if the coordinator still has this member, the rejoin gets the same assignment back
        without a rebalance.  A cooperative member that is rejoining keeps its join going and
        only lets its partitions go (the caller drops them)."""
        rejoining_owner = self.keeps_partitions_while_rejoining and self.hooks.owns_partitions()
        with self._lock:
            if not self.heartbeat.lease_expired(now):
                return False
            if self.state is MemberState.STABLE:
                self._transition(MemberState.UNJOINED, reason)
                self.rejoin_reason = self.rejoin_reason or reason
                return True
            return rejoining_owner
    # -- heartbeats and the ownership lease ------------------------------------------------
    def heartbeat_enabled(self) -> bool:
        """Heartbeats run once the member has joined (COMPLETING_REBALANCE and STABLE), and also
        while a member of a generation rejoins (PREPARING_REBALANCE): answered
        REBALANCE_IN_PROGRESS, they prove it is still in the group, so a cooperative member keeps
        its partitions through a long join (Java does not heartbeat there).  They go over their
        own connection, so a JoinGroup the coordinator holds does not hold them up."""
        with self._lock:
            if self.state is MemberState.PREPARING_REBALANCE:
                return self.generation.generation_id >= 0 and bool(self.generation.member_id)
            return self.state in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE)

    def poll_heartbeat(self, now: int) -> None:
        """The application is polling (called on every turn of its poll loop)."""
        with self._lock:
            self.heartbeat.poll(now)

    def send_heartbeat_if_due(self, now: int) -> None:
        """The application thread sends a due heartbeat too (the heartbeat thread may be asleep
        until a later one); a rare double send is harmless."""
        if self.heartbeat_enabled() and not self.coordinator_unknown() and self.should_heartbeat(now):
            self.send_heartbeat()

    def time_to_next_heartbeat(self, now: int) -> int:
        with self._lock:
            return self.heartbeat.time_to_next_heartbeat(now)

    def should_heartbeat(self, now: int) -> bool:
        with self._lock:
            return self.heartbeat.should_heartbeat(now)

    def poll_timeout_expired(self, now: int) -> bool:
        with self._lock:
            return self.heartbeat.poll_timeout_expired(now)

    def time_to_poll_timeout(self, now: int) -> int:
        with self._lock:
            return self.heartbeat.time_to_poll_timeout(now)

    def time_to_lease_end(self, now: int) -> int | None:
        """Until the ownership lease ends (None when the member holds no lease)."""
        rejoining_owner = self.keeps_partitions_while_rejoining and self.hooks.owns_partitions()
        with self._lock:
            if self.state is not MemberState.STABLE and not rejoining_owner:
                return None
            return max(0, self.heartbeat.lease_deadline() - now)

    def check_lease(self, now: int) -> bool:
        """If the ownership lease ran out, give the partitions up now (and rejoin); True if it did.

        The lease ends before the coordinator can have expired the member or completed a
        rebalance without it (see Heartbeat), so at no instant do two members own a partition."""
        reason = (f"no heartbeat answered within the session timeout ({self.config.session_timeout_ms} ms) "
                  "or rejoined within the rebalance timeout; the partitions may belong to others now")
        was_stable = self.is_stable()
        if not self._end_expired_lease(now, reason):
            return False
        log.warning("group %s: %s", self.config.group_id, reason)
        self.hooks.on_ownership_lost(reason)
        if was_stable:
            self.mark_coordinator_dead("the ownership lease ran out")
        return True

    def send_heartbeat(self) -> RequestFuture[None]:
        sent = self.current_generation()
        cfg = self.config
        sent_at = self.clock.monotonic_ms()
        with self._lock:
            self.heartbeat.sent(sent_at)

        def build(version: int) -> Any:
            return HeartbeatRequest(version=version, group_id=cfg.group_id, generation_id=sent.generation_id,
                                    member_id=sent.member_id, group_instance_id=cfg.group_instance_id)

        future = self.send_to_coordinator(HeartbeatRequest, HeartbeatResponse, build, heartbeat=True)
        future.add_errback(lambda exc: self._heartbeat_failed())
        return future.compose(lambda r, f: self._handle_heartbeat(r, f, sent, sent_at))

    def _heartbeat_failed(self) -> None:
        with self._lock:
            self.heartbeat.failed(self.clock.monotonic_ms())

    def _handle_heartbeat(self, response: Any, future: RequestFuture[None], sent: Generation, sent_at: int) -> None:
        now = self.clock.monotonic_ms()
        error = response.error_code
        action = action_for(error, ApiKey.HEARTBEAT)
        lost = False
        with self._lock:
            current = self.generation == sent and self.state is not MemberState.PREPARING_REBALANCE
            if action is Action.NONE:
                self.heartbeat.received(now, sent_at, group_stable=True)
            elif action is Action.REJOIN:
                # still a member: the session goes on, and the member rejoins (Java ignores this
                # answer outside STABLE: the join under way is the rejoin)
                self.heartbeat.received(now, sent_at, group_stable=False)
                if current and self.state is MemberState.STABLE and self.rejoin_reason is None:
                    self.rejoin_reason = "the group is rebalancing"
            else:
                self.heartbeat.failed(now)
                if current and action in (Action.RESET_GENERATION, Action.RESET_MEMBER):
                    self._reset_generation(f"Heartbeat answered {error_name(error)}",
                                           keep_member_id=action is Action.RESET_GENERATION)
                    lost = True
                elif action is Action.FATAL and self.fatal_error is None:
                    self.fatal_error = error_for(error, ApiKey.HEARTBEAT)
        if lost:
            self.hooks.on_ownership_lost(f"the coordinator answered a heartbeat with {error_name(error)}")
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
            generation, state = self.generation, self.state
            self._reset_generation(f"leaving: {reason}")
            self.rejoin_reason = f"left the group ({reason})"
        if before_sending is not None:
            before_sending()
        if not (self.is_dynamic() and generation.member_id and state is not MemberState.UNJOINED):
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
        return future.compose(lambda r, f: f.success(None))


def _heartbeat_connection(coordinator_connection: int) -> int:
    return HEARTBEAT_ID_BASE - (COORDINATOR_ID_BASE - coordinator_connection)
