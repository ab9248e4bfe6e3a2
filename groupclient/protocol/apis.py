"""The Kafka APIs this project speaks, their message classes and the versions served.

Message classes come from kafka-python's JSON-schema protocol (``kafka.protocol``); this module
is the one place that maps API keys to them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from kafka.protocol.admin.groups import (
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    ListGroupsRequest, ListGroupsResponse,
)
from kafka.protocol.admin.topics import CreateTopicsRequest, CreateTopicsResponse
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.group import (
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse,
    LeaveGroupRequest, LeaveGroupResponse, OffsetCommitRequest, OffsetCommitResponse,
    OffsetFetchRequest, OffsetFetchResponse, SyncGroupRequest, SyncGroupResponse,
)
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
)


class ApiKey(enum.IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    INIT_PRODUCER_ID = 22
    SASL_AUTHENTICATE = 36
    DELETE_GROUPS = 42


@dataclass(frozen=True)
class ApiSpec:
    key: ApiKey
    request: Any  # a kafka.protocol ApiMessage class
    response: Any
    min_version: int
    max_version: int

    def is_flexible(self, version: int) -> bool:
        return bool(self.request.flexible_version_q(version))

    def schema_knows(self, version: int) -> bool:
        return 0 <= version <= int(self.request.max_version)


# Version ranges served by the embedded coordinator.  Upper bounds stop before versions that
# need features this server does not have: topic ids in Fetch (v13+), Produce (v13+),
# OffsetCommit/OffsetFetch (v10+); the KIP-848 consumer protocol (OffsetCommit v9, OffsetFetch v9).
API_SPECS: dict[ApiKey, ApiSpec] = {
    spec.key: spec
    for spec in (
        ApiSpec(ApiKey.PRODUCE, ProduceRequest, ProduceResponse, 3, 9),
        ApiSpec(ApiKey.FETCH, FetchRequest, FetchResponse, 4, 12),
        ApiSpec(ApiKey.LIST_OFFSETS, ListOffsetsRequest, ListOffsetsResponse, 1, 7),
        ApiSpec(ApiKey.METADATA, MetadataRequest, MetadataResponse, 0, 12),
        ApiSpec(ApiKey.OFFSET_COMMIT, OffsetCommitRequest, OffsetCommitResponse, 2, 8),
        ApiSpec(ApiKey.OFFSET_FETCH, OffsetFetchRequest, OffsetFetchResponse, 1, 8),
        ApiSpec(ApiKey.FIND_COORDINATOR, FindCoordinatorRequest, FindCoordinatorResponse, 0, 4),
        ApiSpec(ApiKey.JOIN_GROUP, JoinGroupRequest, JoinGroupResponse, 0, 9),
        ApiSpec(ApiKey.HEARTBEAT, HeartbeatRequest, HeartbeatResponse, 0, 4),
        ApiSpec(ApiKey.LEAVE_GROUP, LeaveGroupRequest, LeaveGroupResponse, 0, 5),
        ApiSpec(ApiKey.SYNC_GROUP, SyncGroupRequest, SyncGroupResponse, 0, 5),
        ApiSpec(ApiKey.DESCRIBE_GROUPS, DescribeGroupsRequest, DescribeGroupsResponse, 0, 5),
        ApiSpec(ApiKey.LIST_GROUPS, ListGroupsRequest, ListGroupsResponse, 0, 5),
        ApiSpec(ApiKey.API_VERSIONS, ApiVersionsRequest, ApiVersionsResponse, 0, 3),
        ApiSpec(ApiKey.CREATE_TOPICS, CreateTopicsRequest, CreateTopicsResponse, 2, 7),
        # idempotent producers only: no transactions (v5+ adds two-phase commit)
        ApiSpec(ApiKey.INIT_PRODUCER_ID, InitProducerIdRequest, InitProducerIdResponse, 0, 4),
        # every version kafka-python 3.0.12 defines (Kafka itself has 0-2 as well)
        ApiSpec(ApiKey.DELETE_GROUPS, DeleteGroupsRequest, DeleteGroupsResponse, 0, 2),
        # v1 only: v0 (deprecated) sends raw tokens outside Kafka's framing, which no client
        # of this decade does; Kafka has 0-1
        ApiSpec(ApiKey.SASL_HANDSHAKE, SaslHandshakeRequest, SaslHandshakeResponse, 1, 1),
        ApiSpec(ApiKey.SASL_AUTHENTICATE, SaslAuthenticateRequest, SaslAuthenticateResponse, 0, 2),
    )
}
