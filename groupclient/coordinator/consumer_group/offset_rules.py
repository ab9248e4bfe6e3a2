"""Who may commit and fetch a consumer-protocol group's offsets (Kafka 4.1's
``ConsumerGroup.validateOffsetCommit`` and ``validateOffsetFetch``): a member at its current epoch
exactly (no previous-epoch allowance; a static member that left is at epoch -2); or anyone
committing with a negative epoch while the group has no members (an admin tool, a consumer that
assigns its own partitions); or anyone fetching with no member id (null, not "") and a negative
epoch.  A commit is no heartbeat here, as in Kafka."""

from __future__ import annotations

from ...error_codes import ErrorCode
from .group import ConsumerGroup, Member

E = ErrorCode


def _epoch_error(member: Member, epoch: int) -> ErrorCode:
    """Kafka's validateMemberEpoch: exactly the member's epoch; a classic member (which commits
    with its generation) hears ILLEGAL_GENERATION, a consumer-protocol one STALE_MEMBER_EPOCH."""
    if epoch == member.assignment.epoch:
        return E.NONE
    return E.ILLEGAL_GENERATION if member.classic is not None else E.STALE_MEMBER_EPOCH


def offset_commit_error(group: ConsumerGroup, member_id: str, epoch: int, api_version: int) -> ErrorCode:
    """The error a commit is answered on every partition, or NONE."""
    if epoch < 0 and not group.members:
        return E.NONE
    member = group.members.get(member_id)
    if member is None:
        return E.UNKNOWN_MEMBER_ID
    if api_version < 9 and member.classic is None:
        # a consumer-protocol member commits with the member epoch, which v9 brought
        return E.UNSUPPORTED_VERSION
    return _epoch_error(member, epoch)


def offset_fetch_error(group: ConsumerGroup, member_id: str | None, epoch: int) -> ErrorCode:
    """The error a fetch of the group's committed offsets is answered, or NONE."""
    if member_id is None:
        return E.NONE if epoch < 0 else E.UNKNOWN_MEMBER_ID
    member = group.members.get(member_id)
    if member is None:
        return E.UNKNOWN_MEMBER_ID
    return _epoch_error(member, epoch)
