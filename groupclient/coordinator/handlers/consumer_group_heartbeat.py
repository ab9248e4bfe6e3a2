"""ConsumerGroupHeartbeat (68): KIP-848's one request of a consumer-protocol member — join, stay,
acknowledge, leave — answered at once (nothing waits for a rebalance in this protocol)."""

from __future__ import annotations

from typing import Any

from ...error_codes import ErrorCode
from ...protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse
from ..consumer_group.errors import HeartbeatError
from ..consumer_group.group import Answer
from .context import Handler, RequestContext

Assignment = ConsumerGroupHeartbeatResponse.Assignment
TopicPartitions = Assignment.TopicPartitions


def _answer(req: Any, answer: Answer) -> Any:
    assignment = None
    if answer.assignment is not None:
        assignment = Assignment(topic_partitions=[
            TopicPartitions(topic_id=topic_id, partitions=sorted(partitions))
            for topic_id, partitions in sorted(answer.assignment.items())])
    return ConsumerGroupHeartbeatResponse(
        version=req.version, throttle_time_ms=0, error_code=0, error_message=None, member_id=answer.member_id,
        member_epoch=answer.member_epoch, heartbeat_interval_ms=answer.heartbeat_interval_ms, assignment=assignment)


def _error(req: Any, error: ErrorCode, message: str | None) -> Any:
    # Kafka answers an error with nothing else: no member id, epoch 0, no interval
    return ConsumerGroupHeartbeatResponse(
        version=req.version, throttle_time_ms=0, error_code=int(error), error_message=message, member_id=None,
        member_epoch=0, heartbeat_interval_ms=0, assignment=None)


async def handle(ctx: RequestContext, req: Any) -> Any:
    if not ctx.core.config.serves_consumer_protocol:
        return _error(req, ErrorCode.UNSUPPORTED_VERSION, None)
    if foreign := ctx.foreign_member(req.group_id, req.member_id, req.instance_id):
        # as a member id or instance id nobody holds (Kafka's messages): another user's
        if foreign is ErrorCode.UNKNOWN_MEMBER_ID:
            return _error(req, foreign, f"Member {req.member_id} is not a member of group {req.group_id}.")
        return _error(req, foreign, f"Static member {req.member_id} with instance id {req.instance_id} was fenced.")
    if req.group_id in ctx.core.share_groups.groups:
        return _error(req, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a consumer group.")
    try:
        answer = ctx.node.coordinator.consumer.heartbeat(
            req, ctx.now, ctx.core.topics.ids_and_counts(), ctx.client_id, f"/{ctx.client_host}", ctx.principal)
    except HeartbeatError as refused:
        return _error(req, refused.code, refused.message)
    return _answer(req, answer)


def error_response(req: Any, error: ErrorCode) -> Any:
    return _error(req, error, None)


HANDLER = Handler(handle, error_response)
