"""The server at the byte level: versions, bad input, fault hooks, lesser APIs."""

from __future__ import annotations

import struct
import time

import pytest
from kafka.protocol.admin.groups import DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.admin.topics import CreateTopicsRequest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.group import HeartbeatRequest, JoinGroupRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from groupclient.coordinator import EmbeddedCluster, FaultKind, FaultRule
from groupclient.protocol.apis import API_SPECS, ApiKey
from groupclient.error_codes import ErrorCode
from tests.integration.wire import WireClient

pytestmark = pytest.mark.integration


@pytest.fixture
def wire(cluster: EmbeddedCluster) -> WireClient:
    client = WireClient(cluster.bootstrap_servers)
    yield client  # type: ignore[misc]
    client.close()


def test_api_versions_lists_exactly_what_is_served(wire: WireClient) -> None:
    resp = wire.request(ApiVersionsRequest(version=3, client_software_name="t", client_software_version="1"))
    assert resp.error_code == 0
    served = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert served == {int(s.key): (s.min_version, s.max_version) for s in API_SPECS.values()}


def test_api_versions_of_an_unsupported_version_answers_v0_with_the_list(wire: WireClient) -> None:
    req = ApiVersionsRequest(version=4, client_software_name="t", client_software_version="1")
    req.with_header(correlation_id=99, client_id="x")
    wire.send_raw(bytes(req.encode(header=True, framed=True)))
    resp = ApiVersionsResponse.decode(wire.read_frame(), version=0, header=True)
    assert resp.header.correlation_id == 99
    assert resp.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert any(k.api_key == ApiKey.JOIN_GROUP for k in resp.api_keys)


def test_known_api_at_an_unserved_version_gets_unsupported_version(wire: WireClient) -> None:
    # Fetch v13 exists in the spec but needs topic ids, which this server does not serve
    resp = wire.request(FetchRequest(version=13, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1000,
                                     isolation_level=0, session_id=0, session_epoch=-1, topics=[],
                                     forgotten_topics_data=[], rack_id=""))
    assert resp.error_code == ErrorCode.UNSUPPORTED_VERSION


@pytest.mark.parametrize("garbage", [
    struct.pack(">i", 4) + b"\x00\x01",                        # shorter than a header
    struct.pack(">i", 200 * 1024 * 1024) + b"\x00" * 16,       # over socket.request.max.bytes
    struct.pack(">i", -5),                                      # negative size
    struct.pack(">ihhi", 10, 999, 0, 1) + b"\x00\x00",          # unknown API key
    struct.pack(">ihhi", 12, 11, 5, 1) + b"\xff\xff\xff\xff",   # JoinGroup v5 with a truncated body
])
def test_bad_frames_close_only_their_connection(cluster: EmbeddedCluster, garbage: bytes) -> None:
    bad, good = WireClient(cluster.bootstrap_servers, 5), WireClient(cluster.bootstrap_servers, 5)
    try:
        bad.send_raw(garbage)
        assert bad.is_closed_by_server()
        assert good.request(MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False,
                                            include_topic_authorized_operations=False)).brokers
    finally:
        bad.close()
        good.close()


def test_find_coordinator_batched_keys_and_not_coordinator_on_other_nodes() -> None:
    with EmbeddedCluster(nodes=3, group_initial_rebalance_delay_ms=0) as cluster:
        client = WireClient(cluster.address_of(0))
        groups = [f"group-{i}" for i in range(12)]
        resp = client.request(FindCoordinatorRequest(version=4, key_type=0, coordinator_keys=groups + [""]))
        located = {c.key: c for c in resp.coordinators}
        assert located[""].error_code == ErrorCode.INVALID_GROUP_ID
        assert {located[g].node_id for g in groups} == {0, 1, 2}  # spread over the nodes
        for g in groups:
            assert located[g].node_id == cluster.coordinator_of(g)
            assert located[g].port == int(cluster.address_of(located[g].node_id).rsplit(":")[1])
        # a node that does not coordinate the group says so
        group = groups[0]
        other = next(i for i in range(3) if i != located[group].node_id)
        client2 = WireClient(cluster.address_of(other))
        hb = client2.request(HeartbeatRequest(version=4, group_id=group, generation_id=1, member_id="m",
                                              group_instance_id=None))
        assert hb.error_code == ErrorCode.NOT_COORDINATOR
        old = client.request(FindCoordinatorRequest(version=1, key=group, key_type=0))
        assert old.error_code == 0 and old.node_id == located[group].node_id
        client.close()
        client2.close()


def _join(version: int, member_id: str = "") -> JoinGroupRequest:
    return JoinGroupRequest(version=version, group_id="wire-group", session_timeout_ms=10000,
                            rebalance_timeout_ms=10000, member_id=member_id, group_instance_id=None,
                            protocol_type="consumer",
                            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"m")],
                            reason="test")


def test_join_over_the_wire_with_member_id_required_and_describe(cluster: EmbeddedCluster, wire: WireClient) -> None:
    first = wire.request(_join(9))
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    joined = wire.request(_join(9, first.member_id))
    assert joined.error_code == 0 and joined.leader == joined.member_id and joined.generation_id == 1
    assert [m.member_id for m in joined.members] == [joined.member_id]
    groups = wire.request(ListGroupsRequest(version=4, states_filter=["CompletingRebalance"]))
    assert [(g.group_id, g.group_state) for g in groups.groups] == [("wire-group", "CompletingRebalance")]
    described = wire.request(DescribeGroupsRequest(version=5, groups=["wire-group", "nope"],
                                                   include_authorized_operations=False))
    states = {g.group_id: g.group_state for g in described.groups}
    assert states == {"wire-group": "CompletingRebalance", "nope": "Dead"}


