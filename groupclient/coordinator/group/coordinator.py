"""The broker-side group coordinator of one node: JoinGroup, SyncGroup, Heartbeat and LeaveGroup
routed to a classic group (:mod:`..classic_group.groups`) or to a consumer-protocol group whose
classic members speak them (:mod:`..consumer_group.service`), the offsets partitions it leads,
and groups changing protocol (:mod:`.migration`).

Group ids are one namespace over both kinds of group, so what needs both sits here, above them:
which kind an id names, the checks every group API starts with, loading and unloading both kinds
as the offsets partitions move, and converting one kind into the other.  Neither kind of group
imports the other.

Sans-IO: no sockets, no clock.  Every entry point takes ``now`` (monotonic ms); responses that
must wait for a rebalance are delivered through the callback the caller passed in.  A driver
calls :meth:`GroupCoordinator.on_timer` at :meth:`next_deadline`.  The logic follows Kafka's
``GroupCoordinator`` (see docs/coordinator.md for the differences).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from ...error_codes import ErrorCode
from ..classic_group.groups import ClassicGroups
from ..classic_group.metadata import Group
from ..config import CoordinatorConfig
from ..consumer_group.group import ConsumerGroup, GroupSettings
from ..consumer_group.service import ConsumerGroups
from ..consumer_group.subscriptions import Topics
from ..group_base.classic_api import JoinCallback, JoinRequest, JoinResult, LeavingMember, SyncCallback, \
    SyncRequest, SyncResult
from ..group_base.rebalance import RebalanceHook
from ..group_base.timers import TimerQueue
from ..placement import offsets_partition_for
from ..storage.group_store import GroupStore
from .migration import downgraded, upgraded
from .retention import cancel_cleanup, schedule_cleanup

__all__ = ["GroupCoordinator", "JoinRequest", "LeavingMember", "SyncRequest"]

log = logging.getLogger("groupclient.coordinator.group")

E = ErrorCode


class GroupCoordinator:
    """The groups of both kinds one node coordinates (see the module's docstring)."""

    def __init__(
        self,
        config: CoordinatorConfig,
        store: GroupStore[ConsumerGroup],
        node_id: int,
        new_member_id: Callable[[str], str],
        new_consumer_member_id: Callable[[], str] | None = None,
        on_rebalance: RebalanceHook | None = None,
        cluster_topics: Callable[[], Topics] | None = None,
    ) -> None:
        """``new_member_id(client_id)`` names a classic member, ``new_consumer_member_id()`` a
        consumer-protocol member that joins without an id (v0; a random UUID, as Kafka's);
        ``on_rebalance`` is told of each new generation and group epoch (the metrics');
        ``cluster_topics()``, the cluster's topics now (names to ids and partition counts)."""
        self.config = config
        self.store = store
        self.node_id = node_id
        self.owned_partitions: set[int] = set()
        self.timers = TimerQueue()
        self.classic = ClassicGroups(config, store, self.timers, node_id, new_member_id, on_rebalance)
        self.groups: dict[str, Group] = self.classic.groups  # the classic groups, by id
        # the consumer-protocol groups: same ids namespace, same timers, same partitions
        self.consumer = ConsumerGroups(config, store, self.timers, self.is_coordinator_for, self,
                                       new_consumer_member_id or (lambda: new_member_id("")[1:]), on_rebalance,
                                       cluster_topics)

    # -- placement -----------------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        """The offsets partition of a group id."""
        return offsets_partition_for(group_id, self.config.offsets_topic_partitions)

    def is_coordinator_for(self, group_id: str) -> bool:
        """Whether this node leads the group id's offsets partition."""
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
        """When :meth:`on_timer` is next due (None: no deadline)."""
        return self.timers.next_deadline()

    def on_timer(self, now: int) -> int:
        """Run the due deadlines of both kinds of group; how many ran."""
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
            self.classic.load(group_id, self.store.groups.get(group_id), self.store.offsets.get(group_id, {}), now)
            loaded.append(group_id)
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
        self.classic.unload(unloaded, shutting_down)
        return unloaded

    def unload_all(self, shutting_down: bool = False) -> None:
        """Stop coordinating every offsets partition this node leads."""
        for partition in sorted(self.owned_partitions):
            self.unload_partition(partition, shutting_down)

    # -- groups changing protocol (consumer_group/service.py asks, migration.py converts) --
    def is_classic_group(self, group_id: str) -> bool:
        """Whether a classic group of that id is served here."""
        return group_id in self.groups

    def upgrade_classic(self, group_id: str, settings: GroupSettings, topics: Topics, now: int) -> ConsumerGroup | None:
        """The consumer group the classic group of that id becomes, or None if it had no members
        (either way the classic group is gone); HeartbeatError with Kafka's refusal."""
        classic = self.groups[group_id]
        if not classic.members:
            log.info("group %s: the empty classic group becomes a consumer group", group_id)
            self.classic.retire(group_id, "its id now names a consumer group")
            return None
        group = upgraded(classic, settings, topics, now)
        self.classic.retire(group_id, "upgraded to a consumer group")
        log.info("group %s: the classic group of %d members becomes a consumer group at epoch %d",
                 group_id, len(group.members), group.epoch)
        return group

    def downgrade_to_classic(self, group: ConsumerGroup, name_of: Callable[[uuid.UUID], str | None],
                             generation: int, now: int, rebalance: bool = True) -> None:
        """Serve a classic group made of the consumer group's classic members, Stable at
        ``generation``, and rebalance it (or not)."""
        classic = downgraded(group, name_of, generation)
        log.info("group %s: only classic members are left: it becomes a classic group of %d members%s",
                 group.group_id, len(classic.members), "" if rebalance else ", without a rebalance")
        self.classic.adopt(classic, now, rebalance)

    def drop_group(self, group: Group, reason: str) -> None:
        """Delete an Empty classic group: Dead, gone from memory, a tombstone for it and its offsets."""
        self.classic.drop(group, reason)

    # -- the classic APIs: a consumer group's id goes to its classic members --------------
    def join_group(self, req: JoinRequest, now: int, callback: JoinCallback, topics: Topics | None = None) -> None:
        """``topics``: the cluster's topics (names to ids), for a join to a consumer group's id."""
        error = self.check_group(req.group_id)
        if error:
            return callback(JoinResult(error, req.member_id))
        if (joined := self.consumer.classic_join(req, now, topics or {})) is not None:
            return callback(joined)
        self.classic.join(req, now, callback)

    def sync_group(self, req: SyncRequest, now: int, callback: SyncCallback) -> None:
        """A SyncGroup, answered through ``callback``."""
        error = self.check_group(req.group_id)
        if error:
            return callback(SyncResult(error))
        if (synced := self.consumer.classic_sync(req, now)) is not None:
            return callback(synced)
        self.classic.sync(req, now, callback)

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None,
                  generation_id: int, now: int) -> ErrorCode:
        """A Heartbeat's answer."""
        error = self.check_group(group_id)
        if error:
            return error
        if (answered := self.consumer.classic_heartbeat(group_id, member_id, instance_id, generation_id,
                                                        now)) is not None:
            return answered
        return self.classic.heartbeat(group_id, member_id, instance_id, generation_id, now)

    def leave_group(self, group_id: str, leaving: list[LeavingMember],
                    now: int) -> tuple[ErrorCode, list[tuple[LeavingMember, ErrorCode]]]:
        """A LeaveGroup: the group's error, and each leaving member's."""
        error = self.check_group(group_id)
        if error:
            return error, []
        if (left := self.consumer.classic_leave(group_id, leaving, now)) is not None:
            return E.NONE, left
        return self.classic.leave(group_id, leaving, now)
