"""ShareGroupHeartbeat (76): a share group member joins (epoch 0), heartbeats, or leaves (epoch -1);
answered at once with its epoch, the interval and, when it changed, its partitions (shared with
other members when members outnumber partitions).  The share groups are the cluster's
(``share_group/service.py``); the group's coordinator answers."""

from __future__ import annotations

import uuid
from typing import Any

from ...error_codes import ErrorCode
from ...protocol.share_group import ShareGroupHeartbeatResponse
from ..share_group.group import ShareAnswer, ShareHeartbeatError
from .context import Handler, RequestContext
from .share_acks import valid_member

Assignment = ShareGroupHeartbeatResponse.Assignment
NO_TOPIC = uuid.UUID(int=0)


def _answer(req: Any, answer: ShareAnswer, ids: dict[str, Any]) -> Any:
    assignment = None
    if answer.assignment is not None:
        assignment = Assignment(topic_partitions=[
            Assignment.TopicPartitions(topic_id=ids[topic], partitions=partitions)
            for topic, partitions in sorted(answer.assignment.items(), key=lambda item: ids.get(item[0], NO_TOPIC))
            if topic in ids])  # a topic deleted since the last target is gone from the answer
    return ShareGroupHeartbeatResponse(
        version=req.version, throttle_time_ms=0, error_code=0, error_message=None, member_id=answer.member_id,
        member_epoch=answer.member_epoch, heartbeat_interval_ms=answer.heartbeat_interval_ms, assignment=assignment)


def _error(req: Any, error: ErrorCode, message: str | None) -> Any:
    return ShareGroupHeartbeatResponse(
        version=req.version, throttle_time_ms=0, error_code=int(error), error_message=message, member_id=None,
        member_epoch=0, heartbeat_interval_ms=0, assignment=None)


async def handle(ctx: RequestContext, req: Any) -> Any:
    if not valid_member(req):
        return _error(req, ErrorCode.INVALID_REQUEST, None)  # Kafka's broker: the code alone
    if ctx.core.coordinator_node_for(req.group_id) is not ctx.node:
        return _error(req, ErrorCode.NOT_COORDINATOR, None)
    coordinator = ctx.node.coordinator
    if coordinator.is_classic_group(req.group_id) or coordinator.consumer.is_consumer_group(req.group_id):
        return _error(req, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a share group.")
    topics = ctx.core.topics.ids_and_counts()
    try:
        answer = ctx.core.share_groups.heartbeat(
            req.group_id, req.member_id, req.member_epoch, req.rack_id, req.subscribed_topic_names,
            ctx.client_id, f"/{ctx.client_host}", ctx.now, {name: count for name, (_, count) in topics.items()})
    except ShareHeartbeatError as refused:
        return _error(req, refused.error, refused.message)
    return _answer(req, answer, {name: topic_id for name, (topic_id, _) in topics.items()})


def error_response(req: Any, error: ErrorCode) -> Any:
    return _error(req, error, None)


HANDLER = Handler(handle, error_response)
