"""Who may commit and fetch a consumer-protocol group's offsets (Kafka 4.1's
``ConsumerGroup.validateOffsetCommit`` and ``validateOffsetFetch``): a member at its current epoch
exactly (no previous-epoch allowance; a static member that left is at epoch -2); or anyone
committing with a negative epoch while the group has no members (an admin tool, a consumer that
assigns its own partitions); or anyone fetching with no member id (null, not "") and a negative
epoch.  A commit is no heartbeat here, as in Kafka."""

from __future__ import annotations

from ...error_codes import ErrorCode
from .group import ConsumerGroup

E = ErrorCode


def _member_epoch(group: ConsumerGroup, member_id: str | None) -> int | None:
    member = group.members.get(member_id) if member_id is not None else None
    return None if member is None else member.assignment.epoch


def offset_commit_error(group: ConsumerGroup, member_id: str, epoch: int, api_version: int) -> ErrorCode:
    """The error a commit is answered on every partition, or NONE."""
    if epoch < 0 and not group.members:
        return E.NONE
    current = _member_epoch(group, member_id)
    if current is None:
        return E.UNKNOWN_MEMBER_ID
    if api_version < 9:
        # a consumer-protocol member commits with the member epoch, which v9 brought
        return E.UNSUPPORTED_VERSION
    return E.NONE if epoch == current else E.STALE_MEMBER_EPOCH


def offset_fetch_error(group: ConsumerGroup, member_id: str | None, epoch: int) -> ErrorCode:
    """The error a fetch of the group's committed offsets is answered, or NONE."""
    if member_id is None and epoch < 0:
        return E.NONE
    current = _member_epoch(group, member_id)
    if current is None:
        return E.UNKNOWN_MEMBER_ID
    return E.NONE if epoch == current else E.STALE_MEMBER_EPOCH
