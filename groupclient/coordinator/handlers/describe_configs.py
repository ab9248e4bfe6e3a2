"""DescribeConfigs (32), for groups only (resource type GROUP, Kafka 4.0+): the settings a group's
members are held to, which a consumer-protocol member asks for its session timeout.  As Kafka 4.4
describes a group (``ConfigHelper.createGroupConfigEntry``): every group config of
``group_base/configs.py`` but the internal ones the group does not set, each with

- the group's own value (IncrementalAlterConfigs), source GROUP_CONFIG; else
- the coordinator's, source STATIC_BROKER_CONFIG where its configuration sets it to other than
  Kafka's default, DEFAULT_CONFIG otherwise (Kafka reports STATIC_BROKER_CONFIG for a setting in
  server.properties even at its default value; a CoordinatorConfig cannot tell it was given);
- and, when asked, the synonyms in that order: the group's value, the broker setting behind it
  (its value if set here, then Kafka's default), or the config's own default when no broker
  setting is behind it.

The group need not exist, as in Kafka.  Documentation is not given (None even when asked).  Other
resource types are refused with a message saying so: this coordinator keeps no topic or broker
configuration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka.protocol.admin.configs import DescribeConfigsResponse

from ...error_codes import ErrorCode
from ..config import CoordinatorConfig
from ..group_base.configs import GROUP_CONFIG_KEYS, GroupConfigKey, as_text, broker_value, kafka_default, parse
from .context import Handler, RequestContext

Result = DescribeConfigsResponse.DescribeConfigsResult
Entry = Result.DescribeConfigsResourceResult
Synonym = Entry.DescribeConfigsSynonym
GROUP = 32  # ConfigResource.Type.GROUP
STATIC_BROKER_CONFIG, DEFAULT_CONFIG, GROUP_CONFIG = 4, 5, 8  # ConfigSource


def _synonyms(key: GroupConfigKey, own: str | None, config: CoordinatorConfig) -> list[tuple[str, str, int]]:
    """(name, value, source) of where a group config's value may come from, the one used first."""
    found = [(key.name, own, GROUP_CONFIG)] if own is not None else []
    default = kafka_default(key.name)
    if key.broker_setting is not None:
        value = broker_value(key.name, config)
        if value is not None and value != default:
            found.append((key.broker_setting, value, STATIC_BROKER_CONFIG))
        if default is not None:
            found.append((key.broker_setting, default, DEFAULT_CONFIG))
    elif key.default is not None:
        found.append((key.name, key.default, DEFAULT_CONFIG))
    return found


def group_settings(config: CoordinatorConfig, own: Mapping[str, str] | None = None,
                   ) -> list[tuple[str, str | None, int, int, list[tuple[str, str, int]]]]:
    """(name, value, type, source, synonyms) of every group config Kafka 4.4 describes for a group
    whose own configs are ``own``."""
    own = own or {}
    described = []
    for key in GROUP_CONFIG_KEYS:
        raw = own.get(key.name)
        if key.internal and raw is None:
            continue
        # Kafka shows a group's value parsed (an internal one as given); else the broker's
        value = (raw if key.internal else as_text(key, parse(key, raw))) if raw is not None \
            else broker_value(key.name, config)
        synonyms = _synonyms(key, value if raw is not None else None, config)
        described.append((key.name, value, int(key.kind), synonyms[0][2] if synonyms else DEFAULT_CONFIG, synonyms))
    return described


def _describe(ctx: RequestContext, include_synonyms: bool, resource: Any) -> Any:
    def failed(error: ErrorCode, message: str) -> Any:
        return Result(error_code=int(error), error_message=message, resource_type=resource.resource_type,
                      resource_name=resource.resource_name, configs=[])

    if resource.resource_type != GROUP:
        return failed(ErrorCode.INVALID_REQUEST, f"this coordinator describes only groups (resource type {GROUP}), "
                                                 f"not resource type {resource.resource_type}")
    if not resource.resource_name:
        return failed(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
    wanted = set(resource.configuration_keys) if resource.configuration_keys is not None else None
    own = ctx.core.group_store.group_configs.get(resource.resource_name)
    configs = [
        Entry(name=name, value=value, read_only=False, config_source=source, is_default=source == DEFAULT_CONFIG,
              is_sensitive=False, config_type=kind, documentation=None,
              synonyms=[Synonym(name=n, value=v, source=s) for n, v, s in synonyms] if include_synonyms else [])
        for name, value, kind, source, synonyms in group_settings(ctx.core.config, own)
        if wanted is None or name in wanted
    ]
    return Result(error_code=0, error_message="", resource_type=GROUP, resource_name=resource.resource_name,
                  configs=configs)


async def handle(ctx: RequestContext, req: Any) -> Any:
    return DescribeConfigsResponse(version=req.version, throttle_time_ms=0,
                                   results=[_describe(ctx, bool(req.include_synonyms), r) for r in req.resources])


def error_response(req: Any, error: ErrorCode) -> Any:
    return DescribeConfigsResponse(version=req.version, throttle_time_ms=0, results=[
        Result(error_code=int(error), error_message=None, resource_type=r.resource_type,
               resource_name=r.resource_name, configs=[]) for r in req.resources])


HANDLER = Handler(handle, error_response)
