"""Offsets retention, the cleanup of Empty groups, and DeleteGroups (of either protocol's groups).

Kafka 2.1+ (KIP-211) semantics, from ``GroupMetadataManager.cleanupGroupMetadata`` and
``GroupMetadata.removeExpiredOffsets``: every ``offsets_retention_check_interval_ms`` the
coordinator expires

- all offsets of an Empty group with a protocol type, once ``offsets_retention_minutes`` have
  passed since it became Empty (a live group keeps its offsets however old);
- each offset of a group without a protocol type (it only ever had "simple" commits) once the
  retention has passed since that offset's commit;

and then deletes every Empty group with no offsets left (Dead, gone from memory and the store).

A consumer-protocol group's offsets follow Kafka 4.x's ``OffsetMetadataManager.cleanupExpiredOffsets``
instead: each offset of a topic that no member subscribes to (none, once the group is Empty)
expires once the retention has passed since its commit; a group left with no member and no
offset is deleted.

Times here are monotonic (the core gets no wall clock on its timers).  A coordinator that loads
a group (restart or failover) starts its retention clocks at the load, where Kafka would use
the stored timestamps: offsets are kept at least as long as Kafka keeps them, never shorter.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from ...error_codes import ErrorCode
from ..classic_group.metadata import Group
from ..classic_group.state import GroupState
from ..config import CoordinatorConfig
from ..consumer_group.group import ConsumerGroup
from ..consumer_group.service import ConsumerGroups
from ..group_base.timers import TimerQueue
from ..storage.group_store import GroupStore, TopicPartition

log = logging.getLogger("groupclient.coordinator.group")


class CoordinatorState(Protocol):
    """What retention uses of the group coordinator (``coordinator.GroupCoordinator``, which
    calls in here)."""

    config: CoordinatorConfig
    store: GroupStore[ConsumerGroup]
    node_id: int
    groups: dict[str, Group]
    timers: TimerQueue
    consumer: ConsumerGroups

    def check_group(self, group_id: str | None) -> ErrorCode:
        """The checks every group API starts with."""

    def drop_group(self, group: Group, reason: str) -> None:
        """Delete an Empty classic group and its offsets."""

E = ErrorCode
S = GroupState
CLEANUP_TIMER = ("offsets-retention-check",)


@dataclass(frozen=True)
class CleanupResult:
    """What one cleanup pass removed."""

    expired_offsets: int
    deleted_groups: tuple[str, ...]


def schedule_cleanup(coordinator: CoordinatorState, now: int) -> None:
    """Arm the periodic cleanup unless it is already armed."""
    if CLEANUP_TIMER not in coordinator.timers:
        _arm(coordinator, now)


def cancel_cleanup(coordinator: CoordinatorState) -> None:
    """Disarm the periodic cleanup (the node leads no offsets partition)."""
    coordinator.timers.cancel(CLEANUP_TIMER)


def _arm(coordinator: CoordinatorState, now: int) -> None:
    interval = coordinator.config.offsets_retention_check_interval_ms
    coordinator.timers.schedule(CLEANUP_TIMER, now + interval, lambda t: _run_periodic(coordinator, t))


def _run_periodic(coordinator: CoordinatorState, now: int) -> None:
    try:
        clean_up_groups(coordinator, now)
    finally:
        _arm(coordinator, now)  # a failed pass must not end the cleanup for good


def clean_up_groups(coordinator: CoordinatorState, now: int) -> CleanupResult:
    """One cleanup pass over the groups this coordinator owns."""
    retention_ms = coordinator.config.offsets_retention_minutes * 60_000
    store = coordinator.store
    expired_count = 0
    deleted: list[str] = []
    for group in list(coordinator.groups.values()):
        expired = expired_offsets(group, store.offsets.get(group.group_id, {}).keys(), now, retention_ms)
        if expired:
            store.delete_offsets(group.group_id, expired)
            for tp in expired:
                group.offset_commit_ms.pop(tp, None)
            expired_count += len(expired)
        if group.is_in(S.EMPTY) and not store.offsets.get(group.group_id):
            coordinator.drop_group(group, "Empty with no committed offsets")
            deleted.append(group.group_id)
    for consumer_group in coordinator.consumer.served():
        expired = expired_consumer_group_offsets(
            consumer_group, store.offsets.get(consumer_group.group_id, {}).keys(), now, retention_ms)
        if expired:
            store.delete_offsets(consumer_group.group_id, expired)
            for tp in expired:
                consumer_group.offset_commit_ms.pop(tp, None)
            expired_count += len(expired)
        if not consumer_group.members and not store.offsets.get(consumer_group.group_id):
            coordinator.consumer.delete(consumer_group.group_id)
            store.delete_group(consumer_group.group_id)
            deleted.append(consumer_group.group_id)
    if expired_count or deleted:
        log.info("node %d: offsets cleanup expired %d offsets and deleted %d groups",
                 coordinator.node_id, expired_count, len(deleted))
    return CleanupResult(expired_count, tuple(deleted))


def expired_offsets(group: Group, partitions: Iterable[TopicPartition], now: int,
                    retention_ms: int) -> list[TopicPartition]:
    """Those of the group's committed ``partitions`` that have outlived the retention."""
    committed = list(partitions)
    if group.protocol_type is None:
        # a standalone (simple) consumer: each offset expires from its own commit
        return [tp for tp in committed if now - group.offset_commit_ms.setdefault(tp, now) >= retention_ms]
    if group.is_in(S.EMPTY):
        if group.empty_since_ms is None:
            group.empty_since_ms = now
        if now - group.empty_since_ms >= retention_ms:
            return committed
    return []  # a group with members keeps its offsets


def expired_consumer_group_offsets(group: ConsumerGroup, partitions: Iterable[TopicPartition], now: int,
                                   retention_ms: int) -> list[TopicPartition]:
    """Those of a consumer-protocol group's committed ``partitions`` that have outlived the
    retention: committed that long ago, of a topic no member subscribes to."""
    subscribed = {topic for m in group.members.values() for topic in group.subscribed.topics_of(m)}
    return [tp for tp in partitions
            if tp[0] not in subscribed and now - group.offset_commit_ms.setdefault(tp, now) >= retention_ms]


def delete_groups(coordinator: CoordinatorState, group_ids: list[str]) -> dict[str, ErrorCode]:
    """DeleteGroups: each Empty group and its offsets go; the answer has one code per group."""
    results: dict[str, ErrorCode] = {}
    for group_id in group_ids:
        error = coordinator.check_group(group_id)
        group = coordinator.groups.get(group_id)
        consumer_group = coordinator.consumer.get(group_id) if not error else None
        if error:
            results[group_id] = error
        elif consumer_group is not None:
            # a consumer-protocol group: deleted with its offsets once it has no member (a static
            # member that left and may come back still counts, as in Kafka)
            if consumer_group.members:
                results[group_id] = E.NON_EMPTY_GROUP
            else:
                coordinator.consumer.delete(group_id)
                coordinator.store.delete_group(group_id)
                results[group_id] = E.NONE
        elif group is None or group.is_in(S.DEAD):
            results[group_id] = E.GROUP_ID_NOT_FOUND
        elif not group.is_in(S.EMPTY):
            results[group_id] = E.NON_EMPTY_GROUP
        else:
            coordinator.drop_group(group, "deleted by DeleteGroups")
            results[group_id] = E.NONE
    deleted = [g for g, e in results.items() if e is E.NONE]
    if deleted:
        log.info("node %d: groups deleted: %s", coordinator.node_id, ", ".join(deleted))
    return results
