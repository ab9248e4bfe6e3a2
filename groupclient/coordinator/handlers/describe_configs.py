"""DescribeConfigs (32), for groups only (resource type GROUP, Kafka 4.0+): the settings a group's
members are held to, which a consumer-protocol member asks for its session timeout.  No group
here has settings of its own (IncrementalAlterConfigs is not served), so every value is the
coordinator's, reported as Kafka 4.4 reports a group setting nobody set on the group: source
STATIC_BROKER_CONFIG where the coordinator's configuration sets it to other than Kafka's default,
DEFAULT_CONFIG otherwise (Kafka reports STATIC_BROKER_CONFIG for a setting in server.properties
even at its default value; a CoordinatorConfig cannot tell it was given).  The group need not
exist, as in Kafka.  Other resource types are refused with a message saying so: this coordinator
keeps no topic or broker configuration."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.configs import DescribeConfigsResponse

from ...error_codes import ErrorCode
from ..config import CoordinatorConfig
from .context import Handler, RequestContext

Result = DescribeConfigsResponse.DescribeConfigsResult
Entry = Result.DescribeConfigsResourceResult
GROUP = 32  # ConfigResource.Type.GROUP
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5  # ConfigSource
BOOLEAN, STRING, INT, LIST = 1, 2, 3, 7  # ConfigType
_DEFAULTS = CoordinatorConfig()


def group_settings(config: CoordinatorConfig) -> list[tuple[str, str, int, int]]:
    """(name, value, type, source) of every group setting Kafka 4.4 describes."""
    def consumer(name: str, field: str) -> tuple[str, str, int, int]:
        value = getattr(config, field)
        return name, str(value), INT, DEFAULT_CONFIG if value == getattr(_DEFAULTS, field) else STATIC_BROKER_CONFIG

    return [
        consumer("consumer.session.timeout.ms", "group_consumer_session_timeout_ms"),
        consumer("consumer.heartbeat.interval.ms", "group_consumer_heartbeat_interval_ms"),
        consumer("consumer.assignment.interval.ms", "group_consumer_assignment_interval_ms"),
        ("share.auto.offset.reset", "latest", STRING, DEFAULT_CONFIG),
        ("share.heartbeat.interval.ms", "5000", INT, DEFAULT_CONFIG),
        ("share.isolation.level", "read_uncommitted", STRING, DEFAULT_CONFIG),
        ("share.record.lock.duration.ms", "30000", INT, DEFAULT_CONFIG),
        ("share.session.timeout.ms", "45000", INT, DEFAULT_CONFIG),
        ("share.delivery.count.limit", "5", INT, DEFAULT_CONFIG),
        ("share.partition.max.record.locks", "2000", INT, DEFAULT_CONFIG),
        ("share.assignment.interval.ms", "1000", INT, DEFAULT_CONFIG),
        ("share.renew.acknowledge.enable", "true", BOOLEAN, DEFAULT_CONFIG),
        ("streams.heartbeat.interval.ms", "5000", INT, DEFAULT_CONFIG),
        ("streams.num.standby.replicas", "0", INT, DEFAULT_CONFIG),
        ("streams.session.timeout.ms", "45000", INT, DEFAULT_CONFIG),
        ("streams.assignor.name", "sticky", STRING, DEFAULT_CONFIG),
        ("streams.initial.rebalance.delay.ms", "3000", INT, DEFAULT_CONFIG),
        ("streams.assignment.interval.ms", "1000", INT, DEFAULT_CONFIG),
        ("streams.rack.aware.assignment.tags", "", LIST, DEFAULT_CONFIG),
        ("errors.deadletterqueue.topic.name", "", STRING, DEFAULT_CONFIG),
        ("errors.deadletterqueue.copy.record.enable", "false", BOOLEAN, DEFAULT_CONFIG),
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
        Entry(name=name, value=value, read_only=False, config_source=source, is_default=source == DEFAULT_CONFIG,
              is_sensitive=False, synonyms=[], config_type=kind, documentation=None)
        for name, value, kind, source in group_settings(ctx.core.config) if wanted is None or name in wanted
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
