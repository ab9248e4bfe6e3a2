"""ShareAcknowledge (79): a share group member acknowledges records without fetching
(``share_acks.py``), on its share session: epoch 0 is INVALID_SHARE_SESSION_EPOCH, -1 closes the
session after the acknowledgements (what its member still holds is released), any other must be
the session's epoch.  Session errors are top-level; a partition's refusal is its own."""

from __future__ import annotations

import uuid
from typing import Any

from ...error_codes import ErrorCode
from ...protocol.share_group import ShareAcknowledgeResponse
from ...protocol.share_group import CLOSE_SESSION_EPOCH
from ..share_group.service import SessionError
from .context import Handler, RequestContext
from .share_acks import Outcome, acknowledge, valid_member

Topic = ShareAcknowledgeResponse.ShareAcknowledgeTopicResponse
NO_LEADER = Topic.PartitionData.LeaderIdAndEpoch(leader_id=0, leader_epoch=0)


def _response(req: Any, error: ErrorCode, outcomes: dict[tuple[uuid.UUID, int], Outcome], lock_ms: int) -> Any:
    by_topic: dict[uuid.UUID, list[Any]] = {}
    for (topic_id, index), (code, message) in outcomes.items():
        by_topic.setdefault(topic_id, []).append(Topic.PartitionData(
            partition_index=index, error_code=int(code), error_message=message, current_leader=NO_LEADER))
    return ShareAcknowledgeResponse(
        version=req.version, throttle_time_ms=0, error_code=int(error), error_message=None,
        acquisition_lock_timeout_ms=lock_ms, node_endpoints=[],
        responses=[Topic(topic_id=topic_id, partitions=partitions) for topic_id, partitions in by_topic.items()])


def error_response(req: Any, error: ErrorCode) -> Any:
    return _response(req, error, {}, 0)


async def handle(ctx: RequestContext, req: Any) -> Any:
    if not valid_member(req):
        return error_response(req, ErrorCode.INVALID_REQUEST)
    shares = ctx.core.share_groups
    try:
        shares.acknowledge_session(ctx.node.node_id, req.group_id, req.member_id, req.share_session_epoch)
    except SessionError as refused:
        return error_response(req, refused.error)
    shares.used_on(ctx.node.node_id, req.group_id, req.member_id, ctx.connection)
    renewing = req.version >= 2 and bool(req.is_renew_ack)
    outcomes = acknowledge(ctx, req.group_id, req.member_id, req.topics, req.version, renewing)
    if req.share_session_epoch == CLOSE_SESSION_EPOCH:
        shares.close_session(ctx.node.node_id, req.group_id, req.member_id)
    return _response(req, ErrorCode.NONE, outcomes, shares.partition_settings(req.group_id).record_lock_duration_ms)


HANDLER = Handler(handle, error_response)
