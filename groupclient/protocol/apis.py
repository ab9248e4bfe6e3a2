"""The Kafka APIs this project speaks: their message classes, the versions the embedded coordinator
serves and the newest the client sends, in one table (API_TABLE).

Message classes come from kafka-python's JSON-schema protocol (``kafka.protocol``); this module
is the one place that maps API keys to them.  The request classes here read requests strictly
and in linear time (``decoding.py``): they are what a server decodes a peer's bytes with.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from kafka.protocol.admin.configs import (
    DescribeConfigsRequest, DescribeConfigsResponse, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
)
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
from .share_group import (
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse, DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest, ShareFetchResponse, ShareGroupDescribeRequest,
    ShareGroupDescribeResponse, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
)


class ApiKey(enum.IntEnum):
    """Kafka's key of each API this project speaks (the first field of every request header)."""

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
    INCREMENTAL_ALTER_CONFIGS = 44
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92


# The APIs of KIP-848's consumer group protocol: a coordinator configured without the protocol
# does not list them (Kafka's group.coordinator.rebalance.protocols).
CONSUMER_PROTOCOL_APIS = frozenset({ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE})


@dataclass(frozen=True)
class ApiRow:
    """One API in :data:`API_TABLE`: its message classes, the versions the embedded coordinator
    serves, and the newest version the client builds and reads."""

    key: ApiKey
    request: Any  # a kafka.protocol ApiMessage class, as kafka-python defines it
    response: Any
    served: tuple[int, int] | None  # (oldest, newest) the coordinator serves; None: it does not serve the API
    client_max: int | None  # the newest version the client sends; None: the client never sends it


@dataclass(frozen=True)
class ApiSpec:
    """How the embedded coordinator serves one API (derived from :data:`API_TABLE`): ``request``
    reads a peer's bytes strictly and in linear time."""

    key: ApiKey
    request: Any  # a kafka.protocol ApiMessage class
    response: Any
    min_version: int
    max_version: int

    def schema_knows(self, version: int) -> bool:
        """Whether kafka-python's schema of the request has ``version`` (served or not)."""
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


