"""The consumer-protocol (KIP-848) groups one coordinator node serves: which group a heartbeat goes
to, the members' deadlines on the node's timer queue, and moving with the offsets partitions.

Sans-IO like the classic core (:mod:`..group.coordinator`): every entry point takes ``now``, and
everything runs on the cluster's event loop thread, so nothing here is locked.  The groups
themselves live in the cluster's :class:`GroupStore` (``consumer_groups``), shared by every node
as the offsets topic is: the node that takes an offsets partition over serves its groups at the
epochs they had, and their members' deadlines start again from the move, as Kafka's do when a
coordinator loads a partition.

Group ids are one namespace with the classic groups (Kafka's default migration policy's answers
for a group of the other kind are in :func:`ConsumerGroups.heartbeat` and
:meth:`ConsumerGroups.refusal_for_classic`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from ...error_codes import ErrorCode
from ..config import CoordinatorConfig
from ..group.timers import TimerQueue
from .errors import HeartbeatError
from .group import Answer, ConsumerGroup, GroupSettings, Member
from .reconciliation import MemberAssignmentState
from .validation import validate_heartbeat
from .subscriptions import Topics

log = logging.getLogger("groupclient.coordinator.group")

E = ErrorCode


class ClassicGroupView(Protocol):
    """What of a classic group decides whether its id may become a consumer group's."""

    @property
    def members(self) -> Mapping[str, Any]: ...


class GroupRecords(Protocol):
    """Where consumer groups are kept (the cluster's GroupStore)."""

    consumer_groups: dict[str, ConsumerGroup]

    def save_consumer_group(self, group: ConsumerGroup, member_ids: Iterable[str] | None = None) -> None: ...

    def delete_consumer_group(self, group_id: str) -> None: ...