def test_fault_hooks_error_delay_and_drop(cluster: EmbeddedCluster) -> None:
    cluster.inject_fault(FaultRule(int(ApiKey.HEARTBEAT), FaultKind.ERROR, count=2,
                                   error_code=ErrorCode.NOT_COORDINATOR))
    client = WireClient(cluster.bootstrap_servers)
    hb = HeartbeatRequest(version=4, group_id="g", generation_id=1, member_id="m", group_instance_id=None)
    assert client.request(hb).error_code == ErrorCode.NOT_COORDINATOR
    assert client.request(hb).error_code == ErrorCode.NOT_COORDINATOR
    assert client.request(hb).error_code == ErrorCode.UNKNOWN_MEMBER_ID  # rules used up: handled again

    cluster.inject_fault(FaultRule(int(ApiKey.LIST_GROUPS), FaultKind.DELAY, delay_ms=300))
    started = time.monotonic()
    assert client.request(ListGroupsRequest(version=4, states_filter=[])).error_code == 0
    assert time.monotonic() - started >= 0.3

    cluster.inject_fault(FaultRule(int(ApiKey.LIST_GROUPS), FaultKind.DROP))
    client.send_raw(bytes(_framed(ListGroupsRequest(version=4, states_filter=[]))))
    assert client.is_closed_by_server()
    client.close()
    fired = cluster.faults_fired()
    assert [kind for _, _, kind in fired] == ["error", "error", "delay", "drop"]


def _framed(req: object) -> bytes:
    req.with_header(correlation_id=1, client_id="x")  # type: ignore[attr-defined]
    return bytes(req.encode(header=True, framed=True))  # type: ignore[attr-defined]


def test_create_topics_metadata_and_list_offsets(cluster: EmbeddedCluster, wire: WireClient) -> None:
    CT = CreateTopicsRequest.CreatableTopic
    resp = wire.request(CreateTopicsRequest(version=7, timeout_ms=1000, validate_only=False, topics=[
        CT(name="fine", num_partitions=3, replication_factor=1, assignments=[], configs=[]),
        CT(name="bad/name", num_partitions=1, replication_factor=1, assignments=[], configs=[]),
        CT(name="zero", num_partitions=0, replication_factor=1, assignments=[], configs=[]),
        CT(name="rf3", num_partitions=1, replication_factor=3, assignments=[], configs=[]),
    ]))
    assert [t.error_code for t in resp.topics] == [0, ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.INVALID_PARTITIONS,
                                                    ErrorCode.INVALID_REPLICATION_FACTOR]
    again = wire.request(CreateTopicsRequest(version=7, timeout_ms=1000, validate_only=False, topics=[
        CT(name="fine", num_partitions=3, replication_factor=1, assignments=[], configs=[])]))
    assert [t.error_code for t in again.topics] == [ErrorCode.TOPIC_ALREADY_EXISTS]
    MT = MetadataRequest.MetadataRequestTopic
    meta = wire.request(MetadataRequest(version=12, topics=[MT(name="fine"), MT(name="auto"), MT(name="no such!")],
                                        allow_auto_topic_creation=True, include_topic_authorized_operations=False))
    errors = {t.name: t.error_code for t in meta.topics}
    # the request that auto-creates a topic does not see it yet (Kafka 4.4; test_refusals.py)
    assert errors == {"fine": 0, "auto": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "no such!": ErrorCode.INVALID_TOPIC_EXCEPTION}
    assert len(next(t for t in meta.topics if t.name == "fine").partitions) == 3
    cluster.produce("fine", [b"a", b"b", b"c", b"d"], partition=1, timestamp_ms=5000)
    LT = ListOffsetsRequest.ListOffsetsTopic
    LP = LT.ListOffsetsPartition
    offsets = wire.request(ListOffsetsRequest(version=7, replica_id=-1, isolation_level=0, topics=[LT(name="fine", partitions=[
        LP(partition_index=1, current_leader_epoch=-1, timestamp=-1),
        LP(partition_index=1, current_leader_epoch=-1, timestamp=-2),
        LP(partition_index=1, current_leader_epoch=-1, timestamp=5000),
        LP(partition_index=7, current_leader_epoch=-1, timestamp=-1),
    ])]))
    parts = offsets.topics[0].partitions
    assert [(p.error_code, p.offset) for p in parts] == [(0, 4), (0, 0), (0, 0), (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)]


def test_fetch_long_polls_until_data_arrives(cluster: EmbeddedCluster, wire: WireClient) -> None:
    cluster.create_topic("waiting", 1)
    FT = FetchRequest.FetchTopic
    FP = FT.FetchPartition
    req = FetchRequest(version=12, replica_id=-1, max_wait_ms=3000, min_bytes=1, max_bytes=1 << 20,
                       isolation_level=0, session_id=0, session_epoch=-1,
                       topics=[FT(topic="waiting", partitions=[FP(partition=0, current_leader_epoch=-1, fetch_offset=0,
                                                                  last_fetched_epoch=-1, log_start_offset=-1,
                                                                  partition_max_bytes=1 << 20)])],
                       forgotten_topics_data=[], rack_id="")
    import threading
    threading.Timer(0.5, lambda: cluster.produce("waiting", [b"late"])).start()
    started = time.monotonic()
    resp = wire.request(req)
    elapsed = time.monotonic() - started
    part = resp.responses[0].partitions[0]
    assert part.error_code == 0 and part.high_watermark == 1 and part.records
    assert 0.4 <= elapsed < 2.5  # answered when the record came, not at max_wait_ms
    req.topics[0].partitions[0].fetch_offset = 5
    assert wire.request(req).responses[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
