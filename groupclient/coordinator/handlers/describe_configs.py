"""DescribeConfigs (32), for groups only (resource type GROUP, Kafka 4.0+): the settings a group's
members are held to, which a consumer-protocol member asks for its session timeout.  No group
here has settings of its own (IncrementalAlterConfigs is not served), so every value is the
coordinator's, reported as Kafka reports a group setting nobody set: source DEFAULT_CONFIG.
The group need not exist, as in Kafka.  Other resource types are refused with a message saying
so: this coordinator keeps no topic or broker configuration."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.configs import DescribeConfigsResponse

from ...error_codes import ErrorCode
from ..config import CoordinatorConfig
from .context import Handler, RequestContext

Result = DescribeConfigsResponse.DescribeConfigsResult
Entry = Result.DescribeConfigsResourceResult
GROUP = 32  # ConfigResource.Type.GROUP
DEFAULT_CONFIG = 5  # ConfigSource
INT, STRING = 3, 2  # ConfigType


def group_settings(config: CoordinatorConfig) -> list[tuple[str, str, int]]:
    """(name, value, type) of every group setting Kafka 4.1 describes, in its order."""
    return [
        ("consumer.heartbeat.interval.ms", str(config.group_consumer_heartbeat_interval_ms), INT),
        ("consumer.session.timeout.ms", str(config.group_consumer_session_timeout_ms), INT),
        ("share.auto.offset.reset", "latest", STRING),
        ("share.heartbeat.interval.ms", "5000", INT),
        ("share.isolation.level", "read_uncommitted", STRING),
        ("share.record.lock.duration.ms", "30000", INT),
        ("share.session.timeout.ms", "45000", INT),
        ("streams.heartbeat.interval.ms", "5000", INT),
        ("streams.num.standby.replicas", "0", INT),
        ("streams.session.timeout.ms", "45000", INT),
    ]


def _describe(ctx: RequestContext, version: int, resource: Any) -> Any:
    def failed(error: ErrorCode, message: str) -> Any:
        return Result(error_code=int(error), error_message=message, resource_type=resource.resource_type,
                      resource_name=resource.resource_name, configs=[])

    if resource.resource_type != GROUP:
        return failed(ErrorCode.INVALID_REQUEST, f"this coordinator describes only groups (resource type {GROUP}), "
                                                 f"not resource type {resource.resource_type}")
    if not resource.resource_name:
        return failed(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
    wanted = set(resource.configuration_keys) if resource.configuration_keys is not None else None
    configs = [
        Entry(name=name, value=value, read_only=False, config_source=DEFAULT_CONFIG, is_default=True,
              is_sensitive=False, synonyms=[], config_type=kind, documentation=None)
        for name, value, kind in group_settings(ctx.core.config) if wanted is None or name in wanted
    ]
    return Result(error_code=0, error_message="", resource_type=GROUP, resource_name=resource.resource_name,
                  configs=configs)


async def handle(ctx: RequestContext, req: Any) -> Any:
    return DescribeConfigsResponse(version=req.version, throttle_time_ms=0,
                                   results=[_describe(ctx, req.version, r) for r in req.resources])


def error_response(req: Any, error: ErrorCode) -> Any:
    return DescribeConfigsResponse(version=req.version, throttle_time_ms=0, results=[
        Result(error_code=int(error), error_message=None, resource_type=r.resource_type,
               resource_name=r.resource_name, configs=[]) for r in req.resources])


HANDLER = Handler(handle, error_response)
