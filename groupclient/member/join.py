"""The join sequence, driven by the application thread: JoinGroup, then the leader's assignment,
then SyncGroup, then the assignment applied (the Java client's ``joinGroupIfNeeded``).

``GroupJoin`` holds what only the application thread touches (the two futures of the join under
way, whether its partitions were prepared); every change to the member's shared state is a
locked step of :class:`~groupclient.member.group_member.GroupMember`.  Either thread may read the
JoinGroup and SyncGroup answers (their handlers only update the member); the assignor, the
listener and everything else of the consumer's run here, on the application thread, between
the steps.  Every handler carries the generation its request was sent in and drops stale answers;
every rejoin is requested with a reason.
"""

from __future__ import annotations

import logging
from typing import Any

from kafka.protocol.consumer.group import JoinGroupRequest, JoinGroupResponse, SyncGroupRequest, SyncGroupResponse

from ..clock import Timer
from ..error_codes import ErrorCode, error_name
from ..errors import FatalError, ProtocolError, RetriableError
from ..network.future import RequestFuture
from ..protocol.apis import ApiKey
from ..protocol.consumer_protocol import PROTOCOL_TYPE
from ..protocol.error_table import Action, action_for, error_for
from .group_member import GroupMember
from .states import ClassicMemberState
from .types import Generation, Joined, JoinedMember, RebalanceHooks

log = logging.getLogger("groupclient.member")

# JoinGroup/SyncGroup answers after which the member rejoins at once, with no backoff (Java's
# joinGroupIfNeeded does the same)
_REJOIN_AT_ONCE = frozenset({Action.RETRY_WITH_MEMBER_ID, Action.RESET_MEMBER, Action.RESET_GENERATION, Action.REJOIN})


