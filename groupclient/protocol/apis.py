"""The Kafka APIs this project speaks, their message classes and the versions served.

Message classes come from kafka-python's JSON-schema protocol (``kafka.protocol``); this module
is the one place that maps API keys to them.  The request classes here read requests strictly
and in linear time (``decoding.py``): they are what a server decodes a peer's bytes with.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from kafka.protocol.admin.configs import DescribeConfigsRequest, DescribeConfigsResponse
from kafka.protocol.admin.groups import (
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    ListGroupsRequest, ListGroupsResponse,
)
from kafka.protocol.admin.topics import (
    CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest,
    DeleteTopicsResponse,
)
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

from .consumer_group_describe import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse
from .consumer_group_heartbeat import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from .decoding import decode_body, decode_request


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
    DELETE_TOPICS = 20
    INIT_PRODUCER_ID = 22
    DESCRIBE_CONFIGS = 32
    CREATE_PARTITIONS = 37
    SASL_AUTHENTICATE = 36
    DELETE_GROUPS = 42
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69


# The APIs of KIP-848's consumer group protocol: a coordinator configured without the protocol
# does not list them (Kafka's group.coordinator.rebalance.protocols).
CONSUMER_PROTOCOL_APIS = frozenset({ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE})


@dataclass(frozen=True)
class ApiSpec:
    key: ApiKey
    request: Any  # a kafka.protocol ApiMessage class
    response: Any
    min_version: int
    max_version: int

    def schema_knows(self, version: int) -> bool:
        return 0 <= version <= int(self.request.max_version)


def _read_strictly(request_cls: Any) -> Any:
    """``request_cls`` whose ``decode`` reads strictly and in linear time (decoding.py); the
    requests it reads are ``request_cls``'s own instances.  (A subclass the way kafka-python makes
    its versioned classes: ``init=False`` keeps the schema and registries of the class it extends.)"""

    def decode(cls: Any, data: Any, version: int | None = None, header: bool = False, framed: bool = False) -> Any:
        if version is None:
            raise ValueError("a request is read at a given version")
        if framed:
            data = data[4:]
        if header:
            return decode_request(request_cls, data, version)
        return decode_body(request_cls, data, version)

    namespace = {"__slots__": (), "__module__": request_cls.__module__, "__qualname__": request_cls.__qualname__,
                 "decode": classmethod(decode)}
    return type(request_cls.__name__, (request_cls,), namespace, init=False)


# Version ranges served by the embedded coordinator.  Upper bounds stop before versions that
# need features this server does not have: topic ids in Fetch (v13+), Produce (v13+),
# OffsetCommit/OffsetFetch (v10+).
API_SPECS: dict[ApiKey, ApiSpec] = {
    spec.key: spec
    for spec in (
        ApiSpec(ApiKey.PRODUCE, _read_strictly(ProduceRequest), ProduceResponse, 3, 9),
        ApiSpec(ApiKey.FETCH, _read_strictly(FetchRequest), FetchResponse, 4, 12),
        ApiSpec(ApiKey.LIST_OFFSETS, _read_strictly(ListOffsetsRequest), ListOffsetsResponse, 1, 7),
        ApiSpec(ApiKey.METADATA, _read_strictly(MetadataRequest), MetadataResponse, 0, 12),
        ApiSpec(ApiKey.OFFSET_COMMIT, _read_strictly(OffsetCommitRequest), OffsetCommitResponse, 2, 9),
        ApiSpec(ApiKey.OFFSET_FETCH, _read_strictly(OffsetFetchRequest), OffsetFetchResponse, 1, 9),
        ApiSpec(ApiKey.FIND_COORDINATOR, _read_strictly(FindCoordinatorRequest), FindCoordinatorResponse, 0, 4),
        ApiSpec(ApiKey.JOIN_GROUP, _read_strictly(JoinGroupRequest), JoinGroupResponse, 0, 9),
        ApiSpec(ApiKey.HEARTBEAT, _read_strictly(HeartbeatRequest), HeartbeatResponse, 0, 4),
        ApiSpec(ApiKey.LEAVE_GROUP, _read_strictly(LeaveGroupRequest), LeaveGroupResponse, 0, 5),
        ApiSpec(ApiKey.SYNC_GROUP, _read_strictly(SyncGroupRequest), SyncGroupResponse, 0, 5),
        ApiSpec(ApiKey.DESCRIBE_GROUPS, _read_strictly(DescribeGroupsRequest), DescribeGroupsResponse, 0, 6),
        ApiSpec(ApiKey.LIST_GROUPS, _read_strictly(ListGroupsRequest), ListGroupsResponse, 0, 5),
        ApiSpec(ApiKey.API_VERSIONS, _read_strictly(ApiVersionsRequest), ApiVersionsResponse, 0, 3),
        ApiSpec(ApiKey.CREATE_TOPICS, _read_strictly(CreateTopicsRequest), CreateTopicsResponse, 2, 7),
        # idempotent producers only: no transactions (v5+ adds two-phase commit)
        ApiSpec(ApiKey.INIT_PRODUCER_ID, _read_strictly(InitProducerIdRequest), InitProducerIdResponse, 0, 4),
        # every version kafka-python 3.0.12 defines (Kafka itself has 0-2 as well)
        ApiSpec(ApiKey.DELETE_GROUPS, _read_strictly(DeleteGroupsRequest), DeleteGroupsResponse, 0, 2),
        # v1 only: v0 (deprecated) sends raw tokens outside Kafka's framing, which no client
        # of this decade does; Kafka has 0-1
        ApiSpec(ApiKey.SASL_HANDSHAKE, _read_strictly(SaslHandshakeRequest), SaslHandshakeResponse, 1, 1),
        ApiSpec(ApiKey.SASL_AUTHENTICATE, _read_strictly(SaslAuthenticateRequest), SaslAuthenticateResponse, 0, 2),
        # Kafka 4.x has 1-6 and 0-3
        ApiSpec(ApiKey.DELETE_TOPICS, _read_strictly(DeleteTopicsRequest), DeleteTopicsResponse, 1, 6),
        ApiSpec(ApiKey.CREATE_PARTITIONS, _read_strictly(CreatePartitionsRequest), CreatePartitionsResponse, 0, 3),
        # groups only (a consumer-protocol member asks its session timeout)
        ApiSpec(ApiKey.DESCRIBE_CONFIGS, _read_strictly(DescribeConfigsRequest), DescribeConfigsResponse, 0, 4),
        ApiSpec(ApiKey.CONSUMER_GROUP_HEARTBEAT, _read_strictly(ConsumerGroupHeartbeatRequest),
                ConsumerGroupHeartbeatResponse, 0, 1),
        ApiSpec(ApiKey.CONSUMER_GROUP_DESCRIBE, _read_strictly(ConsumerGroupDescribeRequest),
                ConsumerGroupDescribeResponse, 0, 1),
    )
}
