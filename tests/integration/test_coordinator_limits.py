"""The coordinator over real sockets: connection limits, the idle timeout, and DeleteGroups
spoken by kafka-python's admin client."""

from __future__ import annotations

import logging
import socket
import time

import pytest
from kafka.admin import KafkaAdminClient
from kafka.protocol.consumer.group import JoinGroupRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from kafka.structs import OffsetAndMetadata, TopicPartition

from groupclient.coordinator import EmbeddedCluster

from .wire import WireClient


def _metadata_ok(client: WireClient) -> bool:
    request = MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False,
                              include_topic_authorized_operations=False)
    return bool(client.request(request).brokers)


def _closed_by_server(client: WireClient, timeout_s: float = 5.0) -> bool:
    """True once the node closes the connection; False if it is still open after ``timeout_s``."""
    client.sock.settimeout(timeout_s)
    try:
        return client.sock.recv(1) == b""
    except socket.timeout:
        return False
    except ConnectionError:
        return True


def _admitted_connection(cluster: EmbeddedCluster, timeout_s: float = 10.0) -> WireClient:
    """A new connection that gets answered, once the node has released a slot."""
    admitted: list[WireClient] = []

    def try_once() -> bool:
        client = WireClient(cluster.bootstrap_servers, 5)
        try:
            if _metadata_ok(client):
                admitted.append(client)
                return True
        except OSError:  # closed at once: no slot free yet
            pass
        client.close()
        return False

    if not cluster.wait_until(try_once, timeout_s, interval_s=0.02):
        raise AssertionError(f"no connection admitted within {timeout_s} s")
    return admitted[0]


@pytest.mark.integration
@pytest.mark.parametrize("limit", ["max_connections", "max_connections_per_ip"])
def test_connections_over_a_limit_are_closed_at_once(limit: str, caplog: pytest.LogCaptureFixture) -> None:
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0, **{limit: 2}) as cluster:
        address = cluster.bootstrap_servers
        kept = [WireClient(address, 5), WireClient(address, 5)]
        extra = WireClient(address, 5)
        try:
            assert all(_metadata_ok(c) for c in kept)
            with caplog.at_level(logging.WARNING):
                assert _closed_by_server(extra)
                assert cluster.wait_until(lambda: any("refusing connection" in r.getMessage()
                                                      for r in caplog.records), 10, interval_s=0.02)
            assert all(_metadata_ok(c) for c in kept)  # the admitted ones are untouched
            kept.pop().close()
            kept.append(_admitted_connection(cluster))  # a freed slot is usable again
        finally:
            extra.close()
            for c in kept:
                c.close()


@pytest.mark.integration
def test_idle_connections_are_closed_and_busy_ones_kept() -> None:
    # an idle limit ten times the busy connection's request interval: a pause of the test's thread
    # (a loaded machine) shorter than 900 ms does not make the busy one idle
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0, connections_max_idle_ms=1000) as cluster:
        idle, busy = WireClient(cluster.bootstrap_servers, 5), WireClient(cluster.bootstrap_servers, 5)
        try:
            assert _metadata_ok(idle) and _metadata_ok(busy)
            started = time.monotonic()
            for _ in range(16):  # a request every 100 ms keeps a connection open past 1000 ms
                # real time on purpose: the node's idle timer is the thing under test
                time.sleep(0.1)
                assert _metadata_ok(busy)
            assert _closed_by_server(idle, timeout_s=5.0)
            assert time.monotonic() - started < 7
            assert _metadata_ok(busy)
        finally:
            idle.close()
            busy.close()


@pytest.mark.integration
def test_a_request_held_longer_than_the_idle_timeout_is_not_idleness() -> None:
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=800, connections_max_idle_ms=300) as cluster:
        member = WireClient(cluster.bootstrap_servers, 5)
        try:
            started = time.monotonic()
            joined = member.request(JoinGroupRequest(  # v3: answered when the 800 ms initial delay ends
                version=3, group_id="held", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                member_id="", protocol_type="consumer",
                protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"m")]))
            assert joined.error_code == 0 and time.monotonic() - started >= 0.8
            assert _metadata_ok(member)  # still open: the idle clock starts at the answer
        finally:
            member.close()


@pytest.mark.integration
def test_delete_groups_over_the_wire_with_kafka_python() -> None:
    with EmbeddedCluster(nodes=2, group_initial_rebalance_delay_ms=0) as cluster:
        cluster.create_topic("t", 2)
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10_000)
        member_connection: WireClient | None = None
        try:
            committed = admin.alter_group_offsets("idle-group", {TopicPartition("t", 0): OffsetAndMetadata(5, "", -1)})
            assert [e.__name__ for e in committed.values()] == ["NoError"]
            assert cluster.committed_offsets("idle-group") == {("t", 0): 5}
            busy = cluster.coordinator_of("busy-group")
            assert busy is not None
            member_connection = WireClient(cluster.address_of(busy))
            joined = member_connection.request(JoinGroupRequest(
                version=3, group_id="busy-group", session_timeout_ms=30_000, rebalance_timeout_ms=30_000,
                member_id="", protocol_type="consumer",
                protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"m")]))
            assert joined.error_code == 0
            results = admin.delete_groups(["idle-group", "busy-group", "never-seen"])
            assert results == {"idle-group": "OK", "busy-group": "NonEmptyGroupError",
                               "never-seen": "GroupIdNotFoundError"}
            assert cluster.committed_offsets("idle-group") == {}
            assert cluster.describe_group("idle-group") is None
            other = 1 - busy
            wrong = admin.delete_groups(["busy-group"], group_coordinator_id=other)
            assert wrong == {"busy-group": "NotCoordinatorError"}
        finally:
            if member_connection is not None:
                member_connection.close()
            admin.close()