class GroupJoin:
    """The application thread's way into the group: ``join_group_if_needed`` until STABLE."""

    def __init__(self, member: GroupMember, hooks: RebalanceHooks) -> None:
        self.member = member
        self.hooks = hooks
        self.client = member.client
        self.config = member.config
        # JoinGroup, then SyncGroup: two futures, so that the leader's assignor runs here, on the
        # application thread, never in a response handler that the heartbeat thread may run
        self._join_future: RequestFuture[Joined] | None = None
        self._sync_future: RequestFuture[bytes] | None = None
        self.prepared_for_join = False

    def needed_or_pending(self) -> bool:
        """A rejoin is needed, or a join future exists that join_group_if_needed has not consumed:
        its answer may have been read by another poll, and its assignment must still be applied."""
        return self._join_future is not None or self._sync_future is not None or self.member.rejoin_needed()

    def join_group_if_needed(self, timer: Timer) -> bool:
        """Rejoin until STABLE or the timer runs out; True when the member has an assignment."""
        member = self.member
        while self.needed_or_pending():
            if not member.ensure_coordinator_ready(timer):
                return False
            if not self.prepared_for_join:
                # give up partitions (commit, revoke) once per join, before the JoinGroup goes out
                if not self.hooks.on_join_prepare(member.current_generation(), timer):
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
            epoch = member.ownership.ownership_epoch()
            generation, state = member.generation_and_state()
            self.prepared_for_join = False
            if generation.generation_id < 0 or state is not ClassicMemberState.STABLE:
                # the heartbeat thread reset the generation after the SyncGroup answer was read
                # (a fenced heartbeat, a lost lease): the assignment may be void; join again, as
                # Java's joinGroupIfNeeded does ("modified by heartbeat thread")
                member.request_rejoin(f"the generation was reset (now {generation.generation_id}, {state.value}) "
                                      "before its assignment was applied")
                continue
            if member.assignment_came_too_late():
                continue
            try:
                if not self.hooks.on_join_complete(generation, syncing.value, epoch):
                    continue
            except ProtocolError as unusable:
                # an assignment this member cannot read: never sit in the group without one
                member.unjoin(f"the assignment was unusable: {unusable}")
                raise
        return True

    def _retry_now_or_later(self, failed: RequestFuture[Any], timer: Timer) -> bool:
        """A JoinGroup or SyncGroup failed: raise what the application must see; True to rejoin at
        once, False when the timer ran out during the backoff."""
        exc = failed.exception
        assert exc is not None
        if isinstance(exc, FatalError):  # the group refused this member for good, or a bug
            self.member.set_fatal(exc)
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
                self.member.on_join_failed(exc, f"the assignor failed: {exc!r}")
                return RequestFuture.failed_with(exc)
            log.info("group %s: leader of generation %d assigned %d members", self.config.group_id,
                     generation.generation_id, len(assignments))
        syncing = self._send_sync(generation, assignments)
        syncing.add_errback(lambda exc: self.member.on_join_failed(exc))
        return syncing

    def _initiate_join_group(self) -> RequestFuture[Joined]:
        if self._join_future is None:
            reason, level, sent = self.member.begin_join()
            self._join_future = self._send_join_group(reason, level, sent)
        return self._join_future

    def _send_join_group(self, reason: str, level: int, sent: Generation) -> RequestFuture[Joined]:
        cfg = self.config
        protocols = [JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m)
                     for n, m in self.hooks.protocols(sent)]

        def build(version: int) -> Any:
            return JoinGroupRequest(
                version=version, group_id=cfg.group_id, session_timeout_ms=cfg.session_timeout_ms,
                rebalance_timeout_ms=cfg.rebalance_timeout_ms, member_id=sent.member_id,
                group_instance_id=cfg.group_instance_id, protocol_type=PROTOCOL_TYPE, protocols=protocols,
                reason=reason)

        # the coordinator holds a JoinGroup for up to the rebalance timeout
        timeout = max(cfg.request_timeout_ms, cfg.rebalance_timeout_ms + 5000)
        log.log(level, "group %s: joining (%s)", cfg.group_id, reason)
        self.member.mark_join_sent()
        future = self.member.send_to_coordinator(JoinGroupRequest, JoinGroupResponse, build, timeout)
        assignors = ", ".join(p.name for p in protocols)
        joined: RequestFuture[Joined] = future.compose(lambda r, f: self._handle_join(r, f, sent, assignors))
        joined.add_errback(lambda exc: self.member.on_join_failed(exc))
        return joined

    def _handle_join(self, response: Any, future: RequestFuture[Joined], sent: Generation, assignors: str) -> None:
        """Bookkeeping only (either thread may read the answer); the assignor runs later, on the
        application thread."""
        error = response.error_code
        action = action_for(error, ApiKey.JOIN_GROUP)
        current = self.member.on_join_answer(error, response, sent)
        if not current and action is Action.NONE:
            return future.failure(RetriableError(ErrorCode.REBALANCE_IN_PROGRESS, "stale JoinGroup answer"))
        if action is Action.REDISCOVER:
            self.member.mark_coordinator_dead(f"JoinGroup answered {error_name(error)}")
        if action is not Action.NONE:
            cfg = self.config
            sent_settings = {"session_timeout_ms": cfg.session_timeout_ms, "assignors": assignors}
            return future.failure(error_for(error, ApiKey.JOIN_GROUP, f"JoinGroup of group {cfg.group_id!r}",
                                            sent_settings))
        members = [JoinedMember(m.member_id, m.group_instance_id, bytes(m.metadata)) for m in response.members]
        future.success(Joined(self.member.current_generation(), response.leader == response.member_id,
                              bool(response.skip_assignment), response.protocol_name, members))

    def _send_sync(self, sent: Generation, assignments: dict[str, bytes]) -> RequestFuture[bytes]:
        cfg = self.config
        entries = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in assignments.items()]

        def build(version: int) -> Any:
            return SyncGroupRequest(version=version, group_id=cfg.group_id, generation_id=sent.generation_id,
                                    member_id=sent.member_id, group_instance_id=cfg.group_instance_id,
                                    protocol_type=PROTOCOL_TYPE, protocol_name=sent.protocol_name,
                                    assignments=entries)

        self.member.mark_sync_sent()
        future = self.member.send_to_coordinator(SyncGroupRequest, SyncGroupResponse, build)
        return future.compose(lambda r, f: self._handle_sync(r, f, sent))

    def _handle_sync(self, response: Any, future: RequestFuture[bytes], sent: Generation) -> None:
        error = response.error_code
        action = action_for(error, ApiKey.SYNC_GROUP)
        current = self.member.on_sync_answer(error, sent)
        if action is Action.NONE and not current:
            return future.failure(RetriableError(ErrorCode.REBALANCE_IN_PROGRESS, "stale SyncGroup answer"))
        if action is Action.REDISCOVER:
            self.member.mark_coordinator_dead(f"SyncGroup answered {error_name(error)}")
        if action is not Action.NONE:
            return future.failure(error_for(error, ApiKey.SYNC_GROUP, f"SyncGroup of group {self.config.group_id!r}"))
        future.success(bytes(response.assignment))
