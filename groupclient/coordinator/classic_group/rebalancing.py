"""What moves a classic group through a rebalance on the node's timers, whichever request started
it: the delayed join (the initial delay of an Empty group, then every known member's rejoin or the
rebalance timeout), the SyncGroup deadline, members' session expiry, and removing a member.  Kafka
keeps these as its delayed operations (DelayedJoin, DelayedSync, DelayedHeartbeat) beside the
request handling; here the requests are handled in :mod:`.groups`, which calls in here.

Sans-IO: every entry point takes ``now``; nothing here is locked (the node's event loop thread runs
it all).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ...error_codes import ErrorCode
from ..config import CoordinatorConfig
from ..group_base.classic_api import JoinResult, SyncResult
from ..group_base.rebalance import CLASSIC, RebalanceCause, RebalanceHook
from ..group_base.timers import TimerQueue
from ..storage.group_store import GroupSnapshot
from .metadata import Group, Member
from .snapshots import snapshot_of
from .state import GroupState

log = logging.getLogger("groupclient.coordinator.group")

S = GroupState
E = ErrorCode
C = RebalanceCause


def join_result(group: Group, member: Member) -> JoinResult:
    """The JoinGroup answer of a member of the current generation: only the leader gets the members."""
    leader = group.is_leader(member.member_id)
    return JoinResult(
        E.NONE, member.member_id, group.generation_id, group.protocol_type,
        group.protocol_name, group.leader_id or "",
        group.current_member_metadata() if leader else (),
    )


class Rebalancer:
    """Rebalances, deadlines and removals of one node's classic groups (see the module's docstring)."""

    def __init__(self, config: CoordinatorConfig, timers: TimerQueue, put_group: Callable[[GroupSnapshot], None],
                 on_rebalance: RebalanceHook | None) -> None:
        """``put_group`` keeps a group's snapshot; ``on_rebalance`` is told of each new generation."""
        self.config = config
        self.timers = timers
        self._put_group = put_group
        self._on_rebalance = on_rebalance

    # -- starting a rebalance ------------------------------------------------------------
    def maybe_prepare(self, group: Group, now: int, reason: str, cause: RebalanceCause) -> None:
        """Start a rebalance if the group's state allows one."""
        if group.can_rebalance():
            self.prepare(group, now, reason, cause)

    def prepare(self, group: Group, now: int, reason: str, cause: RebalanceCause) -> None:
        """``reason`` is logged; ``cause``, its kind, is what the metrics count the rebalance under."""
        if group.is_in(S.COMPLETING_REBALANCE):
            self._propagate_sync_error(group, E.REBALANCE_IN_PROGRESS)
        self.timers.cancel(("sync", group.group_id))
        was_empty = group.is_in(S.EMPTY)
        group.transition_to(S.PREPARING_REBALANCE, reason)
        group.rebalance_cause = cause
        key = ("join", group.group_id)
        if was_empty:
            delay = self.config.group_initial_rebalance_delay_ms
            group.initial_join_remaining_ms = max(group.max_rebalance_timeout_ms() - delay, 0)
            self.timers.schedule(key, now + delay, lambda t: self._on_initial_join_expired(group, delay, t))
        else:
            group.initial_join_remaining_ms = None
            self.timers.schedule(key, now + group.max_rebalance_timeout_ms(),
                                 lambda t: self._complete_join(group, t))

    def _propagate_sync_error(self, group: Group, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
            member.complete_sync(SyncResult(error))

    # -- completing the join phase -------------------------------------------------------
    def _on_initial_join_expired(self, group: Group, delay: int, now: int) -> None:
        remaining = group.initial_join_remaining_ms or 0
        if group.new_member_added and remaining > 0:
            # new members keep arriving: wait again, but never past the rebalance timeout
            group.new_member_added = False
            next_delay = min(delay, remaining)
            group.initial_join_remaining_ms = max(remaining - next_delay, 0)
            self.timers.schedule(("join", group.group_id), now + next_delay,
                                 lambda t: self._on_initial_join_expired(group, delay, t))
        else:
            self._complete_join(group, now)

    def try_complete_join(self, group: Group, now: int) -> None:
        """DelayedJoin.tryComplete: finish early once every known member has rejoined."""
        if group.initial_join_remaining_ms is not None:
            return  # the initial delay only ends on its timer
        if group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined():
            self._complete_join(group, now)

    def _complete_join(self, group: Group, now: int) -> None:
        if not group.is_in(S.PREPARING_REBALANCE):
            return
        self.timers.cancel(("join", group.group_id))
        group.initial_join_remaining_ms = None
        group.new_member_added = False
        for member in group.not_yet_rejoined():
            if not member.is_static:
                log.info("group %s: removing member %s which did not rejoin in time",
                         group.group_id, member.member_id)
                self.remove_member(group, member)
        if group.members and not any(m.awaiting_join for m in group.members.values()):
            # only static members that have not rejoined remain: wait for them or their expiry
            self.timers.schedule(("join", group.group_id), now + group.max_rebalance_timeout_ms(),
                                 lambda t: self._complete_join(group, t))
            return
        if group.leader_id is None or not group.get(group.leader_id).awaiting_join:
            group.leader_id = next((m.member_id for m in group.members.values() if m.awaiting_join), None)
        group.init_next_generation()
        if self._on_rebalance is not None:
            self._on_rebalance(group.group_id, CLASSIC, group.rebalance_cause)
        if group.is_in(S.EMPTY):
            group.empty_since_ms = now  # offsets retention counts from here
            self.store(group)
            return
        for member in list(group.members.values()):
            member.complete_join(join_result(group, member))
            member.is_new = False
            self.arm_session(group, member, now)
            group.pending_sync_members.add(member.member_id)
        # members that never send SyncGroup are removed after the rebalance timeout
        self.timers.schedule(("sync", group.group_id), now + group.max_rebalance_timeout_ms(),
                             lambda t: self._expire_pending_sync(group, group.generation_id, t))

    def _expire_pending_sync(self, group: Group, generation: int, now: int) -> None:
        if generation != group.generation_id or not group.is_in(S.COMPLETING_REBALANCE, S.STABLE):
            return
        missing = [m for m in group.pending_sync_members if group.has(m)]
        if not missing:
            return
        log.info("group %s: members %s did not send SyncGroup in time", group.group_id, sorted(missing))
        for member_id in missing:
            self.remove_member(group, group.get(member_id))
        self.maybe_prepare(group, now, f"members {sorted(missing)} did not sync in time", C.SYNC_TIMEOUT)

    # -- sessions ------------------------------------------------------------------------
    def arm_session(self, group: Group, member: Member, now: int, timeout_ms: int | None = None) -> None:
        """Proof of life: the member is removed unless it shows another within its session
        timeout (or ``timeout_ms``)."""
        deadline = now + (member.session_timeout_ms if timeout_ms is None else timeout_ms)
        key = ("heartbeat", group.group_id, member.member_id)

        def expire(t: int) -> None:
            if group.get_or_none(member.member_id) is not member:
                return
            # nothing rescheduled this timer since it was armed: no proof of life in time
            member.heartbeat_satisfied = False
            if not member.has_satisfied_heartbeat():
                log.info("group %s: member %s has failed (no heartbeat for %d ms), removing it",
                         group.group_id, member.member_id, deadline - now)
                self.remove_member_and_update_group(group, member, t, f"member {member.member_id} expired",
                                                    C.MEMBER_EXPIRED)

        member.heartbeat_satisfied = True
        self.timers.schedule(key, deadline, expire)

    def expire_pending_member(self, group: Group, member_id: str, now: int) -> None:
        """A member id handed out by MEMBER_ID_REQUIRED that never joined with it goes."""
        if member_id in group.pending_members:
            log.info("group %s: pending member %s never joined, dropping it", group.group_id, member_id)
            group.pending_members.discard(member_id)
            if group.is_in(S.PREPARING_REBALANCE):
                self.try_complete_join(group, now)

    # -- removal -------------------------------------------------------------------------
    def remove_member(self, group: Group, member: Member) -> None:
        """The member goes; a JoinGroup or SyncGroup of it still waiting hears UNKNOWN_MEMBER_ID."""
        member.complete_join(JoinResult(E.UNKNOWN_MEMBER_ID, member.member_id))
        member.complete_sync(SyncResult(E.UNKNOWN_MEMBER_ID))
        self.timers.cancel(("heartbeat", group.group_id, member.member_id))
        group.remove(member.member_id)

    def remove_member_and_update_group(self, group: Group, member: Member, now: int, reason: str,
                                       cause: RebalanceCause) -> None:
        """The member goes, and the group rebalances (or finishes the rebalance it is in) without it."""
        self.remove_member(group, member)
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self.maybe_prepare(group, now, reason, cause)
        elif group.is_in(S.PREPARING_REBALANCE):
            self.try_complete_join(group, now)

    def cancel_timers(self, group: Group) -> None:
        """Every deadline of the group and its members (the group is going away)."""
        self.timers.cancel(("join", group.group_id))
        self.timers.cancel(("sync", group.group_id))
        for member_id in list(group.members) + list(group.pending_members):
            self.timers.cancel(("heartbeat", group.group_id, member_id))
            self.timers.cancel(("pending", group.group_id, member_id))

    def store(self, group: Group) -> None:
        """Keep the group's snapshot (its members and their assignments)."""
        self._put_group(snapshot_of(group))
