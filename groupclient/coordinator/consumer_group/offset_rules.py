"""Who may commit and fetch a consumer-protocol group's offsets (Kafka 4.4's
``ConsumerGroup.validateOffsetCommit`` and ``validateOffsetFetch``).

A commit is taken from a member at its current epoch; from a member at an older epoch for
partitions it holds (or is giving up) that were assigned to it at or before that epoch (Kafka 4.3's
KIP-1251: a commit sent just before the member moved on is not lost, and a commit for a partition
given to it later is refused); or from anyone committing with a negative epoch while the group
has no members (an admin tool, a consumer that assigns its own partitions).  A static member that
left is at epoch -2 and its partitions at epoch 0: its commits are fenced.  A commit at a newer
epoch, or an older one failing a partition, fails the whole commit, as in Kafka.

A fetch takes the member's exact epoch, or no member id (null, not "") and a negative epoch.  A
commit is no heartbeat here, as in Kafka.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from ...error_codes import ErrorCode
from .group import ConsumerGroup, Member

E = ErrorCode


def _stale(member: Member) -> ErrorCode:
    """A classic member (which commits with its generation) hears ILLEGAL_GENERATION, a
    consumer-protocol one STALE_MEMBER_EPOCH."""
    return E.ILLEGAL_GENERATION if member.classic is not None else E.STALE_MEMBER_EPOCH


def offset_commit_error(group: ConsumerGroup, member_id: str, epoch: int, api_version: int,
                        partitions: Iterable[tuple[uuid.UUID | None, int]] = ()) -> ErrorCode:
    """The error a commit of these partitions (topic id, partition) is answered on every
    partition, or NONE."""
    if epoch < 0 and not group.members:
        return E.NONE
    member = group.members.get(member_id)
    if member is None:
        return E.UNKNOWN_MEMBER_ID
    if api_version < 9 and member.classic is None:
        # a consumer-protocol member commits with the member epoch, which v9 brought
        return E.UNSUPPORTED_VERSION
    current = member.assignment.epoch
    if epoch == current:
        return E.NONE
    if epoch > current:
        return _stale(member)
    for topic_id, partition in partitions:
        since = None if topic_id is None else member.assignment.assigned_since(topic_id, partition)
        if since is None or epoch < since:
            return _stale(member)
    return E.NONE


def offset_fetch_error(group: ConsumerGroup, member_id: str | None, epoch: int) -> ErrorCode:
    """The error a fetch of the group's committed offsets is answered, or NONE."""
    if member_id is None:
        return E.NONE if epoch < 0 else E.UNKNOWN_MEMBER_ID
    member = group.members.get(member_id)
    if member is None:
        return E.UNKNOWN_MEMBER_ID
    return E.NONE if epoch == member.assignment.epoch else _stale(member)
