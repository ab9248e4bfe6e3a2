"""The consumer-protocol (KIP-848) groups one coordinator node serves: which group a request goes
to, the members' deadlines on the node's timer queue, the journal, groups changing protocol, and
moving with the offsets partitions.

Sans-IO like the classic groups (:mod:`..classic_group.groups`): every entry point takes ``now``,
and everything runs on the cluster's event loop thread, so nothing here is locked.  The groups
themselves live in the cluster's :class:`GroupStore` (``consumer_groups``), shared by every node
as the offsets topic is: the node that takes an offsets partition over serves its groups at the
epochs they had, and their members' deadlines start again from the move, as Kafka's do when a
coordinator loads a partition.

Group ids are one namespace with the classic groups.  As Kafka 4.1 with its default migration
policy (``bidirectional``): an empty group of one kind gives its id to a member of the other kind;
a classic JoinGroup joins a live consumer group as a classic member (:mod:`.classic_members`); a
consumer-protocol join upgrades a live classic group, and a consumer group left with classic
members only goes back to being a classic group.  Those two conversions need both kinds of group,
so the group coordinator above both makes them (``group/migration.py``), asked through
:class:`ClassicSide`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, Protocol

from ...error_codes import ErrorCode
from ..config import CoordinatorConfig
from ..group_base.classic_api import JoinRequest, JoinResult, LeavingMember, SyncRequest, SyncResult
from ..group_base.configs import effective_int
from ..group_base.rebalance import CONSUMER, RebalanceCause, RebalanceHook
from ..group_base.timers import TimerQueue
from . import classic_members
from .errors import HeartbeatError
from .group import Answer, ConsumerGroup, GroupSettings, Member, deadline_of
from .reconciliation import MemberAssignmentState
from .subscriptions import Topics
from .validation import validate_heartbeat

log = logging.getLogger("groupclient.coordinator.group")

E = ErrorCode


class GroupRecords(Protocol):
    """Where consumer groups are kept (the cluster's GroupStore)."""

    consumer_groups: dict[str, ConsumerGroup]
    group_configs: dict[str, dict[str, str]]  # each group's own configs (IncrementalAlterConfigs)

    def save_consumer_group(self, group: ConsumerGroup, member_ids: Iterable[str] | None = None) -> None:
        """Journal what changed of the group (the members named; every member when None)."""

    def delete_consumer_group(self, group_id: str) -> None:
        """The group is gone."""


class ClassicSide(Protocol):
    """The node's classic groups, as far as a group changing protocol needs them (the group
    coordinator, which knows both kinds of group and converts one into the other)."""

    def is_classic_group(self, group_id: str) -> bool:
        """Whether a classic group of that id is served here."""

    def upgrade_classic(self, group_id: str, settings: GroupSettings, topics: Topics, now: int) -> ConsumerGroup | None:
        """The consumer group the classic group of that id becomes (the classic group is gone then),
        or None if it had no members (gone too: its id is free); HeartbeatError with Kafka's refusal."""

    def downgrade_to_classic(self, group: ConsumerGroup, name_of: Callable[[uuid.UUID], str | None],
                             generation: int, now: int, rebalance: bool = True) -> None:
        """Serve a classic group made of the consumer group's classic members, Stable at
        ``generation``, and rebalance it (or not)."""


class ConsumerGroups:
    """The consumer-protocol groups of the offsets partitions one node leads."""

    def __init__(self, config: CoordinatorConfig, store: GroupRecords, timers: TimerQueue,
                 owns: Callable[[str], bool], classic: ClassicSide, new_member_id: Callable[[], str],
                 on_rebalance: RebalanceHook | None = None,
                 cluster_topics: Callable[[], Topics] | None = None) -> None:
        """``store``: where the cluster's consumer groups (every node's) are kept; ``owns(group_id)``:
        whether this node coordinates the id; ``classic``: this node's classic groups;
        ``new_member_id()`` names a member the coordinator names (a UUID, as Kafka's);
        ``on_rebalance`` is told of each new group epoch; ``cluster_topics()``, the cluster's
        topics now (None: as the last request saw them)."""
        self.config = config
        self.settings = GroupSettings.of(config)
        self._store = store
        self._registry = store.consumer_groups
        self._timers = timers
        self._owns = owns
        self._classic = classic
        self._new_member_id = new_member_id
        self._on_rebalance = on_rebalance
        self._topics: Topics = {}  # the cluster's topics as the last request saw them
        self._cluster_topics = cluster_topics
        self._names_of: tuple[Topics, dict[uuid.UUID, str]] | None = None

    # -- lookups ---------------------------------------------------------------------------------
    def get(self, group_id: str) -> ConsumerGroup | None:
        """The consumer group of that id if this node serves it."""
        group = self._registry.get(group_id)
        return group if group is not None and self._owns(group_id) else None

    def served(self) -> list[ConsumerGroup]:
        """Every consumer group this node serves."""
        return [g for gid, g in self._registry.items() if self._owns(gid)]

    def settings_for(self, group_id: str) -> GroupSettings:
        """The settings a group's members are held to: the coordinator's, with the group's own
        consumer.* configs over them (clamped to the coordinator's bounds, as Kafka does)."""
        own = self._store.group_configs.get(group_id)
        if not own:
            return self.settings
        return replace(self.settings,
                       heartbeat_interval_ms=effective_int(own, "consumer.heartbeat.interval.ms", self.config),
                       session_timeout_ms=effective_int(own, "consumer.session.timeout.ms", self.config),
                       assignment_interval_ms=effective_int(own, "consumer.assignment.interval.ms", self.config))

    def reconfigure(self, group_id: str) -> None:
        """A group's own configs changed: its members are held to them from their next heartbeat,
        whose answer carries the heartbeat interval and from which the session is counted (Kafka
        reads a group's configs on each heartbeat)."""
        group = self._registry.get(group_id)
        if group is not None:
            group.settings = self.settings_for(group_id)

    def is_consumer_group(self, group_id: str) -> bool:
        """Whether the id names a consumer-protocol group (served here or not)."""
        return group_id in self._registry

    # -- ConsumerGroupHeartbeat ------------------------------------------------------------------
    def heartbeat(self, request: Any, now: int, topics: Topics, client_id: str, client_host: str,
                  principal: str | None = None) -> Answer:
        """Apply one heartbeat; raises HeartbeatError for an error answer."""
        validate_heartbeat(request, self.settings.assignors)  # first, as Kafka's GroupCoordinatorService
        group_id = request.group_id
        if not self._owns(group_id):
            raise HeartbeatError(E.NOT_COORDINATOR, None)
        self._topics = topics
        group = self._registry.get(group_id) or self._create(request, now, topics)
        if not request.member_id:
            request.member_id = self._new_member_id()  # v0: the coordinator names a joining member
        epochs = (group.epoch, group.assignment_epoch)
        answer = group.heartbeat(request, now, topics, client_id, client_host, principal)
        self._after(group, epochs, [request.member_id], now)
        return answer

    def _create(self, request: Any, now: int, topics: Topics) -> ConsumerGroup:
        """A new consumer group for a joining member (an empty classic group's id taken over, or a
        live classic group upgraded), or Kafka's refusal."""
        group_id = request.group_id
        if self._classic.is_classic_group(group_id):
            if request.member_epoch != 0:
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            upgraded = self._classic.upgrade_classic(group_id, self.settings_for(group_id), topics, now)
            if upgraded is not None:
                self._registry[group_id] = upgraded
                for member_id in upgraded.members:
                    self._arm(upgraded, member_id)
                return upgraded
        if request.member_epoch != 0:
            leaving = request.member_epoch in (-1, -2)
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} not found." if leaving
                                 else f"Consumer group {group_id} not found.")
        group = ConsumerGroup(group_id, self.settings_for(group_id))
        self._registry[group_id] = group  # journaled with its first member
        log.info("group %s: consumer group created", group_id)
        return group

    def _after(self, group: ConsumerGroup, epochs: tuple[int, int], member_ids: list[str], now: int,
               replaced: bool = False) -> None:
        """After a request changed the group: journal it (the members named, or everyone when the
        epochs moved: every target may have changed), re-arm the members' deadlines, resolve its
        patterns off the request, and turn it back into a classic group if only classic members
        are left (``replaced``: because a classic static member took a consumer-protocol one's place)."""
        self._store.save_consumer_group(group, None if (group.epoch, group.assignment_epoch) != epochs
                                        else member_ids)
        self._rebalanced(group, epochs[0])
        for member_id in member_ids:
            self._arm(group, member_id)
        if group.resolution_due and ("consumer-regex", group.group_id) not in self._timers:
            # resolved off the heartbeat, as Kafka resolves patterns in the background
            self._timers.schedule(("consumer-regex", group.group_id), now, lambda t: self._resolve(group, t))
        self._maybe_downgrade(group, now, epochs[0], replaced)

    def _resolve(self, group: ConsumerGroup, now: int) -> None:
        if self._registry.get(group.group_id) is group and self._owns(group.group_id):
            epoch = group.epoch
            if group.resolve_patterns(now, self._topics):
                log.info("group %s: its patterns now match other topics; group epoch %d", group.group_id, group.epoch)
            self._rebalanced(group, epoch)
            self._store.save_consumer_group(group, [])

    # -- classic members (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) ----------------------------
    def classic_join(self, req: JoinRequest, now: int, topics: Topics) -> JoinResult | None:
        """A JoinGroup for a consumer group's id: joined as a classic member; None when the id is
        not a consumer group's here (an empty one gives its id up to the classic group)."""
        group = self.get(req.group_id)
        if group is None:
            return None
        if not group.members:
            log.info("group %s: the empty consumer group becomes a classic group", req.group_id)
            self.delete(req.group_id)
            return None
        self._topics = topics
        epochs = (group.epoch, group.assignment_epoch)
        holder = group.static_member(req.group_instance_id)
        result = classic_members.join(group, req, now, topics, self._new_member_id)
        if result.error is E.NONE:
            replaced = holder if holder is not None and holder.member_id != result.member_id else None
            if replaced is not None:
                log.info("group %s: static member %s (instance %s) replaced by %s, a classic member",
                         group.group_id, replaced.member_id, req.group_instance_id, result.member_id)
                self._arm(group, replaced.member_id)  # gone: its deadline with it
            # a consumer-protocol member replaced by a classic one may leave only classic members
            self._after(group, epochs, [result.member_id], now, replaced is not None and replaced.classic is None)
        return result

    def classic_sync(self, req: SyncRequest, now: int) -> SyncResult | None:
        """A SyncGroup for a consumer group's id (None: not one here)."""
        group = self.get(req.group_id)
        if group is None:
            return None
        result = classic_members.sync(group, req, now, self._name_of)
        if result.error is E.NONE:
            self._arm(group, req.member_id)
        return result

    def classic_heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation_id: int,
                          now: int) -> ErrorCode | None:
        """A Heartbeat for a consumer group's id (None: not one here)."""
        group = self.get(group_id)
        if group is None:
            return None
        error = classic_members.heartbeat(group, member_id, instance_id, generation_id, now)
        if group.members.get(member_id) is not None:
            self._arm(group, member_id)
        return error

    def classic_leave(self, group_id: str, leaving: list[LeavingMember],
                      now: int) -> list[tuple[LeavingMember, ErrorCode]] | None:
        """A LeaveGroup for a consumer group's id (None: not one here): it removes members of
        either protocol, as Kafka's does."""
        group = self.get(group_id)
        if group is None:
            return None
        results: list[tuple[LeavingMember, ErrorCode]] = []
        gone: list[Member] = []
        epoch = group.epoch
        for who in leaving:
            if who.group_instance_id is not None:
                member = group.static_member(who.group_instance_id)
                error = E.UNKNOWN_MEMBER_ID if member is None else (
                    E.FENCED_INSTANCE_ID if who.member_id and member.member_id != who.member_id else E.NONE)
            else:
                member = group.members.get(who.member_id)
                error = E.UNKNOWN_MEMBER_ID if member is None else E.NONE
            if member is not None and not error and member not in gone:
                gone.append(member)
            results.append((who, error))
        if gone:
            group.remove(gone, RebalanceCause.MEMBER_LEFT)
            self._rebalanced(group, epoch)
            for member in gone:
                self._timers.cancel(("consumer", group_id, member.member_id))
                log.info("group %s: member %s left (LeaveGroup); group epoch %d", group_id, member.member_id,
                         group.epoch)
            self._store.save_consumer_group(group)
            self._maybe_downgrade(group, now, epoch)
        return results

    def _name_of(self, topic_id: uuid.UUID) -> str | None:
        """A topic id's name in the cluster now.  Not as the last request saw the topics: a
        group can change without a request (a member's session ends on a timer), and on a node
        that has just become the coordinator no request has been seen, so a downgrade there
        wrote every member's assignment empty, and the classic members then owned nothing as far
        as the coordinator knew (the simulator's seed 241: two members owned a partition at once)."""
        topics = self._cluster_topics() if self._cluster_topics is not None else self._topics
        if self._names_of is None or self._names_of[0] is not topics:
            self._names_of = (topics, {tid: name for name, (tid, _) in topics.items()})
        return self._names_of[1].get(topic_id)

    def _maybe_downgrade(self, group: ConsumerGroup, now: int, epoch: int, replaced: bool = False) -> None:
        """Kafka's downgrade: the last consumer-protocol member is gone and classic ones remain.

        When it left or was removed (``epoch``: the group's before that, the classic group's
        generation), the classic group rebalances.  When a classic static member took its place
        (``replaced``, Kafka's validateOnlineDowngradeWithReplacedMember), it becomes Stable at the
        group epoch with each member's assignment, as a static member's restart should leave the
        group, unless the assignment is older than the group epoch (Kafka's condition) or a member
        is still moving partitions: Kafka then writes the targets and no member is told to take
        up the rest of its target, so it would wait for a rebalance that nothing starts."""
        if not group.members or any(m.classic is None for m in group.members.values()):
            return
        if self._registry.get(group.group_id) is not group:
            return
        settled = group.assignment_epoch == group.epoch and all(
            m.assignment.state is MemberAssignmentState.STABLE and m.assignment.epoch == group.epoch
            for m in group.members.values())
        quiet = replaced and settled
        self.delete(group.group_id)
        self._classic.downgrade_to_classic(group, self._name_of, group.epoch if replaced else epoch, now,
                                           rebalance=not quiet)

    def _rebalanced(self, group: ConsumerGroup, epoch: int) -> None:
        """Tell the hook if the group epoch moved past ``epoch`` (a new epoch: a rebalance)."""
        if self._on_rebalance is not None and group.epoch > epoch:
            self._on_rebalance(group.group_id, CONSUMER, group.epoch_cause)

    # -- deadlines -------------------------------------------------------------------------------
    def _arm(self, group: ConsumerGroup, member_id: str) -> None:
        """The member's next deadline (its session's end, or its time to revoke, sync or rejoin)."""
        key = ("consumer", group.group_id, member_id)
        member = group.members.get(member_id)
        if member is None or group.group_id not in self._registry:
            self._timers.cancel(key)
            return
        self._timers.schedule(key, deadline_of(member), lambda t: self._expire(group, t))

    def _expire(self, group: ConsumerGroup, now: int) -> None:
        if self._registry.get(group.group_id) is not group or not self._owns(group.group_id):
            return
        epoch = group.epoch
        gone = group.expire(now)
        for member_id in gone:
            log.info("group %s: member %s removed (its session or its rebalance timeout ended); group epoch %d",
                     group.group_id, member_id, group.epoch)
            self._timers.cancel(("consumer", group.group_id, member_id))
        for member in group.members.values():
            self._arm(group, member.member_id)  # whoever is left keeps its own deadline
        if gone:
            self._rebalanced(group, epoch)
            self._store.save_consumer_group(group)
            self._maybe_downgrade(group, now, epoch)

    # -- moving with the offsets partitions ------------------------------------------------------
    def load(self, partition_of: Callable[[str], int], partition: int, now: int) -> None:
        """Serve the consumer groups of an offsets partition: every member's session and revocation
        time start again from now (Kafka restarts its timers when it loads a partition)."""
        for group in list(self._registry.values()):
            if partition_of(group.group_id) != partition:
                continue
            group.settings = self.settings_for(group.group_id)  # as configured now, not as journaled
            for member in group.members.values():
                session = member.classic.session_timeout_ms if member.classic else group.settings.session_timeout_ms
                member.session_ends_at = now + session
                if member.assignment.state is MemberAssignmentState.UNREVOKED_PARTITIONS:
                    member.revoke_by = now + member.rebalance_timeout_ms
                self._arm(group, member.member_id)

    def unload(self, partition_of: Callable[[str], int], partition: int) -> None:
        """Stop serving an offsets partition's consumer groups (they stay in the registry)."""
        for group in self._registry.values():
            if partition_of(group.group_id) == partition:
                for member_id in group.members:
                    self._timers.cancel(("consumer", group.group_id, member_id))

    def delete(self, group_id: str) -> None:
        """Forget a consumer group (DeleteGroups, or its id taken over by a classic group)."""
        group = self._registry.get(group_id)
        if group is not None:
            for member_id in group.members:
                self._timers.cancel(("consumer", group_id, member_id))
            self._store.delete_consumer_group(group_id)

