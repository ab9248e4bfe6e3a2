"""OffsetCommit and OffsetFetch, fenced by generation and member (Kafka's handleCommitOffsets): a
classic group's by its rules, a consumer group's by :mod:`..consumer_group.offset_rules`."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from ...error_codes import ErrorCode
from ..classic_group.metadata import Group
from ..classic_group.state import GroupState
from ..consumer_group.offset_rules import offset_commit_error, offset_fetch_error
from ..storage.group_store import CommittedOffset, TopicPartition
from .coordinator import GroupCoordinator

E = ErrorCode
S = GroupState


@dataclass(frozen=True)
class OffsetToCommit:
    """One partition's offset an OffsetCommit carries."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = None
    topic_id: uuid.UUID | None = None  # the topic's id where known (a consumer group's commit is fenced by it)


def commit_offsets(
    coordinator: GroupCoordinator,
    group_id: str,
    generation_id: int,
    member_id: str,
    instance_id: str | None,
    offsets: list[OffsetToCommit],
    wall_ms: int,
    now: int,
    api_version: int = 9,
) -> dict[TopicPartition, ErrorCode]:
    """Validate and store a commit; the result holds one error code per partition."""
    error = coordinator.check_group(group_id)
    group = coordinator.groups.get(group_id)
    consumer_group = coordinator.consumer.get(group_id) if not error else None
    limit = coordinator.config.offset_metadata_max_bytes
    too_large = {(o.topic, o.partition) for o in offsets if o.metadata is not None and len(o.metadata.encode()) > limit}
    if consumer_group is not None:
        # a partition whose metadata is too large is refused as such, not checked (Kafka's order)
        checked = [(o.topic_id, o.partition) for o in offsets if (o.topic, o.partition) not in too_large]
        error = offset_commit_error(consumer_group, member_id, generation_id, api_version, checked)
    elif not error:
        if group is None:
            if generation_id < 0:
                # a "simple" commit: the group only uses the coordinator to store offsets
                group = coordinator.groups[group_id] = Group(group_id, empty_since_ms=now)
            else:
                # a member epoch (v9) names a consumer-protocol group that is not there
                error = E.GROUP_ID_NOT_FOUND if api_version >= 9 else E.ILLEGAL_GENERATION
        if group is not None:
            error = _member_may_commit(coordinator, group, generation_id, member_id, instance_id, now)
    results: dict[TopicPartition, ErrorCode] = {}
    accepted: dict[TopicPartition, CommittedOffset] = {}
    for o in offsets:
        tp = (o.topic, o.partition)
        if error:
            results[tp] = error
        elif tp in too_large:
            results[tp] = E.OFFSET_METADATA_TOO_LARGE
        else:
            accepted[tp] = CommittedOffset(o.offset, o.leader_epoch, o.metadata, wall_ms)
            results[tp] = E.NONE
    coordinator.store.put_offsets(group_id, accepted)
    # for offsets retention (retention.py)
    committer = consumer_group if consumer_group is not None else group
    if committer is not None:
        committer.offset_commit_ms.update(dict.fromkeys(accepted, now))
    return results


def _member_may_commit(coordinator: GroupCoordinator, group: Group, generation_id: int,
                       member_id: str, instance_id: str | None, now: int) -> ErrorCode:
    """Kafka's ClassicGroup.validateOffsetCommit, in its order: who commits is checked before
    the group's state, so a stale or unknown member never hears REBALANCE_IN_PROGRESS."""
    if group.is_in(S.DEAD):
        return E.COORDINATOR_NOT_AVAILABLE
    if generation_id < 0 and group.is_in(S.EMPTY):
        # a "simple" commit (admin tools, manually assigned consumers); Kafka 4.x accepts it
        # on an Empty group whatever member id it carries
        return E.NONE
    if generation_id >= 0 or member_id or instance_id is not None:
        error = _validate_member(group, member_id, instance_id)
        if error:
            return error
        if generation_id != group.generation_id:
            return E.ILLEGAL_GENERATION
    elif not group.is_in(S.EMPTY):
        # no member id and no generation: only a group without members takes such commits
        return E.UNKNOWN_MEMBER_ID
    if group.is_in(S.COMPLETING_REBALANCE):
        # a current member that has its JoinGroup answer but not yet its assignment
        return E.REBALANCE_IN_PROGRESS
    # Stable or PreparingRebalance: a commit is proof of life, as in Kafka
    member = group.get(member_id)
    if not member.awaiting_join:
        coordinator.heartbeat(group.group_id, member_id, instance_id, generation_id, now)
    return E.NONE


def _validate_member(group: Group, member_id: str, instance_id: str | None) -> ErrorCode:
    """Kafka's ClassicGroup.validateMember."""
    if instance_id is not None:
        known = group.static_member_id(instance_id)
        if known is None:
            return E.UNKNOWN_MEMBER_ID
        if known != member_id:
            return E.FENCED_INSTANCE_ID
    return E.NONE if group.has(member_id) else E.UNKNOWN_MEMBER_ID


def fetch_offsets(
    coordinator: GroupCoordinator,
    group_id: str,
    partitions: list[TopicPartition] | None,
    member_id: str | None = None,
    member_epoch: int = -1,
) -> tuple[ErrorCode, dict[TopicPartition, CommittedOffset | None]]:
    """Committed offsets of a group; ``partitions=None`` means all it has.  A consumer-protocol
    group's member asks with its id and epoch (OffsetFetch v9)."""
    error = coordinator.check_group(group_id)
    consumer_group = coordinator.consumer.get(group_id) if not error else None
    if consumer_group is not None:
        error = offset_fetch_error(consumer_group, member_id, member_epoch)
    if error:
        return error, {}
    table = coordinator.store.offsets.get(group_id, {})
    if partitions is None:
        return E.NONE, dict(sorted(table.items()))
    return E.NONE, {tp: table.get(tp) for tp in partitions}
