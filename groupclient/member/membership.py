"""Member-side group membership: find the coordinator, join, sync, heartbeat, leave.

The Java client's AbstractCoordinator, in the same steps: ``ensure_coordinator_ready`` ->
``join_group_if_needed`` -> JoinGroup, then (on the application thread) the leader's assignment,
then SyncGroup.  Every response handler carries the generation its request was sent in and drops
stale answers; every rejoin is requested with a reason.  The state, the coordinator, heartbeats,
the lease and leaving are in :mod:`member_core`.
"""

from __future__ import annotations

import logging
from typing import Any

from kafka.protocol.consumer.group import JoinGroupRequest, JoinGroupResponse, SyncGroupRequest, SyncGroupResponse

from ..clock import Timer
from ..errors import BrokerError, FatalGroupError, ProtocolError, RetriableError
from ..network.future import RequestFuture
from ..protocol.apis import ApiKey
from ..protocol.consumer_protocol import PROTOCOL_TYPE
from ..protocol.error_table import Action, action_for, error_for
from ..error_codes import ErrorCode, error_name
from .member_core import MemberCore, log
from .member_state import MemberState
from .types import NO_GENERATION, Generation, Joined, JoinedMember

# JoinGroup/SyncGroup answers after which the member rejoins at once, with no backoff (Java's
# joinGroupIfNeeded does the same)
_REJOIN_AT_ONCE = frozenset({Action.RETRY_WITH_MEMBER_ID, Action.RESET_MEMBER, Action.RESET_GENERATION, Action.REJOIN})