# Every API this project speaks: what the embedded coordinator serves (``served``) and the newest
# version the client builds and reads (``client_max``); API_SPECS and CLIENT_MAX_VERSIONS below
# are derived from it.  Server lower bounds above 0 are where Kafka 4.x starts too (KIP-896 removed
# the older versions).  Server upper bounds stop before versions that need features this server
# does not have: topic ids in Fetch (v13+) and Produce (v13+).  Where
# both sides speak an API their newest versions agree today; they need not: a connection uses the
# lower (BrokerConnection.version_for).  ``client_max=None``: the client neither produces nor
# administers topics or deletes groups.
API_TABLE: tuple[ApiRow, ...] = (
    # v3 is also the first version of record batches (magic 2), the only format the server stores
    # (coordinator/storage/topic_log.py)
    ApiRow(ApiKey.PRODUCE, ProduceRequest, ProduceResponse, served=(3, 9), client_max=None),
    # v4 is the first that answers with record batches (magic 2), as for Produce
    ApiRow(ApiKey.FETCH, FetchRequest, FetchResponse, served=(4, 12), client_max=12),
    ApiRow(ApiKey.LIST_OFFSETS, ListOffsetsRequest, ListOffsetsResponse, served=(1, 7), client_max=7),
    ApiRow(ApiKey.METADATA, MetadataRequest, MetadataResponse, served=(0, 12), client_max=12),
    # v10 names topics by id (advertised from Kafka 4.2); the client sends it when it knows every
    # topic's id (Java's forTopicIdsOrNames), else v9
    ApiRow(ApiKey.OFFSET_COMMIT, OffsetCommitRequest, OffsetCommitResponse, served=(2, 10), client_max=10),
    ApiRow(ApiKey.OFFSET_FETCH, OffsetFetchRequest, OffsetFetchResponse, served=(1, 10), client_max=10),
    ApiRow(ApiKey.FIND_COORDINATOR, FindCoordinatorRequest, FindCoordinatorResponse, served=(0, 4), client_max=4),
    ApiRow(ApiKey.JOIN_GROUP, JoinGroupRequest, JoinGroupResponse, served=(0, 9), client_max=9),
    ApiRow(ApiKey.HEARTBEAT, HeartbeatRequest, HeartbeatResponse, served=(0, 4), client_max=4),
    ApiRow(ApiKey.LEAVE_GROUP, LeaveGroupRequest, LeaveGroupResponse, served=(0, 5), client_max=5),
    ApiRow(ApiKey.SYNC_GROUP, SyncGroupRequest, SyncGroupResponse, served=(0, 5), client_max=5),
    # the client sends these from the admin client (groupclient groups ...)
    ApiRow(ApiKey.DESCRIBE_GROUPS, DescribeGroupsRequest, DescribeGroupsResponse, served=(0, 6), client_max=6),
    ApiRow(ApiKey.LIST_GROUPS, ListGroupsRequest, ListGroupsResponse, served=(0, 5), client_max=5),
    # v1 only: v0 (deprecated) sends raw tokens outside Kafka's framing, which no client of this
    # decade does; Kafka has 0-1.  The client authenticates before READY (KIP-152: SaslHandshake v1,
    # then tokens in SaslAuthenticate)
    ApiRow(ApiKey.SASL_HANDSHAKE, SaslHandshakeRequest, SaslHandshakeResponse, served=(1, 1), client_max=1),
    ApiRow(ApiKey.API_VERSIONS, ApiVersionsRequest, ApiVersionsResponse, served=(0, 3), client_max=3),
    ApiRow(ApiKey.CREATE_TOPICS, CreateTopicsRequest, CreateTopicsResponse, served=(2, 7), client_max=None),
    # Kafka 4.x has 1-6
    ApiRow(ApiKey.DELETE_TOPICS, DeleteTopicsRequest, DeleteTopicsResponse, served=(1, 6), client_max=None),
    # idempotent producers only: no transactions (v5+ adds two-phase commit)
    ApiRow(ApiKey.INIT_PRODUCER_ID, InitProducerIdRequest, InitProducerIdResponse, served=(0, 4), client_max=None),
    # server: groups only (a consumer-protocol member asks its session timeout); the client: the
    # group's session timeout under the consumer protocol (member/group_session.py)
    ApiRow(ApiKey.DESCRIBE_CONFIGS, DescribeConfigsRequest, DescribeConfigsResponse, served=(0, 4), client_max=4),
    ApiRow(ApiKey.SASL_AUTHENTICATE, SaslAuthenticateRequest, SaslAuthenticateResponse, served=(0, 2),
           client_max=2),
    # Kafka 4.x has 0-3
    ApiRow(ApiKey.CREATE_PARTITIONS, CreatePartitionsRequest, CreatePartitionsResponse, served=(0, 3),
           client_max=None),
    # every version kafka-python 3.0.12 defines (Kafka itself has 0-2 as well)
    ApiRow(ApiKey.DELETE_GROUPS, DeleteGroupsRequest, DeleteGroupsResponse, served=(0, 2), client_max=None),
    # server: a group's own configs (KIP-848), groups only; Kafka 4.x has 0-1
    ApiRow(ApiKey.INCREMENTAL_ALTER_CONFIGS, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
           served=(0, 1), client_max=None),
    # the consumer group protocol (KIP-848); v1 carries the broker-side regex and the member's own id
    ApiRow(ApiKey.CONSUMER_GROUP_HEARTBEAT, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
           served=(0, 1), client_max=1),
    # the client sends it from the admin client, for KIP-848 groups
    ApiRow(ApiKey.CONSUMER_GROUP_DESCRIBE, ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
           served=(0, 1), client_max=1),
    # share groups (KIP-932), served to any share consumer and sent by ShareConsumer; v0 of each was
    # Kafka 4.0's early access; ShareFetch and ShareAcknowledge v2 (Kafka 4.2+) bring acquire modes and
    # RENEW
    ApiRow(ApiKey.SHARE_GROUP_HEARTBEAT, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, served=(1, 1),
           client_max=1),
    ApiRow(ApiKey.SHARE_GROUP_DESCRIBE, ShareGroupDescribeRequest, ShareGroupDescribeResponse, served=(1, 1),
           client_max=1),
    ApiRow(ApiKey.SHARE_FETCH, ShareFetchRequest, ShareFetchResponse, served=(1, 2), client_max=2),
    ApiRow(ApiKey.SHARE_ACKNOWLEDGE, ShareAcknowledgeRequest, ShareAcknowledgeResponse, served=(1, 2), client_max=2),
    ApiRow(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse,
           served=(0, 1), client_max=1),
    ApiRow(ApiKey.ALTER_SHARE_GROUP_OFFSETS, AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse,
           served=(0, 0), client_max=None),
    ApiRow(ApiKey.DELETE_SHARE_GROUP_OFFSETS, DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse,
           served=(0, 0), client_max=None),
)

# What the embedded coordinator serves, by API key: its request classes read strictly.
API_SPECS: dict[ApiKey, ApiSpec] = {
    row.key: ApiSpec(row.key, _read_strictly(row.request), row.response, *row.served)
    for row in API_TABLE if row.served is not None
}

# The newest version of each API the client builds and reads (keys are ApiKey members: an
# ``int`` key finds them too).
CLIENT_MAX_VERSIONS: dict[int, int] = {row.key: row.client_max for row in API_TABLE if row.client_max is not None}
