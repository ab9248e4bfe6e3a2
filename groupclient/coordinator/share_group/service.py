"""The cluster's share groups: their membership (:mod:`.group`), their share-partitions
(:mod:`.partition`) and the share sessions of their members, as Kafka's group coordinator and
``SharePartitionManager`` keep them.  Sans-IO (``now`` is given; the handlers do the waiting), and on
the cluster's event loop thread only, so nothing here is locked.

Share sessions (Kafka's ``ShareSessionCache``, which each broker keeps for itself), one per (node,
group, member): a member fetching from three leaders has three sessions, each with its own epoch:

- a ShareFetch at epoch 0 opens one with the partitions it names (any earlier one is dropped,
  without releasing what it held), and the session's epoch becomes 1;
- each later ShareFetch or ShareAcknowledge must carry the session's epoch, which then moves on
  (SHARE_SESSION_NOT_FOUND without a session, INVALID_SHARE_SESSION_EPOCH for another epoch); a
  ShareFetch adds the partitions it names and drops the ones it forgets, and fetches from all;
- epoch -1 closes it, and so does the connection it was last used on closing (Kafka's
  disconnect listener): the records its member holds in the session's partitions are released,
  their deliveries counted.

A share-partition starts, the first time a group fetches it, at the offset the group's
``share.auto.offset.reset`` gives (latest: the end of the log; earliest; by_duration).  What it
has finished, released or archived is kept in the cluster's group store after every change
(:meth:`SharePartition.persisted`: acquisitions are not), so a restart with a data dir, or another
node taking over, goes on from there; so does each share group, Empty (sessions and memberships
start again).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ...error_codes import ErrorCode
from ..config import CoordinatorConfig
from ...protocol.share_group import CLOSE_SESSION_EPOCH, OPEN_SESSION_EPOCH
from ..group_base.configs import broker_value, duration_ns, effective_int
from .group import ShareAnswer, ShareGroup, ShareGroupSettings, ShareHeartbeatError, validate
from .partition import SharePartition, ShareSettings

TopicPartitionId = tuple[uuid.UUID, int]
SessionKey = tuple[int, str, str]  # (node, group, member)


@dataclass
class ShareSession:
    """One member's share session: its epoch and partitions (in the order they came), and those
    added since the last answer (answered even when they bring nothing)."""

    epoch: int
    partitions: list[TopicPartitionId] = field(default_factory=list)
    fresh: set[TopicPartitionId] = field(default_factory=set)

    def add(self, partitions: list[TopicPartitionId]) -> None:
        """Fetch from these too."""
        for tp in partitions:
            if tp not in self.partitions:
                self.partitions.append(tp)
                self.fresh.add(tp)

    def forget(self, partitions: list[TopicPartitionId]) -> None:
        """Stop fetching from these."""
        self.partitions = [tp for tp in self.partitions if tp not in set(partitions)]
        self.fresh -= set(partitions)


class ShareStateStore(Protocol):
    """Where share groups' configs and share-partitions are kept (the cluster's GroupStore)."""

    group_configs: dict[str, dict[str, str]]
    share_states: dict[tuple[str, str, int], tuple[int, list[list[int]]]]
    share_groups: set[str]

    def put_share_group(self, group_id: str) -> None:
        """A share group exists."""

    def delete_share_group(self, group_id: str) -> None:
        """A share group is gone."""

    def put_share_state(self, group_id: str, topic_id: str, partition: int, start_offset: int,
                        ranges: list[tuple[int, int, int, int]]) -> None:
        """Keep a share-partition's state."""

    def delete_share_state(self, group_id: str, topic_id: str, partition: int) -> None:
        """Forget a share-partition's state."""


class SessionError(Exception):
    """A share session refused: the request's top-level error."""

    def __init__(self, error: ErrorCode) -> None:
        super().__init__(error.name)
        self.error = error


def next_epoch(epoch: int) -> int:
    """Kafka's ``ShareRequestMetadata.nextEpoch``."""
    return CLOSE_SESSION_EPOCH if epoch < 0 else 1 if epoch == 2**31 - 1 else epoch + 1


