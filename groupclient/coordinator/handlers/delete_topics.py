"""DeleteTopics (20): a topic, its records and the groups' committed offsets for it go (as Kafka's
group coordinator drops the offsets of deleted partitions).  By name, or by topic id from v6.  A
topic created again under the same name is a new topic with a new id: a consumer-protocol member
gives the old one's partitions up and receives the new one's."""

from __future__ import annotations

import uuid
from typing import Any

from kafka.protocol.admin.topics import DeleteTopicsResponse

from ...error_codes import ErrorCode
from .context import Handler, RequestContext

Result = DeleteTopicsResponse.DeletableTopicResult
ZERO = uuid.UUID(int=0)
# Kafka 4.1's words
BOTH = "You may not specify both topic name and topic id."
NO_SUCH_TOPIC = "This server does not host this topic-partition."
NO_SUCH_ID = "This server does not host this topic ID."


def _wanted(req: Any) -> list[tuple[str | None, uuid.UUID | None]]:
    if req.version >= 6:
        return [(t.name, t.topic_id if t.topic_id is not None and t.topic_id.int else None) for t in req.topics]
    return [(name, None) for name in req.topic_names]


async def handle(ctx: RequestContext, req: Any) -> Any:
    topics = ctx.core.topics
    results = []
    for name, topic_id in _wanted(req):
        if topic_id is not None and name is not None:
            results.append(Result(name=name, topic_id=topic_id, error_code=int(ErrorCode.INVALID_REQUEST),
                                  error_message=BOTH))
            continue
        if topic_id is not None:
            name = topics.name_of(topic_id)
            if name is None:
                results.append(Result(name=None, topic_id=topic_id, error_code=int(ErrorCode.UNKNOWN_TOPIC_ID),
                                      error_message=NO_SUCH_ID))
                continue
        if name is None or name not in topics.topics:
            results.append(Result(name=name, topic_id=ZERO, error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                                  error_message=NO_SUCH_TOPIC))
            continue
        deleted = topics.delete(name)
        ctx.core.group_store.forget_topic(name)
        results.append(Result(name=name, topic_id=deleted.topic_id, error_code=0, error_message=None))
    return DeleteTopicsResponse(version=req.version, throttle_time_ms=0, responses=results)


def error_response(req: Any, error: ErrorCode) -> Any:
    return DeleteTopicsResponse(version=req.version, throttle_time_ms=0, responses=[
        Result(name=name, topic_id=topic_id or ZERO, error_code=int(error), error_message=None)
        for name, topic_id in _wanted(req)])


HANDLER = Handler(handle, error_response)
