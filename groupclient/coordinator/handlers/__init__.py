"""One module per Kafka API key: where each request is answered."""

from __future__ import annotations

from ...protocol.apis import ApiKey
from . import (
    api_versions, consumer_group_describe, consumer_group_heartbeat, create_partitions, create_topics, delete_groups,
    delete_topics, describe_configs, describe_groups, describe_share_group_offsets, fetch, find_coordinator,
    heartbeat, incremental_alter_configs, init_producer_id, join_group, leave_group, list_groups, list_offsets,
    metadata, offset_commit, offset_fetch, produce, sasl, share_acknowledge, share_fetch, share_group_describe,
    share_group_heartbeat, share_group_offsets, sync_group,
)
from .context import Handler, RequestContext

HANDLERS: dict[ApiKey, Handler] = {
    ApiKey.API_VERSIONS: api_versions.HANDLER,
    ApiKey.METADATA: metadata.HANDLER,
    ApiKey.CREATE_TOPICS: create_topics.HANDLER,
    ApiKey.PRODUCE: produce.HANDLER,
    ApiKey.FETCH: fetch.HANDLER,
    ApiKey.LIST_OFFSETS: list_offsets.HANDLER,
    ApiKey.FIND_COORDINATOR: find_coordinator.HANDLER,
    ApiKey.JOIN_GROUP: join_group.HANDLER,
    ApiKey.SYNC_GROUP: sync_group.HANDLER,
    ApiKey.HEARTBEAT: heartbeat.HANDLER,
    ApiKey.LEAVE_GROUP: leave_group.HANDLER,
    ApiKey.OFFSET_COMMIT: offset_commit.HANDLER,
    ApiKey.OFFSET_FETCH: offset_fetch.HANDLER,
    ApiKey.DESCRIBE_GROUPS: describe_groups.HANDLER,
    ApiKey.LIST_GROUPS: list_groups.HANDLER,
    ApiKey.INIT_PRODUCER_ID: init_producer_id.HANDLER,
    ApiKey.DELETE_GROUPS: delete_groups.HANDLER,
    ApiKey.SASL_HANDSHAKE: sasl.HANDSHAKE,
    ApiKey.SASL_AUTHENTICATE: sasl.AUTHENTICATE,
    ApiKey.DESCRIBE_CONFIGS: describe_configs.HANDLER,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: incremental_alter_configs.HANDLER,
    ApiKey.DELETE_TOPICS: delete_topics.HANDLER,
    ApiKey.CREATE_PARTITIONS: create_partitions.HANDLER,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer_group_heartbeat.HANDLER,
    ApiKey.CONSUMER_GROUP_DESCRIBE: consumer_group_describe.HANDLER,
    ApiKey.SHARE_GROUP_HEARTBEAT: share_group_heartbeat.HANDLER,
    ApiKey.SHARE_GROUP_DESCRIBE: share_group_describe.HANDLER,
    ApiKey.SHARE_FETCH: share_fetch.HANDLER,
    ApiKey.SHARE_ACKNOWLEDGE: share_acknowledge.HANDLER,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: describe_share_group_offsets.HANDLER,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: share_group_offsets.ALTER,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: share_group_offsets.DELETE,
}

__all__ = ["HANDLERS", "Handler", "RequestContext"]