class ConsumerGroups:
    """The consumer-protocol groups of the offsets partitions one node leads."""

    def __init__(self, config: CoordinatorConfig, store: GroupRecords, timers: TimerQueue,
                 owns: Callable[[str], bool], classic: Mapping[str, ClassicGroupView],
                 drop_classic: Callable[[str], None], new_member_id: Callable[[], str]) -> None:
        """``store``: where the cluster's consumer groups (every node's) are kept; ``owns(group_id)``: whether
        this node coordinates the id; ``classic``: this node's classic groups, and
        ``drop_classic`` deletes an empty one whose id a consumer group takes over;
        ``new_member_id()`` names a v0 member that joins without an id (a UUID, as Kafka's)."""
        self.config = config
        self.settings = GroupSettings.of(config)
        self._store = store
        self._registry = store.consumer_groups
        self._timers = timers
        self._owns = owns
        self._classic = classic
        self._drop_classic = drop_classic
        self._new_member_id = new_member_id  # for a v0 member that joins without an id
        self._topics: Topics = {}  # the cluster's topics as the last heartbeat saw them

    # -- lookups ---------------------------------------------------------------------------------
    def get(self, group_id: str) -> ConsumerGroup | None:
        """The consumer group of that id if this node serves it."""
        group = self._registry.get(group_id)
        return group if group is not None and self._owns(group_id) else None

    def served(self) -> list[ConsumerGroup]:
        """Every consumer group this node serves."""
        return [g for gid, g in self._registry.items() if self._owns(gid)]

    def is_consumer_group(self, group_id: str) -> bool:
        """Whether the id names a consumer-protocol group (served here or not)."""
        return group_id in self._registry

    # -- ConsumerGroupHeartbeat ------------------------------------------------------------------
    def heartbeat(self, request: Any, now: int, topics: Topics, client_id: str, client_host: str) -> Answer:
        """Apply one heartbeat; raises HeartbeatError for an error answer."""
        validate_heartbeat(request, self.settings.assignors)  # first, as Kafka's GroupCoordinatorService
        group_id = request.group_id
        if not self._owns(group_id):
            raise HeartbeatError(E.NOT_COORDINATOR, None)
        group = self._registry.get(group_id) or self._create(request)
        if not request.member_id:
            request.member_id = self._new_member_id()  # v0: the coordinator names a joining member
        self._topics = topics
        epochs = (group.epoch, group.assignment_epoch)
        answer = group.heartbeat(request, now, topics, client_id, client_host)
        # journaled: the member, or everyone when the epochs moved (every target may have changed)
        self._store.save_consumer_group(group, None if (group.epoch, group.assignment_epoch) != epochs
                                        else [request.member_id])
        self._arm(group, request.member_id)
        if group.resolution_due and ("consumer-regex", group_id) not in self._timers:
            # resolved off the heartbeat, as Kafka resolves patterns in the background
            self._timers.schedule(("consumer-regex", group_id), now, lambda t: self._resolve(group, t))
        return answer

    def _resolve(self, group: ConsumerGroup, now: int) -> None:
        if self._registry.get(group.group_id) is group and self._owns(group.group_id):
            if group.resolve_patterns(now, self._topics):
                log.info("group %s: its patterns now match other topics; group epoch %d", group.group_id, group.epoch)
            self._store.save_consumer_group(group, [])

    def _create(self, request: Any) -> ConsumerGroup:
        """A new consumer group for a joining member, or Kafka's refusal."""
        group_id = request.group_id
        classic = self._classic.get(group_id)
        leaving = request.member_epoch in (-1, -2)
        if classic is not None:
            if classic.members or request.member_epoch != 0:
                # an online upgrade of a live classic group is not done here (see docs/coordinator.md)
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            # an empty classic group (offsets only) becomes a consumer group, as in Kafka
            log.info("group %s: the empty classic group becomes a consumer group", group_id)
            self._drop_classic(group_id)
        if request.member_epoch != 0:
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} not found." if leaving
                                 else f"Consumer group {group_id} not found.")
        group = ConsumerGroup(group_id, self.settings)
        self._registry[group_id] = group  # journaled with its first member
        log.info("group %s: consumer group created", group_id)
        return group

    def refusal_for_classic(self, group_id: str) -> ErrorCode:
        """What a classic-protocol request (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) for this
        id is answered when a consumer group has it: an empty consumer group gives the id up to
        the classic group being joined (Kafka's downgrade of an empty group); a live one refuses."""
        group = self._registry.get(group_id)
        if group is None:
            return E.NONE
        if not group.members:
            log.info("group %s: the empty consumer group becomes a classic group", group_id)
            self.delete(group_id)
            return E.NONE
        return E.GROUP_ID_NOT_FOUND

    # -- deadlines -------------------------------------------------------------------------------
    def _arm(self, group: ConsumerGroup, member_id: str) -> None:
        """The member's next deadline: its session's end, or the end of its time to revoke."""
        key = ("consumer", group.group_id, member_id)
        member = group.members.get(member_id)
        if member is None or group.group_id not in self._registry:
            self._timers.cancel(key)
            return
        self._timers.schedule(key, _deadline(member), lambda t: self._expire(group, t))

    def _expire(self, group: ConsumerGroup, now: int) -> None:
        if self._registry.get(group.group_id) is not group or not self._owns(group.group_id):
            return
        gone = group.expire(now)
        for member_id in gone:
            log.info("group %s: member %s removed (its session or its rebalance timeout ended); group epoch %d",
                     group.group_id, member_id, group.epoch)
            self._timers.cancel(("consumer", group.group_id, member_id))
        if gone:
            self._store.save_consumer_group(group)
        for member in group.members.values():
            self._arm(group, member.member_id)  # whoever is left keeps its own deadline

    # -- moving with the offsets partitions ------------------------------------------------------
    def load(self, partition_of: Callable[[str], int], partition: int, now: int) -> None:
        """Serve the consumer groups of an offsets partition: every member's session and revocation
        time start again from now (Kafka restarts its timers when it loads a partition)."""
        for group in list(self._registry.values()):
            if partition_of(group.group_id) != partition:
                continue
            group.settings = self.settings  # the coordinator's, not the group's
            for member in group.members.values():
                member.session_ends_at = now + self.settings.session_timeout_ms
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
        """Forget an empty consumer group (DeleteGroups, or retention, or its id taken by a classic group)."""
        group = self._registry.get(group_id)
        if group is not None:
            for member_id in group.members:
                self._timers.cancel(("consumer", group_id, member_id))
            self._store.delete_consumer_group(group_id)


def _deadline(member: Member) -> int:
    if member.revoke_by is None:
        return member.session_ends_at
    return min(member.session_ends_at, member.revoke_by)