class GroupMembership(MemberCore):
    # -- joining -------------------------------------------------------------------------
    def join_group_if_needed(self, timer: Timer) -> bool:
        """Rejoin until STABLE or the timer runs out; True when the member has an assignment."""
        while self.rejoin_needed_or_pending():
            if not self.ensure_coordinator_ready(timer):
                return False
            if not self.prepared_for_join:
                # give up partitions (commit, revoke) once per join, before the JoinGroup goes out
                if not self.hooks.on_join_prepare(self.current_generation(), timer):
                    return False
                self.prepared_for_join = True
            if self._sync_future is None:
                joining = self._initiate_join_group()
                self.client.poll_until(joining, timer)
                if not joining.is_done():
                    return False
                self._join_future = None
                if joining.failed():
                    if self._retry_now_or_later(joining, timer):
                        continue
                    return False
                self._sync_future = self._assign_and_sync(joining.value)
            syncing = self._sync_future
            self.client.poll_until(syncing, timer)
            if not syncing.is_done():
                return False
            self._sync_future = None
            if syncing.failed():
                if self._retry_now_or_later(syncing, timer):
                    continue
                return False
            # read before the generation: a loss after it voids the assignment (on_join_complete)
            epoch = self.hooks.ownership_epoch()
            generation, state = self.generation_and_state()
            self.prepared_for_join = False
            if generation.generation_id < 0 or state is not MemberState.STABLE:
                # the heartbeat thread reset the generation after the SyncGroup answer was read
                # (a fenced heartbeat, a lost lease): the assignment may be void; join again, as
                # Java's joinGroupIfNeeded does ("modified by heartbeat thread")
                self.request_rejoin(f"the generation was reset (now {generation.generation_id}, {state.value}) "
                                    "before its assignment was applied")
                continue
            if self._assignment_came_too_late():
                continue
            try:
                if not self.hooks.on_join_complete(generation, syncing.value, epoch):
                    continue
            except ProtocolError as unusable:
                # an assignment this member cannot read: never sit in the group without one
                with self._lock:
                    self._transition(MemberState.UNJOINED, str(unusable))
                    self.rejoin_reason = self.rejoin_reason or f"the assignment was unusable: {unusable}"
                raise
        return True

    def _retry_now_or_later(self, failed: RequestFuture[Any], timer: Timer) -> bool:
        """A JoinGroup or SyncGroup failed: raise what the application must see; True to rejoin at
        once, False when the timer ran out during the backoff."""
        exc = failed.exception
        assert exc is not None
        if isinstance(exc, FatalGroupError):
            self.set_fatal(exc)
            raise exc
        if not isinstance(exc, RetriableError):
            raise exc  # raised once; the rejoin is still pending, so the next poll() retries
        if action_for(exc.code, ApiKey.JOIN_GROUP) in _REJOIN_AT_ONCE:
            return True
        self.client.sleep(self.config.retry_backoff_ms, timer)
        return not timer.expired()

    def _assign_and_sync(self, joined: Joined) -> RequestFuture[bytes]:
        """On the application thread: the leader runs the assignor; every member sends SyncGroup."""
        generation = joined.generation
        assignments: dict[str, bytes] = {}
        if joined.is_leader and joined.skip_assignment:
            self.hooks.watch_group(joined.protocol, joined.members)
        elif joined.is_leader:
            try:
                assignments = self.hooks.perform_assignment(generation.member_id, joined.protocol, joined.members)
            except Exception as exc:
                # a failing assignor must not wedge the group: surface it, rejoin on the next poll
                log.error("group %s: the assignor failed: %r", self.config.group_id, exc)
                self._on_join_failed(exc)
                with self._lock:
                    self.rejoin_reason = f"the assignor failed: {exc!r}"
                return RequestFuture.failed_with(exc)
            log.info("group %s: leader of generation %d assigned %d members", self.config.group_id,
                     generation.generation_id, len(assignments))
        syncing = self._send_sync(generation, assignments)
        syncing.add_errback(lambda exc: self._on_join_failed(exc))
        return syncing

    def _assignment_came_too_late(self) -> bool:
        """An assignment read only after its lease ended (its answer lay unread while the
        application did not poll) may already belong to others: rejoin instead of using it."""
        reason = "the assignment was read only after the session could have expired"
        with self._lock:
            if self.state is not MemberState.STABLE or not self.heartbeat.lease_expired(self.clock.monotonic_ms()):
                return False
            self._transition(MemberState.UNJOINED, reason)
            self.rejoin_reason = self.rejoin_reason or reason
        log.warning("group %s: %s; rejoining", self.config.group_id, reason)
        # a cooperative member still holds its previous partitions: they may be others' now too
        self.hooks.on_ownership_lost(reason)
        return True

    def _initiate_join_group(self) -> RequestFuture[Joined]:
        if self._join_future is None:
            with self._lock:
                # the second JoinGroup of KIP-394 (with the member id the coordinator handed out)
                # is the same join, not news
                retry, self._member_id_retry = self._member_id_retry, False
                level = logging.DEBUG if retry else logging.INFO
                reason = self.join_reason if retry else (self.rejoin_reason or "rejoin")
                self._transition(MemberState.PREPARING_REBALANCE, reason, level)
                self.rejoin_reason = None
                if not retry:
                    self.join_reason = reason
                    self.join_started_at = self.clock.monotonic_ms()
            self._join_future = self._send_join_group(reason, level)
        return self._join_future

    def _send_join_group(self, reason: str, level: int) -> RequestFuture[Joined]:
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
        log.log(level, "group %s: joining (%s)", cfg.group_id, reason)
        with self._lock:
            self._join_sent_at = self.clock.monotonic_ms()
        future = self.send_to_coordinator(JoinGroupRequest, JoinGroupResponse, build, timeout)
        joined: RequestFuture[Joined] = future.compose(lambda r, f: self._handle_join(r, f, sent))
        joined.add_errback(lambda exc: self._on_join_failed(exc))
        return joined

    def _on_join_failed(self, exc: BaseException) -> None:
        # MEMBER_ID_REQUIRED is the first answer of every dynamic member's join (KIP-394)
        expected = isinstance(exc, BrokerError) and exc.code == ErrorCode.MEMBER_ID_REQUIRED
        with self._lock:
            if self.state is not MemberState.UNJOINED:
                self._transition(MemberState.UNJOINED, f"join failed: {exc}",
                                 logging.DEBUG if expected else logging.INFO)
            if self.rejoin_reason is None:
                self._member_id_retry = expected
                self.rejoin_reason = self.join_reason if expected else f"retrying after: {exc}"

    def _handle_join(self, response: Any, future: RequestFuture[Joined], sent: Generation) -> None:
        """Bookkeeping only (either thread may read the answer); the assignor runs later, on the
        application thread."""
        error = response.error_code
        action = action_for(error, ApiKey.JOIN_GROUP)
        with self._lock:
            stale = self.generation != sent or self.state is not MemberState.PREPARING_REBALANCE
            if action is Action.NONE and not stale:
                self.generation = Generation(response.generation_id, response.member_id, response.protocol_name)
                # in the new generation: the coordinator restarted the session when it completed
                # the join, and any later rebalance begins after that
                self.heartbeat.joined(self._join_sent_at)
                self._transition(MemberState.COMPLETING_REBALANCE, f"joined generation {response.generation_id}")
            elif action is Action.RETRY_WITH_MEMBER_ID:
                self.generation = Generation(-1, response.member_id)
            elif action is Action.RESET_MEMBER or (action is Action.FATAL and error == ErrorCode.GROUP_MAX_SIZE_REACHED):
                self.generation = NO_GENERATION
            elif action is Action.RESET_GENERATION:
                self.generation = Generation(-1, self.generation.member_id)
        if stale and action is Action.NONE:
            return future.failure(RetriableError(ErrorCode.REBALANCE_IN_PROGRESS, "stale JoinGroup answer"))
        if action is Action.REDISCOVER:
            self.mark_coordinator_dead(f"JoinGroup answered {error_name(error)}")
        if action is not Action.NONE:
            return future.failure(error_for(error, ApiKey.JOIN_GROUP))
        members = [JoinedMember(m.member_id, m.group_instance_id, bytes(m.metadata)) for m in response.members]
        future.success(Joined(self.current_generation(), response.leader == response.member_id,
                               bool(response.skip_assignment), response.protocol_name, members))

    def _send_sync(self, sent: Generation, assignments: dict[str, bytes]) -> RequestFuture[bytes]:
        cfg = self.config
        entries = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in assignments.items()]

        def build(version: int) -> Any:
            return SyncGroupRequest(version=version, group_id=cfg.group_id, generation_id=sent.generation_id,
                                    member_id=sent.member_id, group_instance_id=cfg.group_instance_id,
                                    protocol_type=PROTOCOL_TYPE, protocol_name=sent.protocol_name,
                                    assignments=entries)

        with self._lock:
            # the coordinator restarts this member's session when it answers the SyncGroup, so the
            # lease of the assignment that comes back runs from here
            self._sync_sent_at = self.clock.monotonic_ms()
        future = self.send_to_coordinator(SyncGroupRequest, SyncGroupResponse, build)
        return future.compose(lambda r, f: self._handle_sync(r, f, sent))

    def _handle_sync(self, response: Any, future: RequestFuture[bytes], sent: Generation) -> None:
        error = response.error_code
        action = action_for(error, ApiKey.SYNC_GROUP)
        with self._lock:
            current = self.generation == sent and self.state is MemberState.COMPLETING_REBALANCE
            if action is Action.NONE and current:
                self._transition(MemberState.STABLE, f"received the assignment of generation {sent.generation_id}")
                self.heartbeat.joined(self._sync_sent_at)
                if self.keeps_partitions_while_rejoining:
                    self.heartbeat.follow_up(self.clock.monotonic_ms() + self.config.retry_backoff_ms)
            elif action is Action.RESET_MEMBER and self.generation == sent:
                self.generation = NO_GENERATION
            elif action is Action.RESET_GENERATION and self.generation == sent:
                self.generation = Generation(-1, self.generation.member_id)
        if action is Action.NONE and not current:
            return future.failure(RetriableError(ErrorCode.REBALANCE_IN_PROGRESS, "stale SyncGroup answer"))
        if action is Action.REDISCOVER:
            self.mark_coordinator_dead(f"SyncGroup answered {error_name(error)}")
        if action is not Action.NONE:
            return future.failure(error_for(error, ApiKey.SYNC_GROUP))
        future.success(bytes(response.assignment))

