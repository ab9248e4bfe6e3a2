"""One node's classic groups: JoinGroup, SyncGroup, Heartbeat and LeaveGroup as Kafka's
``GroupCoordinator`` handles them (see docs/coordinator.md for the differences), and the groups
loaded, unloaded, retired and adopted as the group coordinator (``group/coordinator.py``) says.

What a request starts, :mod:`.rebalancing` carries on on the node's timers.  The checks every group
API starts with, and whether an id names a consumer group instead, are the group coordinator's:
the entry points here are for a classic group's id that this node coordinates.

Sans-IO: no sockets, no clock.  Every entry point takes ``now`` (monotonic ms); responses that
must wait for a rebalance are delivered through the callback the caller passed in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from ...error_codes import ErrorCode
from ..config import CoordinatorConfig
from ..group_base.classic_api import JoinCallback, JoinRequest, JoinResult, LeavingMember, SyncCallback, \
    SyncRequest, SyncResult
from ..group_base.rebalance import RebalanceCause, RebalanceHook
from ..group_base.timers import TimerQueue
from ..storage.group_store import GroupSnapshot, TopicPartition
from .metadata import Group, Member
from .rebalancing import Rebalancer, join_result
from .snapshots import group_from_snapshot
from .state import GroupState

log = logging.getLogger("groupclient.coordinator.group")

S = GroupState
E = ErrorCode
C = RebalanceCause


class ClassicRecords(Protocol):
    """Where classic groups are kept (the cluster's GroupStore)."""

    def put_group(self, snapshot: GroupSnapshot) -> None:
        """Keep a group's snapshot."""

    def delete_group(self, group_id: str) -> None:
        """A tombstone for the group and its offsets."""


class ClassicGroups:
    """The classic groups of the offsets partitions one node leads."""

    def __init__(self, config: CoordinatorConfig, store: ClassicRecords, timers: TimerQueue, node_id: int,
                 new_member_id: Callable[[str], str], on_rebalance: RebalanceHook | None = None) -> None:
        """``new_member_id(client_id)`` names a member; ``on_rebalance`` is told of each new generation."""
        self.config = config
        self.node_id = node_id
        self.groups: dict[str, Group] = {}
        self.timers = timers
        self._store = store
        self._new_member_id = new_member_id  # the cluster's: random ids from its injected source
        self._rebalancer = Rebalancer(config, timers, store.put_group, on_rebalance)

    # -- moving with the offsets partitions, and changing protocol -----------------------
    def load(self, group_id: str, snapshot: GroupSnapshot | None, committed: Iterable[TopicPartition],
             now: int) -> None:
        """Serve a stored group (``snapshot`` None: one that only has ``committed`` offsets)."""
        group = group_from_snapshot(group_id, snapshot, now)
        # deadlines and retention clocks restart from the load, as Kafka's deadlines do
        for member in group.members.values():
            self._rebalancer.arm_session(group, member, now)
        group.offset_commit_ms = dict.fromkeys(committed, now)
        self.groups[group_id] = group
        log.info("group %s loaded on node %d in state %s generation %d",
                 group_id, self.node_id, group.state.value, group.generation_id)

    def unload(self, group_ids: Iterable[str], shutting_down: bool = False) -> None:
        """Stop serving these groups: waiting callers get NOT_COORDINATOR.

        ``shutting_down``: the whole coordinator stops, nothing moves; the groups' ends are
        logged at DEBUG only (the shutdown logs one line for all of them)."""
        for group_id in group_ids:
            group = self.groups.pop(group_id)
            self._rebalancer.cancel_timers(group)
            for member in group.members.values():
                member.complete_join(JoinResult(E.NOT_COORDINATOR, member.member_id))
                member.complete_sync(SyncResult(E.NOT_COORDINATOR))
            if shutting_down:
                group.transition_to(S.DEAD, f"node {self.node_id} shutting down", quiet=True)
            else:
                group.transition_to(S.DEAD, f"coordinator moved away from node {self.node_id}")

    def retire(self, group_id: str, reason: str) -> None:
        """The group gives its id to a consumer group (its offsets stay): a JoinGroup or SyncGroup
        still waiting is answered REBALANCE_IN_PROGRESS, as Kafka's conversion does."""
        group = self.groups.pop(group_id)
        self._rebalancer.cancel_timers(group)
        for member in group.members.values():
            member.complete_join(JoinResult(E.REBALANCE_IN_PROGRESS, member.member_id))
            member.complete_sync(SyncResult(E.REBALANCE_IN_PROGRESS))
        group.transition_to(S.DEAD, reason)

    def adopt(self, group: Group, now: int, rebalance: bool = True) -> None:
        """Serve a group made of a consumer group's classic members: their sessions run and the
        group rebalances, so they join it as a classic group (or, ``rebalance`` False, stays
        Stable with the assignments it was made with)."""
        self.groups[group.group_id] = group
        for member in group.members.values():
            self._rebalancer.arm_session(group, member, now)
        if rebalance:
            self._rebalancer.prepare(group, now, "converted from a consumer group", C.CONVERTED)
        self._rebalancer.store(group)

    def drop(self, group: Group, reason: str) -> None:
        """Delete an Empty group: Dead, gone from memory, a tombstone for it and its offsets."""
        self._rebalancer.cancel_timers(group)
        group.transition_to(S.DEAD, reason)
        self.groups.pop(group.group_id, None)
        self._store.delete_group(group.group_id)

    # -- JoinGroup -----------------------------------------------------------------------
    def join(self, req: JoinRequest, now: int, callback: JoinCallback) -> None:
        """A JoinGroup; answered through ``callback``, at once or when the rebalance completes."""
        def fail(error: ErrorCode, member_id: str = req.member_id) -> None:
            callback(JoinResult(error, member_id))

        cfg = self.config
        if not cfg.group_min_session_timeout_ms <= req.session_timeout_ms <= cfg.group_max_session_timeout_ms:
            return fail(E.INVALID_SESSION_TIMEOUT)
        is_unknown = req.member_id == ""
        group = self.groups.get(req.group_id)
        if group is None:
            if not is_unknown:
                return fail(E.UNKNOWN_MEMBER_ID)
            group = self.groups[req.group_id] = Group(req.group_id, empty_since_ms=now)
        if group.is_in(S.DEAD):
            # the group was unloaded or deleted under us; the client looks the coordinator up again
            return fail(E.COORDINATOR_NOT_AVAILABLE)
        if not self._accept_joining_member(group, req.member_id):
            log.info("group %s is full (%d members): refusing %s",
                     group.group_id, len(group.members), req.member_id or req.client_id)
            self._remove_refused_member(group, req.member_id, now)
            return fail(E.GROUP_MAX_SIZE_REACHED, "")  # Kafka answers with no member id
        if is_unknown:
            self._join_new_member(group, req, now, callback)
        else:
            self._join_current_member(group, req, now, callback)
        if group.is_in(S.PREPARING_REBALANCE):
            self._rebalancer.try_complete_join(group, now)

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        limit = self.config.group_max_size
        if group.is_in(S.EMPTY, S.DEAD):
            return True
        if group.is_in(S.PREPARING_REBALANCE):
            return (group.has(member_id) and group.get(member_id).awaiting_join) or (
                group.num_awaiting_join() < limit
            )
        return group.has(member_id) or len(group.members) < limit

    def _remove_refused_member(self, group: Group, member_id: str, now: int) -> None:
        """A member refused for the group's size leaves it (and its static id), as in Kafka:
        a group above ``group_max_size`` (the limit was lowered) sheds its last rejoiners."""
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self.timers.cancel(("pending", group.group_id, member_id))
        member = group.get_or_none(member_id)
        if member is not None:
            self._rebalancer.remove_member(group, member)
        if group.is_in(S.PREPARING_REBALANCE):
            self._rebalancer.try_complete_join(group, now)  # the members still in may all have rejoined

    def _join_new_member(self, group: Group, req: JoinRequest, now: int, callback: JoinCallback) -> None:
        if not group.supports_protocols(req.protocol_type, [p for p, _ in req.protocols]):
            return callback(JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, req.member_id))
        new_id = self._new_member_id(req.client_id)
        if req.group_instance_id is not None:
            existing = group.static_member_id(req.group_instance_id)
            if existing is None:
                self._add_member_and_rebalance(group, req, new_id, now, callback)
            else:
                self._update_static_member(group, req, existing, new_id, now, callback)
        elif req.require_known_member_id:
            # KIP-394: hand out an id first so a retried JoinGroup cannot create a ghost member
            group.pending_members.add(new_id)
            self.timers.schedule(("pending", group.group_id, new_id), now + req.session_timeout_ms,
                                 lambda t: self._rebalancer.expire_pending_member(group, new_id, t))
            callback(JoinResult(E.MEMBER_ID_REQUIRED, new_id))
        else:
            self._add_member_and_rebalance(group, req, new_id, now, callback)

    def _join_current_member(self, group: Group, req: JoinRequest, now: int, callback: JoinCallback) -> None:
        member_id = req.member_id
        if not group.supports_protocols(req.protocol_type, [p for p, _ in req.protocols]):
            # Checked first, as Kafka does, so a pending member is never admitted without a
            # protocol every member shares (select_protocol would then fail the whole rebalance).
            return callback(JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, member_id))
        if member_id in group.pending_members:
            if req.group_instance_id is not None:
                return callback(JoinResult(E.UNKNOWN_MEMBER_ID, member_id))
            self.timers.cancel(("pending", group.group_id, member_id))
            return self._add_member_and_rebalance(group, req, member_id, now, callback)
        instance_unknown = (req.group_instance_id is not None
                            and group.static_member_id(req.group_instance_id) is None)
        if group.is_static_member_fenced(req.group_instance_id, member_id):
            return callback(JoinResult(E.FENCED_INSTANCE_ID, member_id))
        if not group.has(member_id) or instance_unknown:
            return callback(JoinResult(E.UNKNOWN_MEMBER_ID, member_id))
        member = group.get(member_id)
        protocols = list(req.protocols)
        if group.is_in(S.PREPARING_REBALANCE):
            self._update_member_and_rebalance(group, member, req, now, callback,
                                              f"member {member_id} rejoined", C.METADATA_CHANGED)
        elif group.is_in(S.COMPLETING_REBALANCE):
            if member.matches(protocols):
                # the member probably lost our JoinGroup response: answer it again
                callback(join_result(group, member))
            else:
                self._update_member_and_rebalance(group, member, req, now, callback,
                                                  f"member {member_id} changed its metadata", C.METADATA_CHANGED)
        elif group.is_in(S.STABLE):
            if group.is_leader(member_id) or not member.matches(protocols):
                reason = req.reason or (f"leader {member_id} rejoined" if group.is_leader(member_id)
                                        else f"member {member_id} changed its metadata")
                cause = C.LEADER_REJOINED if group.is_leader(member_id) else C.METADATA_CHANGED
                self._update_member_and_rebalance(group, member, req, now, callback, reason, cause)
            else:
                # a follower rejoining with unchanged metadata: nothing to rebalance
                self._rebalancer.arm_session(group, member, now)
                callback(join_result(group, member))
        else:
            callback(JoinResult(E.UNKNOWN_MEMBER_ID, member_id))

    def _add_member_and_rebalance(self, group: Group, req: JoinRequest, member_id: str,
                                  now: int, callback: JoinCallback) -> None:
        member = Member(member_id, req.group_instance_id, req.client_id, req.client_host,
                        req.rebalance_timeout_ms, req.session_timeout_ms, req.protocol_type,
                        list(req.protocols), join_callback=callback, is_new=True, principal=req.principal)
        if group.is_in(S.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self._rebalancer.arm_session(group, member, now, self.config.new_member_join_timeout_ms)
        reason = f"new member {member_id} joined" + (f" ({req.reason})" if req.reason else "")
        self._rebalancer.maybe_prepare(group, now, reason, C.MEMBER_JOINED)

    def _update_member_and_rebalance(self, group: Group, member: Member, req: JoinRequest,
                                     now: int, callback: JoinCallback, reason: str, cause: RebalanceCause) -> None:
        self._update_member(group, member, req, callback)
        self._rebalancer.maybe_prepare(group, now, req.reason or reason, cause)

    @staticmethod
    def _update_member(group: Group, member: Member, req: JoinRequest, callback: JoinCallback) -> None:
        member.protocols = list(req.protocols)
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        if member.join_callback is not None and member.join_callback is not callback:
            # a duplicate JoinGroup: the older one will never be answered otherwise
            member.join_callback(JoinResult(E.REBALANCE_IN_PROGRESS, member.member_id))
        member.join_callback = callback

    def _update_static_member(self, group: Group, req: JoinRequest, old_id: str, new_id: str,
                              now: int, callback: JoinCallback) -> None:
        """A static member came back with a new member id: replace, and rebalance only if needed."""
        assert req.group_instance_id is not None
        old_leader = group.leader_id
        member = group.replace_static_member(req.group_instance_id, old_id, new_id)
        self.timers.cancel(("heartbeat", group.group_id, old_id))
        self._update_member(group, member, req, callback)
        self._rebalancer.arm_session(group, member, now)
        log.info("group %s: static member %s replaced member id %s with %s",
                 group.group_id, req.group_instance_id, old_id, new_id)
        if group.is_in(S.STABLE):
            if group.protocol_name == group.select_protocol():
                self._rebalancer.store(group)
                is_leader = group.is_leader(new_id)
                skip = is_leader and req.supports_skip_assignment
                member.join_callback = None
                # Before JoinGroup v9 the old leader id is returned so that a restarted static
                # leader does not compute an assignment a Stable group would never propagate.
                callback(JoinResult(
                    E.NONE, new_id, group.generation_id, group.protocol_type, group.protocol_name,
                    (group.leader_id or "") if skip else (old_leader or ""),
                    group.current_member_metadata() if skip else (), skip_assignment=skip,
                ))
            else:
                self._rebalancer.maybe_prepare(group, now, f"static member {req.group_instance_id} "
                                               "rejoined with a change of protocol", C.STATIC_MEMBER_REJOINED)
        elif group.is_in(S.COMPLETING_REBALANCE):
            # the leader may already be assigning to the old member id
            self._rebalancer.prepare(group, now, f"static member {req.group_instance_id} rejoined "
                                     "while an assignment was being computed", C.STATIC_MEMBER_REJOINED)

    # -- SyncGroup -----------------------------------------------------------------------
    def sync(self, req: SyncRequest, now: int, callback: SyncCallback) -> None:
        """A SyncGroup; answered through ``callback``, at once or when the leader's assignment comes."""
        group = self.groups.get(req.group_id)
        error = E.NONE
        if group is None:
            error = E.UNKNOWN_MEMBER_ID
        elif group.is_in(S.DEAD):
            error = E.COORDINATOR_NOT_AVAILABLE
        elif group.is_static_member_fenced(req.group_instance_id, req.member_id):
            error = E.FENCED_INSTANCE_ID
        elif not group.has(req.member_id):
            error = E.UNKNOWN_MEMBER_ID
        elif req.generation_id != group.generation_id:
            error = E.ILLEGAL_GENERATION
        elif (req.protocol_type is not None and req.protocol_type != group.protocol_type) or (
            req.protocol_name is not None and req.protocol_name != group.protocol_name
        ):
            error = E.INCONSISTENT_GROUP_PROTOCOL
        elif group.is_in(S.EMPTY):
            error = E.UNKNOWN_MEMBER_ID
        elif group.is_in(S.PREPARING_REBALANCE):
            error = E.REBALANCE_IN_PROGRESS
        if error or group is None:
            return callback(SyncResult(error))
        member = group.get(req.member_id)
        group.pending_sync_members.discard(req.member_id)
        if group.is_in(S.STABLE):
            self._rebalancer.arm_session(group, member, now)
            return callback(SyncResult(E.NONE, group.protocol_type, group.protocol_name, member.assignment))
        # CompletingRebalance: wait for the leader's assignment
        if member.sync_callback is not None:
            member.sync_callback(SyncResult(E.REBALANCE_IN_PROGRESS))
        member.sync_callback = callback
        if group.is_leader(req.member_id):
            unknown = set(req.assignments) - set(group.members)
            if unknown:
                log.warning("group %s: leader assigned to unknown members %s (ignored)",
                            group.group_id, sorted(unknown))
            for m in group.members.values():
                # members the leader left out get an empty assignment
                m.assignment = req.assignments.get(m.member_id, b"")
            self._rebalancer.store(group)
            group.transition_to(S.STABLE, f"leader {req.member_id} sent the assignment")
            for m in group.members.values():
                if m.sync_callback is not None:
                    m.complete_sync(SyncResult(E.NONE, group.protocol_type, group.protocol_name, m.assignment))
                    self._rebalancer.arm_session(group, m, now)

    # -- Heartbeat -----------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None,
                  generation_id: int, now: int) -> ErrorCode:
        """A Heartbeat (or another proof of life): its answer."""
        group = self.groups.get(group_id)
        if group is None:
            return E.UNKNOWN_MEMBER_ID
        if group.is_in(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(instance_id, member_id):
            return E.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return E.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return E.ILLEGAL_GENERATION
        if group.is_in(S.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        self._rebalancer.arm_session(group, group.get(member_id), now)
        return E.REBALANCE_IN_PROGRESS if group.is_in(S.PREPARING_REBALANCE) else E.NONE

    # -- LeaveGroup ----------------------------------------------------------------------
    def leave(self, group_id: str, leaving: list[LeavingMember],
              now: int) -> tuple[ErrorCode, list[tuple[LeavingMember, ErrorCode]]]:
        """A LeaveGroup: the group's error, and each leaving member's."""
        group = self.groups.get(group_id)
        if group is None:
            return E.NONE, [(m, E.UNKNOWN_MEMBER_ID) for m in leaving]
        if group.is_in(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE, []
        results = []
        for m in leaving:
            results.append((m, self._leave_one(group, m, now)))
        return E.NONE, results

    def _leave_one(self, group: Group, leaving: LeavingMember, now: int) -> ErrorCode:
        member_id, instance_id = leaving.member_id, leaving.group_instance_id
        if instance_id is not None and member_id and group.is_static_member_fenced(instance_id, member_id):
            return E.FENCED_INSTANCE_ID
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self.timers.cancel(("pending", group.group_id, member_id))
            if group.is_in(S.PREPARING_REBALANCE):
                self._rebalancer.try_complete_join(group, now)
            return E.NONE
        if instance_id is not None:
            member_id = group.static_member_id(instance_id) or ""
        if not group.has(member_id):
            return E.UNKNOWN_MEMBER_ID
        reason = f"member {member_id} left the group" + (f" ({leaving.reason})" if leaving.reason else "")
        self._rebalancer.remove_member_and_update_group(group, group.get(member_id), now, reason, C.MEMBER_LEFT)
        return E.NONE

