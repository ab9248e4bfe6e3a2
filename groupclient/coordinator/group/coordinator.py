"""The broker-side group coordinator: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

Sans-IO: no sockets, no clock.  Every entry point takes ``now`` (monotonic ms); responses that
must wait for a rebalance are delivered through the callback the caller passed in.  A driver
calls :meth:`GroupCoordinator.on_timer` at :meth:`next_deadline`.  The logic follows Kafka's
``GroupCoordinator`` (see docs/coordinator.md for the differences).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ...error_codes import ErrorCode
from ..config import CoordinatorConfig
from ..consumer_group.service import ConsumerGroups
from ..consumer_group.subscriptions import Topics
from ..placement import offsets_partition_for
from ..storage.group_store import GroupStore
from .metadata import Group, JoinCallback, JoinResult, Member, SyncCallback, SyncResult
from .requests import JoinRequest, LeavingMember, SyncRequest
from .retention import cancel_cleanup, schedule_cleanup
from .snapshots import group_from_snapshot, snapshot_of
from .state import CLASSIC, GroupState, RebalanceCause, RebalanceHook
from .timers import TimerQueue

__all__ = ["GroupCoordinator", "JoinRequest", "LeavingMember", "SyncRequest"]

log = logging.getLogger("groupclient.coordinator.group")

S = GroupState
E = ErrorCode
C = RebalanceCause


class GroupCoordinator:
    def __init__(
        self,
        config: CoordinatorConfig,
        store: GroupStore,
        node_id: int,
        new_member_id: Callable[[str], str],
        new_consumer_member_id: Callable[[], str] | None = None,
        on_rebalance: RebalanceHook | None = None,
    ) -> None:
        """``new_member_id(client_id)`` names a classic member, ``new_consumer_member_id()`` a
        consumer-protocol member that joins without an id (v0; a random UUID, as Kafka's);
        ``on_rebalance`` is told of each new generation and group epoch (the metrics')."""
        self.config = config
        self.store = store
        self.node_id = node_id
        self.groups: dict[str, Group] = {}
        self.owned_partitions: set[int] = set()
        self.timers = TimerQueue()
        self._new_member_id = new_member_id  # the cluster's: random ids from its injected source
        self._on_rebalance = on_rebalance
        # the consumer-protocol groups: same ids namespace, same timers, same partitions
        self.consumer = ConsumerGroups(config, store, self.timers, self.is_coordinator_for, self,
                                       new_consumer_member_id or (lambda: new_member_id("")[1:]), on_rebalance)

    # -- placement -----------------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        return offsets_partition_for(group_id, self.config.offsets_topic_partitions)

    def is_coordinator_for(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self.owned_partitions

    def check_group(self, group_id: str | None) -> ErrorCode:
        """The checks every group API starts with (Kafka's validateGroupStatus)."""
        if not group_id:
            return E.INVALID_GROUP_ID
        if not self.is_coordinator_for(group_id):
            return E.NOT_COORDINATOR
        return E.NONE

    # -- timers --------------------------------------------------------------------------
    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def on_timer(self, now: int) -> int:
        return self.timers.run_due(now)

    # -- loading and unloading (coordinator moves) ----------------------------------------
    def load_partition(self, partition: int, now: int) -> list[str]:
        """Become coordinator for an offsets partition and load its groups from the store."""
        self.owned_partitions.add(partition)
        schedule_cleanup(self, now)
        loaded = []
        self.consumer.load(self.partition_for, partition, now)
        for group_id in sorted(self.store.group_ids()):
            if (self.partition_for(group_id) != partition or group_id in self.groups
                    or self.consumer.is_consumer_group(group_id)):
                continue
            group = group_from_snapshot(group_id, self.store.groups.get(group_id), now)
            # deadlines and retention clocks restart from the load, as Kafka's deadlines do
            for member in group.members.values():
                self._schedule_heartbeat_expiry(group, member, now)
            group.offset_commit_ms = dict.fromkeys(self.store.offsets.get(group_id, {}), now)
            self.groups[group_id] = group
            loaded.append(group_id)
            log.info("group %s loaded on node %d in state %s generation %d",
                     group_id, self.node_id, group.state.value, group.generation_id)
        return loaded

    def unload_partition(self, partition: int, shutting_down: bool = False) -> list[str]:
        """Stop coordinating an offsets partition: waiting callers get NOT_COORDINATOR.

        ``shutting_down``: the whole coordinator stops, nothing moves; the groups' ends are
        logged at DEBUG only (the shutdown logs one line for all of them)."""
        self.owned_partitions.discard(partition)
        if not self.owned_partitions:
            cancel_cleanup(self)
        self.consumer.unload(self.partition_for, partition)
        unloaded = [g for g in self.groups if self.partition_for(g) == partition]
        for group_id in unloaded:
            group = self.groups.pop(group_id)
            self._cancel_group_timers(group)
            for member in group.members.values():
                member.complete_join(JoinResult(E.NOT_COORDINATOR, member.member_id))
                member.complete_sync(SyncResult(E.NOT_COORDINATOR))
            if shutting_down:
                group.transition_to(S.DEAD, f"node {self.node_id} shutting down", quiet=True)
            else:
                group.transition_to(S.DEAD, f"coordinator moved away from node {self.node_id}")
        return unloaded

    def unload_all(self, shutting_down: bool = False) -> None:
        for partition in sorted(self.owned_partitions):
            self.unload_partition(partition, shutting_down)

    # -- groups changing protocol (consumer_group/service.py) ----------------------------
    def retire_classic(self, group_id: str, reason: str) -> None:
        """The classic group gives its id to a consumer group (its offsets stay): a JoinGroup or
        SyncGroup still waiting is answered REBALANCE_IN_PROGRESS, as Kafka's conversion does."""
        group = self.groups.pop(group_id)
        self._cancel_group_timers(group)
        for member in group.members.values():
            member.complete_join(JoinResult(E.REBALANCE_IN_PROGRESS, member.member_id))
            member.complete_sync(SyncResult(E.REBALANCE_IN_PROGRESS))
        group.transition_to(S.DEAD, reason)

    def adopt_classic(self, group: Group, now: int) -> None:
        """Serve a classic group made of a consumer group's classic members: their sessions run
        and the group rebalances, so they join it as a classic group."""
        self.groups[group.group_id] = group
        for member in group.members.values():
            self._schedule_heartbeat_expiry(group, member, now)
        self._prepare_rebalance(group, now, "converted from a consumer group", C.CONVERTED)
        self._store_group(group)

    def drop_group(self, group: Group, reason: str) -> None:
        """Delete an Empty group: Dead, gone from memory, a tombstone for it and its offsets."""
        self._cancel_group_timers(group)
        group.transition_to(S.DEAD, reason)
        self.groups.pop(group.group_id, None)
        self.store.delete_group(group.group_id)

    # -- JoinGroup -----------------------------------------------------------------------
    def join_group(self, req: JoinRequest, now: int, callback: JoinCallback, topics: Topics | None = None) -> None:
        """``topics``: the cluster's topics (names to ids), for a join to a consumer group's id."""
        def fail(error: ErrorCode, member_id: str = req.member_id) -> None:
            callback(JoinResult(error, member_id))

        error = self.check_group(req.group_id)
        if error:
            return fail(error)
        if (joined := self.consumer.classic_join(req, now, topics or {})) is not None:
            return callback(joined)
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
            self._try_complete_join(group, now)

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
            self._remove_member(group, member)
        if group.is_in(S.PREPARING_REBALANCE):
            self._try_complete_join(group, now)  # the members still in may all have rejoined

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
                                 lambda t: self._expire_pending_member(group, new_id, t))
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
                callback(self._join_result_for(group, member))
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
                self._schedule_heartbeat_expiry(group, member, now)
                callback(self._join_result_for(group, member))
        else:
            callback(JoinResult(E.UNKNOWN_MEMBER_ID, member_id))

    def _join_result_for(self, group: Group, member: Member) -> JoinResult:
        leader = group.is_leader(member.member_id)
        return JoinResult(
            E.NONE, member.member_id, group.generation_id, group.protocol_type,
            group.protocol_name, group.leader_id or "",
            group.current_member_metadata() if leader else (),
        )

    def _add_member_and_rebalance(self, group: Group, req: JoinRequest, member_id: str,
                                  now: int, callback: JoinCallback) -> None:
        member = Member(member_id, req.group_instance_id, req.client_id, req.client_host,
                        req.rebalance_timeout_ms, req.session_timeout_ms, req.protocol_type,
                        list(req.protocols), join_callback=callback, is_new=True, principal=req.principal)
        if group.is_in(S.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self._schedule_heartbeat_expiry(group, member, now, self.config.new_member_join_timeout_ms)
        reason = f"new member {member_id} joined" + (f" ({req.reason})" if req.reason else "")
        self._maybe_prepare_rebalance(group, now, reason, C.MEMBER_JOINED)

    def _update_member_and_rebalance(self, group: Group, member: Member, req: JoinRequest,
                                     now: int, callback: JoinCallback, reason: str, cause: RebalanceCause) -> None:
        self._update_member(group, member, req, callback)
        self._maybe_prepare_rebalance(group, now, req.reason or reason, cause)

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
        self._schedule_heartbeat_expiry(group, member, now)
        log.info("group %s: static member %s replaced member id %s with %s",
                 group.group_id, req.group_instance_id, old_id, new_id)
        if group.is_in(S.STABLE):
            if group.protocol_name == group.select_protocol():
                self._store_group(group)
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
                self._maybe_prepare_rebalance(group, now, f"static member {req.group_instance_id} "
                                              "rejoined with a change of protocol", C.STATIC_MEMBER_REJOINED)
        elif group.is_in(S.COMPLETING_REBALANCE):
            # the leader may already be assigning to the old member id
            self._prepare_rebalance(group, now, f"static member {req.group_instance_id} rejoined "
                                    "while an assignment was being computed", C.STATIC_MEMBER_REJOINED)

    # -- rebalancing ---------------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group: Group, now: int, reason: str, cause: RebalanceCause) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, now, reason, cause)

    def _prepare_rebalance(self, group: Group, now: int, reason: str, cause: RebalanceCause) -> None:
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

    def _try_complete_join(self, group: Group, now: int) -> None:
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
                self._remove_member(group, member)
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
            self._store_group(group)
            return
        for member in list(group.members.values()):
            member.complete_join(self._join_result_for(group, member))
            member.is_new = False
            self._schedule_heartbeat_expiry(group, member, now)
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
            self._remove_member(group, group.get(member_id))
        self._maybe_prepare_rebalance(group, now, f"members {sorted(missing)} did not sync in time", C.SYNC_TIMEOUT)

    # -- SyncGroup -----------------------------------------------------------------------
    def sync_group(self, req: SyncRequest, now: int, callback: SyncCallback) -> None:
        error = self.check_group(req.group_id)
        if not error and (synced := self.consumer.classic_sync(req, now)) is not None:
            return callback(synced)
        group = self.groups.get(req.group_id)
        if not error:
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
            self._schedule_heartbeat_expiry(group, member, now)
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
            self._store_group(group)
            group.transition_to(S.STABLE, f"leader {req.member_id} sent the assignment")
            for m in group.members.values():
                if m.sync_callback is not None:
                    m.complete_sync(SyncResult(E.NONE, group.protocol_type, group.protocol_name, m.assignment))
                    self._schedule_heartbeat_expiry(group, m, now)

    def _propagate_sync_error(self, group: Group, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
            member.complete_sync(SyncResult(error))

    # -- Heartbeat -----------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None,
                  generation_id: int, now: int) -> ErrorCode:
        error = self.check_group(group_id)
        if error:
            return error
        if (answered := self.consumer.classic_heartbeat(group_id, member_id, generation_id, now)) is not None:
            return answered
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
        self._schedule_heartbeat_expiry(group, group.get(member_id), now)
        return E.REBALANCE_IN_PROGRESS if group.is_in(S.PREPARING_REBALANCE) else E.NONE

    def _schedule_heartbeat_expiry(self, group: Group, member: Member, now: int,
                                   timeout_ms: int | None = None) -> None:
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
                self._remove_member_and_update_group(group, member, t, f"member {member.member_id} expired",
                                                     C.MEMBER_EXPIRED)

        member.heartbeat_satisfied = True
        self.timers.schedule(key, deadline, expire)

    # -- LeaveGroup ----------------------------------------------------------------------
    def leave_group(self, group_id: str, leaving: list[LeavingMember],
                    now: int) -> tuple[ErrorCode, list[tuple[LeavingMember, ErrorCode]]]:
        error = self.check_group(group_id)
        if error:
            return error, []
        if (left := self.consumer.classic_leave(group_id, leaving, now)) is not None:
            return E.NONE, left
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
                self._try_complete_join(group, now)
            return E.NONE
        if instance_id is not None:
            member_id = group.static_member_id(instance_id) or ""
        if not group.has(member_id):
            return E.UNKNOWN_MEMBER_ID
        reason = f"member {member_id} left the group" + (f" ({leaving.reason})" if leaving.reason else "")
        self._remove_member_and_update_group(group, group.get(member_id), now, reason, C.MEMBER_LEFT)
        return E.NONE

    # -- removal -------------------------------------------------------------------------
    def _remove_member(self, group: Group, member: Member) -> None:
        member.complete_join(JoinResult(E.UNKNOWN_MEMBER_ID, member.member_id))
        member.complete_sync(SyncResult(E.UNKNOWN_MEMBER_ID))
        self.timers.cancel(("heartbeat", group.group_id, member.member_id))
        group.remove(member.member_id)

    def _remove_member_and_update_group(self, group: Group, member: Member, now: int, reason: str,
                                        cause: RebalanceCause) -> None:
        self._remove_member(group, member)
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, now, reason, cause)
        elif group.is_in(S.PREPARING_REBALANCE):
            self._try_complete_join(group, now)

    def _expire_pending_member(self, group: Group, member_id: str, now: int) -> None:
        if member_id in group.pending_members:
            log.info("group %s: pending member %s never joined, dropping it", group.group_id, member_id)
            group.pending_members.discard(member_id)
            if group.is_in(S.PREPARING_REBALANCE):
                self._try_complete_join(group, now)

    # -- helpers -------------------------------------------------------------------------
    def _cancel_group_timers(self, group: Group) -> None:
        self.timers.cancel(("join", group.group_id))
        self.timers.cancel(("sync", group.group_id))
        for member_id in list(group.members) + list(group.pending_members):
            self.timers.cancel(("heartbeat", group.group_id, member_id))
            self.timers.cancel(("pending", group.group_id, member_id))

    def _store_group(self, group: Group) -> None:
        self.store.put_group(snapshot_of(group))