class ShareGroups:
    """Every share group of the cluster, its share-partitions and its members' share sessions."""

    def __init__(self, config: CoordinatorConfig, store: ShareStateStore) -> None:
        """``store``: each group's own configs (read live) and where share-partitions are kept."""
        self.config = config
        self._store = store
        self._configs: Mapping[str, Mapping[str, str]] = store.group_configs
        self.groups: dict[str, ShareGroup] = {}
        self.partitions: dict[tuple[str, uuid.UUID, int], SharePartition] = {}
        self.sessions: dict[SessionKey, ShareSession] = {}
        self._connections: dict[object, set[SessionKey]] = {}  # the sessions last used on each connection
        self._connection_of: dict[SessionKey, object] = {}
        for group_id in sorted(store.share_groups):  # kept from before a restart: Empty until members come
            self.groups[group_id] = ShareGroup(group_id, self.group_settings(group_id))

    # -- settings ----------------------------------------------------------------------------------
    def _int(self, group_id: str, name: str) -> int:
        return effective_int(self._configs.get(group_id, {}), name, self.config)

    def group_settings(self, group_id: str) -> ShareGroupSettings:
        """What a share group's membership is held to (its share.* configs, else Kafka's)."""
        return ShareGroupSettings(self._int(group_id, "share.heartbeat.interval.ms"),
                                  self._int(group_id, "share.session.timeout.ms"), 200,
                                  self._int(group_id, "share.assignment.interval.ms"))

    def partition_settings(self, group_id: str) -> ShareSettings:
        """What a share group's share-partitions are held to."""
        renew = self._configs.get(group_id, {}).get("share.renew.acknowledge.enable",
                                                    broker_value("share.renew.acknowledge.enable", self.config))
        return ShareSettings(self._int(group_id, "share.record.lock.duration.ms"),
                             self._int(group_id, "share.delivery.count.limit"),
                             self._int(group_id, "share.partition.max.record.locks"),
                             (renew or "true").strip().lower() == "true")

    # -- membership --------------------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                  topics: list[str] | None, client_id: str, client_host: str, now: int,
                  partitions: Mapping[str, int]) -> ShareAnswer:
        """One ShareGroupHeartbeat; ShareHeartbeatError with Kafka's refusal."""
        validate(group_id, member_id, member_epoch, rack_id, topics)
        group = self.groups.get(group_id)
        if group is None:
            if member_epoch == -1:
                raise ShareHeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
            if member_epoch != 0:
                raise ShareHeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
            group = self.create(group_id)
        group.settings = self.group_settings(group_id)
        group.expire(now)
        return group.heartbeat(member_id, member_epoch, rack_id, topics, client_id, client_host, now, partitions)

    def expire(self, now: int) -> None:
        """Members whose session ended, removed (their records stay locked until the locks run out)."""
        for group in self.groups.values():
            group.expire(now)

    def create(self, group_id: str) -> ShareGroup:
        """A new, empty share group (kept: it exists after a restart)."""
        group = self.groups[group_id] = ShareGroup(group_id, self.group_settings(group_id))
        self._store.put_share_group(group_id)
        return group

    def delete(self, group_id: str) -> ErrorCode:
        """DeleteGroups of a share group without members: it goes, with its share-partitions."""
        self.groups.pop(group_id, None)
        self._store.delete_share_group(group_id)
        for topic_id, index in self.partitions_of(group_id):
            self.forget(group_id, topic_id, index)
        return ErrorCode.NONE

    def forget(self, group_id: str, topic_id: uuid.UUID, index: int) -> None:
        """A share-partition's state goes (the next fetch starts it from share.auto.offset.reset)."""
        self.partitions.pop((group_id, topic_id, index), None)
        self._store.delete_share_state(group_id, str(topic_id), index)

    def start_again(self, group_id: str, topic_id: uuid.UUID, index: int, start_offset: int) -> None:
        """AlterShareGroupOffsets: the share-partition starts afresh at ``start_offset``."""
        partition = self.partitions[(group_id, topic_id, index)] = SharePartition(
            start_offset, self.partition_settings(group_id))
        partition.reported_start = start_offset
        self.persist(group_id, topic_id, index)

    # -- share sessions ----------------------------------------------------------------------------
    def fetch_session(self, node_id: int, group_id: str, member_id: str, epoch: int, added: list[TopicPartitionId],
                      forgotten: list[TopicPartitionId]) -> ShareSession:
        """The session a ShareFetch to ``node_id`` goes on (opened at epoch 0, moved on otherwise);
        the final one is returned as it is, for :meth:`close_session` after its acknowledgements."""
        key = (node_id, group_id, member_id)
        if epoch == OPEN_SESSION_EPOCH:
            opened = self.sessions[key] = ShareSession(1)
            opened.add(added)
            return opened
        session = self.sessions.get(key)
        if session is None:
            raise SessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
        if epoch == CLOSE_SESSION_EPOCH:
            return session
        if epoch != session.epoch:
            raise SessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        session.add(added)
        session.forget(forgotten)
        session.epoch = next_epoch(epoch)
        return session

    def acknowledge_session(self, node_id: int, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """The session a ShareAcknowledge to ``node_id`` goes on (moved on, unless it is the final one)."""
        if epoch == OPEN_SESSION_EPOCH:
            raise SessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        session = self.sessions.get((node_id, group_id, member_id))
        if session is None:
            raise SessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
        if epoch != CLOSE_SESSION_EPOCH:
            if epoch != session.epoch:
                raise SessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
            session.epoch = next_epoch(epoch)
        return session

    def used_on(self, node_id: int, group_id: str, member_id: str, connection: object) -> None:
        """The member's session with ``node_id`` was just used on ``connection``: it ends when that
        connection does."""
        key = (node_id, group_id, member_id)
        if key not in self.sessions or connection is None:
            return
        before = self._connection_of.get(key)
        if before is not connection:
            if before is not None:
                self._connections.get(before, set()).discard(key)
            self._connection_of[key] = connection
            self._connections.setdefault(connection, set()).add(key)

    def connection_closed(self, connection: object) -> None:
        """A connection closed: the share sessions last used on it end."""
        for node_id, group_id, member_id in sorted(self._connections.pop(connection, set())):
            self._connection_of.pop((node_id, group_id, member_id), None)
            self.close_session(node_id, group_id, member_id)

    def close_session(self, node_id: int, group_id: str, member_id: str) -> None:
        """The member's session with ``node_id`` ends: what it holds in the session's partitions
        is released."""
        key = (node_id, group_id, member_id)
        connection = self._connection_of.pop(key, None)
        if connection is not None:
            self._connections.get(connection, set()).discard(key)
        session = self.sessions.pop(key, None)
        for topic_id, index in session.partitions if session is not None else ():
            partition = self.partitions.get((group_id, topic_id, index))
            if partition is not None:
                partition.release_member(member_id)
                self.persist(group_id, topic_id, index)

    # -- share-partitions --------------------------------------------------------------------------
    def share_partition(self, group_id: str, topic_id: uuid.UUID, index: int, start: Callable[[str], int | None]
                        ) -> SharePartition | None:
        """The group's share-partition, started (the first time) at ``start(reset)`` for the group's
        ``share.auto.offset.reset`` (None: no offset found, nothing started)."""
        key = (group_id, topic_id, index)
        partition = self.known_partition(group_id, topic_id, index)
        if partition is None:
            reset = self._configs.get(group_id, {}).get("share.auto.offset.reset", "latest").strip().lower()
            offset = start(reset)
            if offset is None:
                return None
            partition = self.partitions[key] = SharePartition(offset, self.partition_settings(group_id))
        partition.settings = self.partition_settings(group_id)
        return partition

    def known_partition(self, group_id: str, topic_id: uuid.UUID, index: int) -> SharePartition | None:
        """The group's share-partition if it was ever fetched (here, or before a restart)."""
        key = (group_id, topic_id, index)
        partition = self.partitions.get(key)
        kept = self._store.share_states.get((group_id, str(topic_id), index))
        if partition is None and kept is not None:
            partition = self.partitions[key] = SharePartition.restored(kept[0], kept[1],
                                                                       self.partition_settings(group_id))
        if partition is not None:
            partition.settings = self.partition_settings(group_id)  # as the group's configs are now
        return partition

    def partitions_of(self, group_id: str) -> list[TopicPartitionId]:
        """Every share-partition the group has state for (here, or kept from before a restart)."""
        kept = {(uuid.UUID(t), p) for g, t, p in self._store.share_states if g == group_id}
        return sorted(kept | {(t, p) for g, t, p in self.partitions if g == group_id})

    def persist(self, group_id: str, topic_id: uuid.UUID, index: int) -> None:
        """Keep what a share-partition has settled (the store writes only a change)."""
        partition = self.partitions.get((group_id, topic_id, index))
        if partition is not None:
            self._store.put_share_state(group_id, str(topic_id), index, *partition.persisted())


def reset_duration_ms(reset: str) -> int | None:
    """How far back a ``by_duration:`` reset reaches, in ms (None: not such a reset)."""
    if not reset.lower().startswith("by_duration:"):
        return None
    nanos = duration_ns(reset[len("by_duration:"):])
    return None if nanos is None else nanos // 1_000_000
