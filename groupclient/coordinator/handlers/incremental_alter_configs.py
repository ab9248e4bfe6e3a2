"""IncrementalAlterConfigs (44), for groups only (resource type GROUP): a group's own configs
(``group_base/configs.py``), as Kafka 4.4 takes them.

Each resource is answered on its own, in the request's order, and each is all or nothing:

- first the broker's checks (Kafka's ``ConfigAdminManager.preprocess``): a resource named twice
  refuses both, INVALID_REQUEST "Each resource must appear at most once."; a config named twice,
  INVALID_REQUEST "Error due to duplicate config keys"; a null value for other than DELETE,
  INVALID_REQUEST "Null value not supported for : a, b";
- then the controller's: each operation applied in turn to the group's stored configs (SET,
  DELETE; APPEND and SUBTRACT refused, INVALID_CONFIG "Can't APPEND to key K because its type is
  not LIST.", as Kafka 4.4 refuses them for every group config; an unknown operation,
  INVALID_REQUEST with the ones there are, where Kafka fails with UNKNOWN_SERVER_ERROR), a value
  longer than 32767 refused, the default resource (name "")
  refused with INVALID_REQUEST "Default group resources are not allowed.", and the whole result
  checked (INVALID_CONFIG with ``GroupConfig.validate``'s message).

With ``validate_only`` nothing is kept.  Otherwise the result is kept in the cluster's group store
(journaled with a data dir), whether or not the group exists, and a consumer group's members are
held to it from their next heartbeat.  Other resource types are refused with a message saying so:
this coordinator keeps no topic or broker configuration."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kafka.protocol.admin.configs import IncrementalAlterConfigsResponse

from ...error_codes import ErrorCode
from ..group_base.configs import GroupConfigError, validate
from .context import Handler, RequestContext

Result = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse
GROUP = 32  # ConfigResource.Type.GROUP
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # AlterConfigOp.OpType
MAX_VALUE_LENGTH = 32767  # Kafka's ConfigRecord value (a short-length string)
_OPERATIONS = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def _preprocess(resources: list[Any]) -> dict[int, GroupConfigError]:
    """The broker's refusals before any change, by the resource's place in the request."""
    refused: dict[int, GroupConfigError] = {}
    named = Counter((r.resource_type, r.resource_name) for r in resources)
    for i, resource in enumerate(resources):
        if named[(resource.resource_type, resource.resource_name)] > 1:
            refused[i] = GroupConfigError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
        elif len({c.name for c in resource.configs}) != len(resource.configs):
            refused[i] = GroupConfigError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
        elif nulls := [c.name for c in resource.configs if c.config_operation != DELETE and c.value is None]:
            refused[i] = GroupConfigError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}")
        elif resource.resource_type != GROUP:
            refused[i] = GroupConfigError(ErrorCode.INVALID_REQUEST,
                                          f"this coordinator alters only group configs (resource type {GROUP}), "
                                          f"not resource type {resource.resource_type}")
    return refused


def altered(current: dict[str, str], configs: list[Any]) -> dict[str, str]:
    """A group's configs after the resource's operations (Kafka's
    ``ConfigurationControlManager.incrementalAlterConfigResource``); GroupConfigError if one
    cannot apply."""
    result = dict(current)
    for config in configs:
        operation, name, value = config.config_operation, config.name, config.value
        if operation == SET:
            result[name] = value
        elif operation == DELETE:
            result.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            # Kafka 4.4's controller knows no group config as a list (its config schema has only
            # topics' and brokers'), streams.rack.aware.assignment.tags included
            raise GroupConfigError(ErrorCode.INVALID_CONFIG,
                                   f"Can't {_OPERATIONS[operation]} to key {name} because its type is not LIST.")
        else:  # Kafka 4.4 fails with UNKNOWN_SERVER_ERROR and no message (a NullPointerException)
            raise GroupConfigError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {operation}: the operations "
                                                              "are 0 (SET), 1 (DELETE), 2 (APPEND), 3 (SUBTRACT)")
        if len(result.get(name) or "") > MAX_VALUE_LENGTH:
            raise GroupConfigError(ErrorCode.INVALID_CONFIG, "The configuration value cannot be added because it "
                                                             f"exceeds the maximum value size of {MAX_VALUE_LENGTH} bytes.")
    return result


def _alter(ctx: RequestContext, resource: Any, validate_only: bool) -> None:
    group_id = resource.resource_name
    store = ctx.core.group_store
    configs = altered(store.group_configs.get(group_id, {}), list(resource.configs))
    if not group_id:
        raise GroupConfigError(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    validate(configs, ctx.core.config)
    if not validate_only:
        store.put_group_configs(group_id, configs)
        ctx.node.coordinator.consumer.reconfigure(group_id)


async def handle(ctx: RequestContext, req: Any) -> Any:
    resources = list(req.resources)
    refused = _preprocess(resources)
    results = []
    for i, resource in enumerate(resources):
        error = refused.get(i)
        if error is None:
            try:
                _alter(ctx, resource, req.validate_only)
            except GroupConfigError as e:
                error = e
        results.append(Result(error_code=int(error.error) if error else 0, error_message=error.message if error else None,
                              resource_type=resource.resource_type, resource_name=resource.resource_name))
    return IncrementalAlterConfigsResponse(version=req.version, throttle_time_ms=0, responses=results)


def error_response(req: Any, error: ErrorCode) -> Any:
    return IncrementalAlterConfigsResponse(version=req.version, throttle_time_ms=0, responses=[
        Result(error_code=int(error), error_message=None, resource_type=r.resource_type,
               resource_name=r.resource_name) for r in req.resources])


HANDLER = Handler(handle, error_response)
