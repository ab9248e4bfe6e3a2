"""CreatePartitions (37): a topic grows, as Kafka's controller grows it (a topic only grows; the
group coordinator then hands the new partitions out: a consumer-protocol group's epoch moves on
its next heartbeat, a classic group rebalances when its members' metadata sees them)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.topics import CreatePartitionsResponse

from ...error_codes import ErrorCode
from .context import Handler, RequestContext

Result = CreatePartitionsResponse.CreatePartitionsTopicResult


def _check(ctx: RequestContext, t: Any, added_before: int) -> tuple[ErrorCode, str | None]:
    """Kafka's checks and words (ReplicationControlManager.createPartitions)."""
    topic = ctx.core.topics.topics.get(t.name)
    if topic is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    current = len(topic.partitions)
    if t.count == current:
        return ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s)."
    if t.count < current:
        return (ErrorCode.INVALID_PARTITIONS,
                f"The topic {t.name} currently has {current} partition(s); {t.count} would not be an increase.")
    if t.assignments:
        return ErrorCode.INVALID_REQUEST, "manual replica assignments are not supported"
    total = ctx.core.topics.partition_count + added_before + t.count - current
    if total > ctx.core.config.max_partitions:
        return (ErrorCode.POLICY_VIOLATION, f"the cluster would have {total} partitions, over its limit of "
                f"{ctx.core.config.max_partitions} (max_partitions)")
    return ErrorCode.NONE, None


async def handle(ctx: RequestContext, req: Any) -> Any:
    results = []
    added = 0
    for t in req.topics:
        error, message = _check(ctx, t, added)
        if not error:
            added += t.count - len(ctx.core.topics.topics[t.name].partitions)
            if not req.validate_only:
                ctx.core.topics.grow(t.name, t.count)
        results.append(Result(name=t.name, error_code=int(error), error_message=message))
    return CreatePartitionsResponse(version=req.version, throttle_time_ms=0, results=results)


def error_response(req: Any, error: ErrorCode) -> Any:
    return CreatePartitionsResponse(version=req.version, throttle_time_ms=0, results=[
        Result(name=t.name, error_code=int(error), error_message=None) for t in req.topics])


HANDLER = Handler(handle, error_response)
