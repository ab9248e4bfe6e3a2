"""Member-side group membership: find the coordinator, join, sync, heartbeat, leave.

The Java client's AbstractCoordinator, in the same steps: ``ensure_coordinator_ready`` ->
``join_group_if_needed`` -> ``initiate_join_group`` (JoinGroup, then the leader or follower path,
then SyncGroup, chained into one future).  Every response handler carries the generation its
request was sent in and drops stale answers; every rejoin is requested with a reason.

One lock guards the member's state; it is held only for bookkeeping, never across network calls,
hooks or user callbacks.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kafka.protocol.consumer.group import (
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    LeaveGroupResponse, SyncGroupRequest, SyncGroupResponse,
)
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse

from ..clock import Clock, Timer
from ..errors import DisconnectedError, FatalGroupError, NodeNotReadyError, RequestTimedOutError, RetriableError
from ..network.client import NetworkClient
from ..network.future import RequestFuture
from ..protocol.error_table import FATAL_HINTS, Action, action_for
from ..protocol.errors import ErrorCode
from ..protocol.consumer_protocol import PROTOCOL_TYPE
from .heartbeat import Heartbeat
from .member_state import MemberState, check_member_transition

log = logging.getLogger("groupclient.group")

COORDINATOR_ID_BASE = 2**31 - 1  # the coordinator's connection is kept apart from the broker's


@dataclass(frozen=True)
class Generation:
    generation_id: int = -1
    member_id: str = ""
    protocol_name: str | None = None


NO_GENERATION = Generation()


@dataclass(frozen=True)
class GroupConfig:
    group_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int  # max_poll_interval_ms
    heartbeat_interval_ms: int
    retry_backoff_ms: int
    request_timeout_ms: int


@dataclass(frozen=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


class GroupHooks(Protocol):
    """What the consumer adds to membership (Java's ConsumerCoordinator overrides)."""

    def protocols(self) -> list[tuple[str, bytes]]: ...

    def perform_assignment(self, leader_id: str, protocol: str, members: list[JoinedMember]) -> dict[str, bytes]: ...

    def on_join_prepare(self, generation: Generation) -> None: ...

    def on_join_complete(self, generation: Generation, assignment: bytes) -> None: ...


def broker_error(code: int, what: str) -> Exception:
    error = ErrorCode(code) if code in ErrorCode._value2member_map_ else ErrorCode.UNKNOWN_SERVER_ERROR
    if action_for(code) is Action.FATAL:
        return FatalGroupError(error, f"{what}: {FATAL_HINTS.get(error, 'the broker refused this member')}")
    return RetriableError(error, what)


class GroupMembership:
    def __init__(self, client: NetworkClient, clock: Clock, config: GroupConfig, hooks: GroupHooks) -> None:
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
        self._join_future: RequestFuture[bytes] | None = None
        self._find_future: RequestFuture[int] | None = None

    # -- state ---------------------------------------------------------------------------
    def _transition(self, target: MemberState, why: str) -> None:
        """Callers hold the lock."""
        if target is not self.state:
            check_member_transition(self.state, target)
            log.info("group %s member %s: %s -> %s (%s)", self.config.group_id, self.generation.member_id or "-",
                     self.state.value, target.value, why)
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
        return self._join_future is not None or self.rejoin_needed()

    def is_dynamic(self) -> bool:
        return self.config.group_instance_id is None

    def _reset_generation(self, reason: str, keep_member_id: bool = False) -> None:
        """Callers hold the lock."""
        self._transition(MemberState.UNJOINED, reason)
        self.generation = Generation(-1, self.generation.member_id if keep_member_id else "")
        if self.rejoin_reason is None:
            self.rejoin_reason = reason

    def reset_generation_if(self, sent: Generation, reason: str, keep_member_id: bool) -> None:
        """Forget the generation if it is still the one a request was sent in (stale answers change nothing)."""
        with self._lock:
            if self.generation == sent:
                self._reset_generation(reason, keep_member_id)

    def is_stable(self) -> bool:
        with self._lock:
            return self.state is MemberState.STABLE

    def set_fatal(self, error: BaseException) -> None:
        """Keep the first fatal error for poll() to raise (called from any thread)."""
        with self._lock:
            if self.fatal_error is None:
                self.fatal_error = error

    def current_generation(self) -> Generation:
        with self._lock:
            return self.generation

    def generation_and_state(self) -> tuple[Generation, MemberState]:
        with self._lock:
            return self.generation, self.state

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

    def ensure_coordinator_ready(self, timer: Timer) -> bool:
        """Find the coordinator and connect to it, within the timer; False if it ran out."""
        while self.coordinator_unknown():
            future = self._lookup_coordinator()
            self.client.poll_until(future, timer)
            if not future.is_done():
                return False
            if future.failed():
                if not future.retriable():
                    assert future.exception is not None
                    raise future.exception
                self.client.metadata.request_update()
                self.client.sleep(self.config.retry_backoff_ms, timer)
            if timer.expired():
                return not self.coordinator_unknown()
        return True

    def _lookup_coordinator(self) -> RequestFuture[int]:
        if self._find_future is not None and not self._find_future.is_done():
            return self._find_future
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
            return future.failure(broker_error(error, "FindCoordinator"))
        connection_id = COORDINATOR_ID_BASE - node_id
        self.client.add_node(connection_id, host, port)
        with self._lock:
            self.coordinator_id = connection_id
        log.info("group %s: coordinator is node %d at %s:%d", self.config.group_id, node_id, host, port)
        self.client.ready(connection_id)
        self.heartbeat.reset_timeouts(self.clock.monotonic_ms())
        future.success(connection_id)

    def send_to_coordinator(self, request_cls: Any, response_cls: Any, build: Callable[[int], Any],
                             timeout_ms: int | None = None) -> RequestFuture[Any]:
        with self._lock:
            coordinator = self.coordinator_id
        if coordinator is None:
            return RequestFuture.failed_with(RetriableError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no coordinator"))
        if not self.client.ready(coordinator):
            return RequestFuture.failed_with(NodeNotReadyError("the coordinator is not connected yet"))
        future = self.client.send(coordinator, request_cls, response_cls, build, timeout_ms)

        def on_failure(exc: BaseException) -> None:
            if isinstance(exc, (DisconnectedError, RequestTimedOutError)):
                self.mark_coordinator_dead(str(exc))

        future.add_errback(on_failure)
        return future

    # -- joining -------------------------------------------------------------------------
    def join_group_if_needed(self, timer: Timer) -> bool:
        """Rejoin until STABLE or the timer runs out; True when the member has an assignment."""
        while self.rejoin_needed_or_pending():
            if not self.ensure_coordinator_ready(timer):
                return False
            if not self.prepared_for_join:
                # give up partitions (commit, revoke) once per join, before the JoinGroup goes out
                self.hooks.on_join_prepare(self.current_generation())
                self.prepared_for_join = True
            future = self._initiate_join_group()
            self.client.poll_until(future, timer)
            if not future.is_done():
                return False
            self._join_future = None
            if future.succeeded():
                generation = self.current_generation()
                self.prepared_for_join = False
                self.hooks.on_join_complete(generation, future.value)
                continue
            exc = future.exception
            assert exc is not None
            if not future.retriable() and not isinstance(exc, RetriableError):
                raise exc
            self.client.sleep(self.config.retry_backoff_ms, timer)
            if timer.expired():
                return False
        return True

    def _initiate_join_group(self) -> RequestFuture[bytes]:
        if self._join_future is None:
            with self._lock:
                self._transition(MemberState.PREPARING_REBALANCE, self.rejoin_reason or "rejoin")
                reason, self.rejoin_reason = self.rejoin_reason, None
            self._join_future = self._send_join_group(reason or "rejoin")
        return self._join_future

    def _send_join_group(self, reason: str) -> RequestFuture[bytes]:
        sent = self.current_generation()
        cfg = self.config
        protocols = [JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m) for n, m in self.hooks.protocols()]

        def build(version: int) -> Any:
            return JoinGroupRequest(
                version=version, group_id=cfg.group_id, session_timeout_ms=cfg.session_timeout_ms,
                rebalance_timeout_ms=cfg.rebalance_timeout_ms, member_id=sent.member_id,
                group_instance_id=cfg.group_instance_id, protocol_type=PROTOCOL_TYPE, protocols=protocols,
                reason=reason)

        # the coordinator holds a JoinGroup for up to the rebalance timeout
        timeout = max(cfg.request_timeout_ms, cfg.rebalance_timeout_ms + 5000)
        log.info("group %s: joining (%s)", cfg.group_id, reason)
        future = self.send_to_coordinator(JoinGroupRequest, JoinGroupResponse, build, timeout)
        joined: RequestFuture[bytes] = future.compose(lambda r, f: self._handle_join(r, f, sent))
        joined.add_errback(lambda exc: self._on_join_failed(exc))
        return joined

    def _on_join_failed(self, exc: BaseException) -> None:
        with self._lock:
            if self.state is not MemberState.UNJOINED:
                self._transition(MemberState.UNJOINED, f"join failed: {exc}")
            if self.rejoin_reason is None:
                self.rejoin_reason = f"retrying after: {exc}"

    def _handle_join(self, response: Any, future: RequestFuture[bytes], sent: Generation) -> None:
        error = response.error_code
        action = action_for(error)
        with self._lock:
            stale = self.generation != sent or self.state is not MemberState.PREPARING_REBALANCE
            if action is Action.NONE and not stale:
                self.generation = Generation(response.generation_id, response.member_id, response.protocol_name)
                self._transition(MemberState.COMPLETING_REBALANCE, f"joined generation {response.generation_id}")
            elif action is Action.RETRY_WITH_MEMBER_ID:
                self.generation = Generation(-1, response.member_id)
            elif action is Action.RESET_MEMBER:
                self.generation = NO_GENERATION
            elif action is Action.RESET_GENERATION:
                self.generation = Generation(-1, self.generation.member_id)
        if stale and action is Action.NONE:
            return future.failure(RetriableError(ErrorCode.REBALANCE_IN_PROGRESS, "stale JoinGroup answer"))
        if action is Action.REDISCOVER:
            self.mark_coordinator_dead(f"JoinGroup answered {ErrorCode(error).name}")
        if action is not Action.NONE:
            return future.failure(broker_error(error, "JoinGroup"))
        generation = self.current_generation()
        if response.leader == response.member_id and not response.skip_assignment:
            members = [JoinedMember(m.member_id, m.group_instance_id, bytes(m.metadata)) for m in response.members]
            try:
                assignments = self.hooks.perform_assignment(response.leader, response.protocol_name, members)
            except Exception as exc:
                # a failing assignor must not wedge the group: surface it, rejoin on the next poll
                log.error("group %s: the assignor failed: %r", self.config.group_id, exc)
                with self._lock:
                    self.rejoin_reason = self.rejoin_reason or f"the assignor failed: {exc!r}"
                return future.failure(exc)
            log.info("group %s: leader of generation %d assigned %d members", self.config.group_id,
                     generation.generation_id, len(assignments))
        else:
            assignments = {}
        self._send_sync(generation, assignments).chain(future)

    def _send_sync(self, sent: Generation, assignments: dict[str, bytes]) -> RequestFuture[bytes]:
        cfg = self.config
        entries = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in assignments.items()]

        def build(version: int) -> Any:
            return SyncGroupRequest(version=version, group_id=cfg.group_id, generation_id=sent.generation_id,
                                    member_id=sent.member_id, group_instance_id=cfg.group_instance_id,
                                    protocol_type=PROTOCOL_TYPE, protocol_name=sent.protocol_name,
                                    assignments=entries)

        future = self.send_to_coordinator(SyncGroupRequest, SyncGroupResponse, build)
        return future.compose(lambda r, f: self._handle_sync(r, f, sent))

    def _handle_sync(self, response: Any, future: RequestFuture[bytes], sent: Generation) -> None:
        error = response.error_code
        action = action_for(error)
        with self._lock:
            current = self.generation == sent and self.state is MemberState.COMPLETING_REBALANCE
            if action is Action.NONE and current:
                self._transition(MemberState.STABLE, f"received the assignment of generation {sent.generation_id}")
                self.heartbeat.reset_timeouts(self.clock.monotonic_ms())
            elif action in (Action.RESET_MEMBER,) and self.generation == sent:
                self.generation = NO_GENERATION
            elif action is Action.RESET_GENERATION and self.generation == sent:
                self.generation = Generation(-1, self.generation.member_id)
        if action is Action.NONE and not current:
            return future.failure(RetriableError(ErrorCode.REBALANCE_IN_PROGRESS, "stale SyncGroup answer"))
        if action is Action.REDISCOVER:
            self.mark_coordinator_dead(f"SyncGroup answered {ErrorCode(error).name}")
        if action is not Action.NONE:
            return future.failure(broker_error(error, "SyncGroup"))
        future.success(bytes(response.assignment))

    # -- heartbeats ----------------------------------------------------------------------
    def send_heartbeat(self) -> RequestFuture[None]:
        sent = self.current_generation()
        cfg = self.config
        self.heartbeat.sent(self.clock.monotonic_ms())

        def build(version: int) -> Any:
            return HeartbeatRequest(version=version, group_id=cfg.group_id, generation_id=sent.generation_id,
                                    member_id=sent.member_id, group_instance_id=cfg.group_instance_id)

        future = self.send_to_coordinator(HeartbeatRequest, HeartbeatResponse, build)
        future.add_errback(lambda exc: self.heartbeat.failed(self.clock.monotonic_ms()))
        return future.compose(lambda r, f: self._handle_heartbeat(r, f, sent))

    def _handle_heartbeat(self, response: Any, future: RequestFuture[None], sent: Generation) -> None:
        now = self.clock.monotonic_ms()
        error = response.error_code
        action = action_for(error)
        if action is Action.NONE:
            self.heartbeat.received(now)
            return future.success(None)
        self.heartbeat.failed(now)
        with self._lock:
            current = self.generation == sent
            if current and action is Action.REJOIN and self.rejoin_reason is None:
                self.rejoin_reason = "the group is rebalancing"
            elif current and action is Action.RESET_GENERATION:
                self._reset_generation("the heartbeat's generation is stale", keep_member_id=True)
            elif current and action is Action.RESET_MEMBER:
                self._reset_generation("the coordinator does not know this member")
            elif action is Action.FATAL:
                self.fatal_error = broker_error(error, "Heartbeat")
        if action is Action.REDISCOVER:
            self.mark_coordinator_dead(f"Heartbeat answered {ErrorCode(error).name}")
        future.failure(broker_error(error, "Heartbeat"))

    # -- leaving -------------------------------------------------------------------------
    def maybe_leave_group(self, reason: str) -> RequestFuture[None] | None:
        """Send LeaveGroup (dynamic members only) and forget the generation either way."""
        with self._lock:
            generation, state = self.generation, self.state
            self._reset_generation(f"leaving: {reason}")
            self.rejoin_reason = f"left the group ({reason})"
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
