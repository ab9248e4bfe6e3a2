"""AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92): an administrator moves where a
share group's partitions start, or forgets them for whole topics, as Kafka 4.4 answers.  Only an
empty share group (no members) may be changed: NON_EMPTY_GROUP "The group is not empty.", and the
id of another kind of group is GROUP_ID_NOT_FOUND "Group X is not a share group.", both top-level.

- Alter: a group that does not exist is created (empty); each partition asked starts afresh at the
  offset given (what the share-partition held is dropped); a topic or partition that does not exist
  is UNKNOWN_TOPIC_OR_PARTITION with Kafka's message.
- Delete: a group that does not exist is GROUP_ID_NOT_FOUND "Group X not found."; each topic's
  share-partitions go, so the next fetch starts them again from ``share.auto.offset.reset``; a
  topic that does not exist, or that the group has no state for, is UNKNOWN_TOPIC_OR_PARTITION
  ("This server does not host this topic-partition." / "There is no offset information to
  delete.")."""

from __future__ import annotations

import uuid
from typing import Any

from ...error_codes import ErrorCode
from ...protocol.share_group import AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsResponse
from .context import Handler, RequestContext
from .share_acks import NOT_HOSTED

AlterTopic = AlterShareGroupOffsetsResponse.AlterShareGroupOffsetsResponseTopic
AlterPartition = AlterTopic.AlterShareGroupOffsetsResponsePartition
DeleteTopic = DeleteShareGroupOffsetsResponse.DeleteShareGroupOffsetsResponseTopic
NO_TOPIC = uuid.UUID(int=0)
NOTHING_TO_DELETE = "There is no offset information to delete."


def _refusal(ctx: RequestContext, group_id: str, must_exist: bool) -> tuple[ErrorCode, str | None] | None:
    """Why the group cannot be changed (None: it can)."""
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID, None
    if ctx.core.coordinator_node_for(group_id) is not ctx.node:
        return ErrorCode.NOT_COORDINATOR, None
    coordinator = ctx.node.coordinator
    if coordinator.is_classic_group(group_id) or coordinator.consumer.is_consumer_group(group_id):
        return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
    group = ctx.core.share_groups.groups.get(group_id)
    if group is None and must_exist:
        return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
    if group is not None:
        group.expire(ctx.now)
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP, "The group is not empty."
    return None


async def handle_alter(ctx: RequestContext, req: Any) -> Any:
    refused = _refusal(ctx, req.group_id, must_exist=False)
    if refused is not None:
        return alter_error(req, *refused)
    shares = ctx.core.share_groups
    if req.group_id not in shares.groups:
        shares.create(req.group_id)
    ids = ctx.core.topics.ids_and_counts()
    topics = []
    for topic in req.topics:
        topic_id, count = ids.get(topic.topic_name, (NO_TOPIC, 0))
        partitions = []
        for p in topic.partitions:
            if p.partition_index < 0 or p.partition_index >= count:
                partitions.append(AlterPartition(partition_index=p.partition_index, error_code=int(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), error_message=NOT_HOSTED))
                continue
            shares.start_again(req.group_id, topic_id, p.partition_index, p.start_offset)
            partitions.append(AlterPartition(partition_index=p.partition_index, error_code=0, error_message=None))
        topics.append(AlterTopic(topic_name=topic.topic_name, topic_id=topic_id, partitions=partitions))
    return AlterShareGroupOffsetsResponse(version=req.version, throttle_time_ms=0, error_code=0, error_message=None,
                                          responses=topics)


def alter_error(req: Any, error: ErrorCode, message: str | None = None) -> Any:
    return AlterShareGroupOffsetsResponse(version=req.version, throttle_time_ms=0, error_code=int(error),
                                          error_message=message, responses=[])


async def handle_delete(ctx: RequestContext, req: Any) -> Any:
    refused = _refusal(ctx, req.group_id, must_exist=True)
    if refused is not None:
        return delete_error(req, *refused)
    shares = ctx.core.share_groups
    ids = ctx.core.topics.ids_and_counts()
    topics = []
    for topic in req.topics:
        if topic.topic_name not in ids:
            topics.append(DeleteTopic(topic_name=topic.topic_name, topic_id=NO_TOPIC, error_code=int(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), error_message=NOT_HOSTED))
            continue
        topic_id = ids[topic.topic_name][0]
        held = [p for t, p in shares.partitions_of(req.group_id) if t == topic_id]
        for index in held:
            shares.forget(req.group_id, topic_id, index)
        error, message = (ErrorCode.NONE, None) if held else (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NOTHING_TO_DELETE)
        topics.append(DeleteTopic(topic_name=topic.topic_name, topic_id=topic_id, error_code=int(error),
                                  error_message=message))
    return DeleteShareGroupOffsetsResponse(version=req.version, throttle_time_ms=0, error_code=0, error_message=None,
                                           responses=topics)


def delete_error(req: Any, error: ErrorCode, message: str | None = None) -> Any:
    return DeleteShareGroupOffsetsResponse(version=req.version, throttle_time_ms=0, error_code=int(error),
                                           error_message=message, responses=[])


ALTER = Handler(handle_alter, alter_error)
DELETE = Handler(handle_delete, delete_error)
