"""CreateTopics (19)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kafka.protocol.admin.topics import CreateTopicsResponse

from ...error_codes import ErrorCode
from ..storage.topic_log import validate_topic_name
from .context import Handler, RequestContext

Result = CreateTopicsResponse.CreatableTopicResult


# Kafka's words (ReplicationControlManager.validateTotalNumberOfPartitions)
TOO_MANY_PER_REQUEST = "Excessively large number of partitions per request."


def _requested(ctx: RequestContext, t: Any) -> int:
    if t.num_partitions == -1:
        return len(t.assignments) if t.assignments else ctx.core.config.default_partitions
    return max(int(t.num_partitions), 0)


def _check(ctx: RequestContext, t: Any, created_before: int) -> tuple[ErrorCode, str | None, int]:
    """``created_before``: partitions the topics ahead of this one in the request create."""
    core = ctx.core
    partitions = core.config.default_partitions if t.num_partitions == -1 else t.num_partitions
    reason = validate_topic_name(t.name)
    if reason:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, reason, partitions
    if t.name in core.topics.topics:
        return ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {t.name!r} already exists", partitions
    if t.assignments:
        return ErrorCode.INVALID_REQUEST, "manual replica assignments are not supported", partitions
    if partitions < 1:
        return ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.", partitions
    if t.replication_factor not in (-1, 1):
        return (ErrorCode.INVALID_REPLICATION_FACTOR,
                "replication factor must be 1 (this coordinator does not replicate)", partitions)
    total = core.topics.partition_count + created_before + partitions
    if total > core.config.max_partitions:
        return (ErrorCode.POLICY_VIOLATION, f"the cluster would have {total} partitions, over its limit of "
                f"{core.config.max_partitions} (max_partitions)", partitions)
    return ErrorCode.NONE, None, partitions


async def handle(ctx: RequestContext, req: Any) -> Any:
    # checked first and for the request as a whole, as Kafka's controller does: a request that
    # would build more partitions than this is refused before any work grows with it
    if sum(_requested(ctx, t) for t in req.topics) > ctx.core.config.max_partitions_per_request:
        return CreateTopicsResponse(version=req.version, throttle_time_ms=0, topics=[
            Result(name=t.name, error_code=int(ErrorCode.POLICY_VIOLATION), error_message=TOO_MANY_PER_REQUEST,
                   num_partitions=-1, replication_factor=-1, configs=[]) for t in req.topics])
    # a name given twice is refused, once, and neither is created (Kafka's ControllerApis)
    duplicates = {name for name, count in Counter(t.name for t in req.topics).items() if count > 1}
    results = [Result(name=name, error_code=int(ErrorCode.INVALID_REQUEST), error_message="Duplicate topic name.",
                      num_partitions=-1, replication_factor=-1, configs=[]) for name in sorted(duplicates)]
    created = 0
    for t in req.topics:
        if t.name in duplicates:
            continue
        error, message, partitions = _check(ctx, t, created)
        topic_id = None
        if not error:
            created += partitions
        if not error and not req.validate_only:
            topic_id = ctx.core.topics.create(t.name, partitions).topic_id
        results.append(Result(name=t.name, topic_id=topic_id, error_code=int(error), error_message=message,
                              num_partitions=partitions if not error else -1,
                              replication_factor=1 if not error else -1, configs=[]))
    return CreateTopicsResponse(version=req.version, throttle_time_ms=0, topics=results)


def error_response(req: Any, error: ErrorCode) -> Any:
    return CreateTopicsResponse(version=req.version, throttle_time_ms=0, topics=[
        Result(name=t.name, error_code=int(error), error_message=None, num_partitions=-1,
               replication_factor=-1, configs=[]) for t in req.topics])


HANDLER = Handler(handle, error_response)
