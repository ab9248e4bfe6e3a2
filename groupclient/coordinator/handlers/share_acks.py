"""Acknowledgements of share-group records, as ShareFetch (78) carries them on the way and
ShareAcknowledge (79) carries them alone: each partition's batches checked as Kafka's broker checks
them, then applied all or nothing to the group's share-partition (``share_group/partition.py``).

A partition's batches are refused with INVALID_REQUEST and no message (Kafka's
``validateAcknowledgementBatches``) when a batch ends before it starts, starts before the previous
one ended, has no types, has several types that do not match its length, or has a type outside
0-3 (0-4 from version 2, 4 only when the request says it renews).  An unknown topic id is
UNKNOWN_TOPIC_ID; a partition the topic lacks, or that the group never fetched, is
UNKNOWN_TOPIC_OR_PARTITION."""

from __future__ import annotations

import uuid
from typing import Any

from ...error_codes import ErrorCode
from ..share_group.partition import AckBatch, AcknowledgeError
from .context import RequestContext

Outcome = tuple[ErrorCode, str | None]
NOT_HOSTED = "This server does not host this topic-partition."
MAX_MEMBER_ID = 36  # Kafka's KafkaApis.isMemberIdValid


def valid_member(req: Any) -> bool:
    """Kafka's broker checks of a share request's ids (INVALID_REQUEST, no message, otherwise): a
    group id, and a member id of 1 to 36 characters."""
    return req.group_id is not None and bool(req.member_id) and len(req.member_id) <= MAX_MEMBER_ID


def check_batches(batches: list[Any], version: int, renewing: bool) -> list[AckBatch] | None:
    """The batches as the share-partition takes them, or None if Kafka's broker refuses them."""
    checked = []
    previous_end = -1
    highest = 4 if version >= 2 else 3
    for batch in batches:
        types = list(batch.acknowledge_types or [])
        if batch.first_offset > batch.last_offset or batch.first_offset < previous_end or not types:
            return None
        if len(types) > 1 and batch.last_offset - batch.first_offset != len(types) - 1:
            return None
        if any(t < 0 or t > highest or (t == 4 and not renewing) for t in types):
            return None
        previous_end = batch.last_offset
        checked.append(AckBatch(batch.first_offset, batch.last_offset, tuple(types)))
    return checked


def acknowledge(ctx: RequestContext, group_id: str, member_id: str, topics: list[Any], version: int,
                renewing: bool) -> dict[tuple[uuid.UUID, int], Outcome]:
    """Apply every partition's acknowledgements: (error, message) by (topic id, partition), for
    the partitions that carried any."""
    outcomes: dict[tuple[uuid.UUID, int], Outcome] = {}
    for topic in topics:
        name = ctx.core.topics.name_of(topic.topic_id)
        for partition in topic.partitions:
            batches = list(partition.acknowledgement_batches or [])
            if not batches:
                continue
            key = (topic.topic_id, partition.partition_index)
            checked = check_batches(batches, version, renewing)
            if checked is None:
                outcomes[key] = (ErrorCode.INVALID_REQUEST, None)
            elif name is None:
                outcomes[key] = (ErrorCode.UNKNOWN_TOPIC_ID, None)
            elif ctx.core.topics.partition(name, partition.partition_index) is None:
                outcomes[key] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
            else:
                outcomes[key] = _apply(ctx, group_id, member_id, key, checked)
    return outcomes


def _apply(ctx: RequestContext, group_id: str, member_id: str, key: tuple[uuid.UUID, int],
           batches: list[AckBatch]) -> Outcome:
    share_partition = ctx.core.share_groups.known_partition(group_id, *key)
    if share_partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED
    try:
        share_partition.acknowledge(member_id, batches, ctx.now)
    except AcknowledgeError as refused:
        return refused.error, refused.message
    finally:
        ctx.core.share_groups.persist(group_id, *key)  # locks that ran out meanwhile, if nothing else
    return ErrorCode.NONE, None
