"""ApiVersions (18): the versions this server really implements."""

from __future__ import annotations

from typing import Any

from kafka.protocol.metadata.api_versions import ApiVersionsResponse

from ...protocol.apis import API_SPECS, CONSUMER_PROTOCOL_APIS
from ...error_codes import ErrorCode
from .context import Handler, RequestContext


def supported_versions(version: int, error: ErrorCode = ErrorCode.NONE, consumer_protocol: bool = True) -> Any:
    """``consumer_protocol``: whether KIP-848's APIs are listed."""
    keys = [
        ApiVersionsResponse.ApiVersion(api_key=int(s.key), min_version=s.min_version, max_version=s.max_version)
        for s in sorted(API_SPECS.values(), key=lambda s: s.key)
        if consumer_protocol or s.key not in CONSUMER_PROTOCOL_APIS
    ]
    return ApiVersionsResponse(version=version, error_code=int(error), api_keys=keys, throttle_time_ms=0)


async def handle(ctx: RequestContext, req: Any) -> Any:
    return supported_versions(ctx.api_version, consumer_protocol=ctx.core.config.serves_consumer_protocol)


def error_response(req: Any, error: ErrorCode) -> Any:
    # an ApiVersions error answer is always version 0 and still lists what is supported
    return supported_versions(0, error)


HANDLER = Handler(handle, error_response)
