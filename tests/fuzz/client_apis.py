"""The message classes of every API the client sends: the server's table (API_SPECS) and what only
the client speaks (the embedded coordinator serves neither of these)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.configs import DescribeConfigsRequest, DescribeConfigsResponse

from groupclient.protocol.apis import API_SPECS, ApiKey
from groupclient.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse

CLIENT_ONLY = {ApiKey.CONSUMER_GROUP_HEARTBEAT: (ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse),
               ApiKey.DESCRIBE_CONFIGS: (DescribeConfigsRequest, DescribeConfigsResponse)}


def classes(key: ApiKey) -> tuple[Any, Any]:
    """(request class, response class) of ``key``."""
    if key in CLIENT_ONLY:
        return CLIENT_ONLY[key]
    return API_SPECS[key].request, API_SPECS[key].response
