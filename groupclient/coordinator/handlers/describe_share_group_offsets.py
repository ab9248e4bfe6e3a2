"""DescribeShareGroupOffsets (90): where each share-partition of a share group starts, and (v1) its
lag: the records from the start offset to the end of the log not yet finished.  As Kafka 4.4
answers it: the start offset is the one its share coordinator last wrote, which trails by one
change (written with each acknowledgement as it stood before that acknowledgement moved it; -1
before the first); the group need not exist; no topics asked (null) means every partition the
group has state for; a partition without state, or of a topic that does not exist, starts at -1
with lag -1 and no error."""

from __future__ import annotations

import uuid
from typing import Any

from ...error_codes import ErrorCode
from ...protocol.share_group import DescribeShareGroupOffsetsResponse
from .context import Handler, RequestContext

Group = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseGroup
Topic = Group.DescribeShareGroupOffsetsResponseTopic
Partition = Topic.DescribeShareGroupOffsetsResponsePartition
NO_TOPIC = uuid.UUID(int=0)
UNKNOWN = -1


def _partition(ctx: RequestContext, group_id: str, topic: str, topic_id: uuid.UUID, index: int) -> Any:
    share_partition = ctx.core.share_groups.known_partition(group_id, topic_id, index)
    log = ctx.core.topics.partition(topic, index) if topic_id != NO_TOPIC else None
    if share_partition is None or log is None:
        return Partition(partition_index=index, start_offset=UNKNOWN, leader_epoch=0, lag=UNKNOWN, error_code=0,
                         error_message=None)
    start = share_partition.reported_start
    return Partition(partition_index=index, start_offset=start, leader_epoch=0,
                     lag=UNKNOWN if start == UNKNOWN else share_partition.lag(log.high_watermark), error_code=0,
                     error_message=None)


def _group(ctx: RequestContext, asked: Any) -> Any:
    group_id = asked.group_id
    if ctx.core.coordinator_node_for(group_id) is not ctx.node:
        return Group(group_id=group_id, topics=[], error_code=int(ErrorCode.NOT_COORDINATOR), error_message=None)
    ids = ctx.core.topics.ids_and_counts()
    if asked.topics is None:  # every partition the group has state for
        wanted: dict[str, list[int]] = {}
        for topic_id, index in ctx.core.share_groups.partitions_of(group_id):
            name = ctx.core.topics.name_of(topic_id)
            if name is not None:
                wanted.setdefault(name, []).append(index)
    else:
        wanted = {t.topic_name: list(t.partitions) for t in asked.topics}
    topics = []
    for name, indexes in wanted.items():
        topic_id = ids[name][0] if name in ids else NO_TOPIC
        topics.append(Topic(topic_name=name, topic_id=topic_id, partitions=[
            _partition(ctx, group_id, name, topic_id, index) for index in sorted(indexes)]))
    return Group(group_id=group_id, topics=topics, error_code=0, error_message=None)


async def handle(ctx: RequestContext, req: Any) -> Any:
    return DescribeShareGroupOffsetsResponse(version=req.version, throttle_time_ms=0,
                                             groups=[_group(ctx, g) for g in req.groups])


def error_response(req: Any, error: ErrorCode) -> Any:
    return DescribeShareGroupOffsetsResponse(version=req.version, throttle_time_ms=0, groups=[
        Group(group_id=g.group_id, topics=[], error_code=int(error), error_message=None) for g in req.groups])


HANDLER = Handler(handle, error_response)
