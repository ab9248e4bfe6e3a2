"""FindCoordinator (10), with batched coordinator keys from v4 (KIP-699)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.metadata.find_coordinator import FindCoordinatorResponse

from ...error_codes import ErrorCode
from .context import Handler, RequestContext

GROUP_KEY_TYPE = 0


def _locate(ctx: RequestContext, key: str | None, key_type: int) -> tuple[ErrorCode, str | None, int, str, int]:
    """(error, message, node id, host, port) for one key."""
    if key_type != GROUP_KEY_TYPE:
        return ErrorCode.INVALID_REQUEST, f"key type {key_type} is not supported (groups only)", -1, "", -1
    if not key:
        return ErrorCode.INVALID_GROUP_ID, "the group id is empty", -1, "", -1
    node = ctx.core.coordinator_node_for(key)
    if node is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, "no live node leads the group's partition", -1, "", -1
    return ErrorCode.NONE, None, node.node_id, node.host, node.port


async def handle(ctx: RequestContext, req: Any) -> Any:
    version = ctx.api_version
    key_type = req.key_type if version >= 1 else GROUP_KEY_TYPE
    if version < 4:
        error, message, node_id, host, port = _locate(ctx, req.key, key_type)
        return FindCoordinatorResponse(version=version, throttle_time_ms=0, error_code=int(error),
                                       error_message=message, node_id=node_id, host=host, port=port)
    coordinators = []
    for key in req.coordinator_keys:
        error, message, node_id, host, port = _locate(ctx, key, key_type)
        coordinators.append(FindCoordinatorResponse.Coordinator(
            key=key, node_id=node_id, host=host, port=port, error_code=int(error), error_message=message))
    return FindCoordinatorResponse(version=version, throttle_time_ms=0, coordinators=coordinators)


def error_response(req: Any, error: ErrorCode) -> Any:
    if req.version < 4:
        return FindCoordinatorResponse(version=req.version, throttle_time_ms=0, error_code=int(error),
                                       error_message=None, node_id=-1, host="", port=-1)
    return FindCoordinatorResponse(version=req.version, throttle_time_ms=0, coordinators=[
        FindCoordinatorResponse.Coordinator(key=k, node_id=-1, host="", port=-1, error_code=int(error),
                                            error_message=None)
        for k in req.coordinator_keys])


HANDLER = Handler(handle, error_response)
