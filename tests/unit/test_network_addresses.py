"""groupclient.network against brokers advertised at impossible addresses, and metadata answers
with any topic error code (the client over the in-memory wire of tests/memory_wire.py)."""

from __future__ import annotations

import random
import socket
from typing import Any

import pytest
from kafka.protocol.consumer.group import HeartbeatRequest, HeartbeatResponse
from kafka.protocol.metadata.api_versions import ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataResponse

from groupclient.clock import FakeClock
from groupclient.errors import ProtocolError, RequestTimedOutError
from groupclient.network.client import NetworkClient, NetworkConfig
from groupclient.network.connection import CLIENT_MAX_VERSIONS, BrokerConnection, ConnectionState
from groupclient.network.future import RequestFuture
from groupclient.network.io import Stream
from groupclient.network.metadata import ClusterMetadata
from groupclient.protocol.apis import ApiKey
from groupclient.error_codes import ErrorCode
from tests.memory_broker import SIZE, FakeStream, api_versions_answer, take_requests

from tests.memory_wire import (
    BROKER, NODE, FakeIO, connect, feed, frame, heartbeat_request, new_client, state,
)


# -- 2. brokers advertised at impossible addresses ------------------------------------------------------
BAD_ADDRESSES = [
    pytest.param("broker", 70000, id="port 70000"), pytest.param("broker", -1, id="port -1"),
    pytest.param("broker", 0, id="port 0"), pytest.param("127.0.0.1", 65536, id="port 65536"),
    pytest.param("", 9092, id="empty host"), pytest.param("bad\x00host", 9092, id="NUL in host"),
    pytest.param("x" * 300, 9092, id="host label too long"), pytest.param(None, 9092, id="null host"),
    pytest.param("broker", None, id="null port"),
]


@pytest.mark.parametrize("host, port", BAD_ADDRESSES)
def test_a_bad_bootstrap_address_is_a_failed_connect_not_an_exception(host: Any, port: int) -> None:
    client, io, clock = new_client(bootstrap=[(host, port), BROKER])
    assert not client.ready(-1)
    client.poll(0)
    assert client.connection_failed(-1) and not io.streams
    assert not client.ready(-1)  # backing off: no new attempt yet
    connect(client, io, -2)  # the other bootstrap server is usable meanwhile
    clock.advance(60_000)
    assert not client.ready(-1) and client.connection_failed(-1)
    client.close()


class UnresolvingIO(FakeIO):
    """Fails like SocketIO does for a name that does not resolve (without asking a real DNS)."""

    def open_stream(self, host: str, port: int) -> Stream:
        if host == "nowhere.invalid":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return super().open_stream(host, port)


def test_an_unresolvable_host_is_a_failed_connect() -> None:
    clock = FakeClock()
    io = UnresolvingIO({BROKER})
    client = NetworkClient(NetworkConfig([("nowhere.invalid", 9092), BROKER], "t"), clock, random.Random(0), io=io)
    assert not client.ready(-1)
    client.poll(0)
    assert client.connection_failed(-1)
    connect(client, io, -2)
    client.close()


def metadata_answer(brokers: list[tuple[int, Any, int]], topics: list[tuple[str, int]]) -> Any:
    broker = MetadataResponse.MetadataResponseBroker
    topic = MetadataResponse.MetadataResponseTopic
    partition = topic.MetadataResponsePartition
    return MetadataResponse(
        version=CLIENT_MAX_VERSIONS[ApiKey.METADATA], throttle_time_ms=0, cluster_id="c", controller_id=1,
        brokers=[broker(node_id=n, host=h, port=p, rack=None) for n, h, p in brokers],
        topics=[topic(error_code=code, name=name, topic_id=None, is_internal=False, partitions=[] if code else [
            partition(error_code=0, partition_index=0, leader_id=1, leader_epoch=0, replica_nodes=[1], isr_nodes=[1],
                      offline_replicas=[])]) for name, code in topics])


def refresh_metadata(client: NetworkClient, stream: FakeStream, answer: Any) -> RequestFuture[Any]:
    client.metadata.request_update()
    future = client.maybe_update_metadata()
    assert future is not None
    client.poll(0)
    (api_key, _, cid), = take_requests(stream)
    assert api_key == ApiKey.METADATA
    feed(client, stream, [frame(answer, cid)])
    assert future.succeeded()
    return future


@pytest.mark.parametrize("host, port", [("broker", 70000), ("broker", -1), ("bad\x00host", 9092)])
def test_a_broker_advertised_at_a_bad_address_fails_alone(host: Any, port: int) -> None:
    good = ("good", 9093)
    client, io, clock = new_client(brokers={BROKER, good})
    stream = connect(client, io, NODE)
    refresh_metadata(client, stream, metadata_answer([(1, host, port), (2, *good)], [("t", 0)]))
    assert client.metadata.brokers.keys() == {1, 2}
    assert not client.ready(1)
    client.poll(0)
    assert client.connection_failed(1)
    connect(client, io, 2)
    for _ in range(4):  # whatever node the random start picks, the failed one is never chosen
        assert client.least_loaded_node() == 2
    # metadata that corrects the address is used at the next attempt
    stream2 = io.streams[-1]
    fixed = ("fixed", 9094)
    io.brokers.add(fixed)
    refresh_metadata(client, stream2, metadata_answer([(1, *fixed), (2, *good)], [("t", 0)]))
    connect(client, io, 1)
    assert io.streams[-1].address == fixed
    client.close()


def test_a_metadata_answer_with_a_null_broker_host_is_refused_whole() -> None:
    """A null host is not a bad address but a malformed answer (the schema has no null there), so
    the whole answer is refused, as Kafka's clients refuse it: ProtocolError, the connection closes,
    nothing of the answer is applied, and the next well-formed answer is."""
    good = ("good", 9093)
    client, io, clock = new_client(brokers={BROKER, good})
    stream = connect(client, io, NODE)
    client.metadata.request_update()
    future = client.maybe_update_metadata()
    assert future is not None
    client.poll(0)
    (_, _, cid), = take_requests(stream)
    feed(client, stream, [frame(metadata_answer([(1, None, 9092), (2, *good)], [("t", 0)]), cid)])
    assert future.failed() and isinstance(future.exception, ProtocolError)
    assert "non-nullable field MetadataResponse.brokers.host is null" in str(future.exception)
    assert stream.closed and client.metadata.version == 0 and not client.metadata.topics()
    clock.advance(1_000)  # past the reconnect backoff
    stream = connect(client, io, NODE)
    refresh_metadata(client, stream, metadata_answer([(1, *BROKER), (2, *good)], [("t", 0)]))
    assert client.metadata.topics() == {"t"} and client.metadata.brokers.keys() == {1, 2}
    client.close()


# -- 6. metadata with any topic error code ----------------------------------------------------------
def test_metadata_keeps_topics_with_any_error_code() -> None:
    metadata = ClusterMetadata(300000)
    answer = metadata_answer([(1, "b", 9092)], [("ok", 0), ("denied", 29), ("future", 999)])
    metadata.update(answer, now=5, complete=True)
    assert metadata.unavailable == {"denied": 29, "future": 999}
    assert metadata.topics() == {"ok"} and metadata.leader_for("ok", 0) == 1 and metadata.version == 1
    metadata.update(metadata_answer([(1, "b", 9092)], [("future", 0)]), now=6, complete=False)
    assert metadata.unavailable == {"denied": 29} and metadata.topics() == {"ok", "future"}


def test_a_metadata_answer_with_an_unknown_code_is_applied_by_the_client(
        wire: tuple[NetworkClient, FakeIO, FakeClock, FakeStream]) -> None:
    client, _, _, stream = wire
    client.set_topics({"ok", "future"})
    refresh_metadata(client, stream, metadata_answer([(1, *BROKER)], [("ok", 0), ("future", 999)]))
    assert client.metadata.unavailable == {"future": 999} and client.metadata.topics() == {"ok"}
    # applied; the errored topic is asked about again after the backoff (100 ms, +-20%), not at once
    now = client.clock.monotonic_ms()
    assert not client.metadata.needs_update(now + 79) and client.metadata.needs_update(now + 120)


def test_metadata_retries_errored_topics_with_a_doubling_backoff() -> None:
    metadata = ClusterMetadata(300000)
    answer = metadata_answer([(1, *BROKER)], [("t", 5)])
    retry_at = []
    for now in (0, 1000, 2000, 3000, 4000, 5000):
        metadata.update(answer, now, complete=False)
        retry_at.append(next(t for t in range(now, now + 2000) if metadata.needs_update(t)) - now)
    # Kafka's: retry_backoff_ms doubling up to retry_backoff_max_ms, each with 20% jitter
    for wait, term in zip(retry_at, [100, 200, 400, 800, 1000, 1000], strict=True):
        assert term * 0.8 <= wait <= term * (1.2 if term < 1000 else 1), retry_at
    metadata.update(metadata_answer([(1, *BROKER)], [("t", 0)]), 6000, complete=False)
    assert not metadata.needs_update(6001) and not metadata.unavailable


def test_a_connection_alone_survives_bad_bytes() -> None:
    """The same guarantee one level down: BrokerConnection.on_readable returns, never raises."""
    io = FakeIO({BROKER})
    conn = BrokerConnection(1, *BROKER, client_id="t", request_timeout_ms=1000, reconnect_backoff_ms=50,
                            reconnect_backoff_max_ms=1000, max_in_flight=5, rng=random.Random(0))
    assert conn.connect(0, io) == []
    stream = io.streams[0]
    conn.on_writable(0)
    (_, version, cid), = take_requests(stream)
    stream.incoming.append(SIZE.pack(9) + SIZE.pack(cid) + b"\xff" * 5)  # a body that does not decode
    failed = conn.on_readable(0)
    assert conn.state is ConnectionState.DISCONNECTED and stream.closed
    assert len(failed) == 1 and isinstance(failed[0][2], ProtocolError)


def test_a_broker_without_our_api_versions_version_is_asked_again_lower() -> None:
    """KIP-511: a broker that does not serve the ApiVersions version we asked answers v0 with
    UNSUPPORTED_VERSION and its own range; the client asks again at that version and gets ready."""
    client, io, _ = new_client()
    client.ready(NODE)
    client.poll(0)
    stream = io.streams[0]
    (_, asked, cid), = take_requests(stream)
    assert asked == 3
    refusal = ApiVersionsResponse(version=0, error_code=int(ErrorCode.UNSUPPORTED_VERSION), api_keys=[
        ApiVersionsResponse.ApiVersion(api_key=int(ApiKey.API_VERSIONS), min_version=0, max_version=1)])
    feed(client, stream, [frame(refusal, cid)])
    client.poll(0)  # writes the second ApiVersions
    (api_key, again, cid2), = take_requests(stream)
    assert (api_key, again) == (ApiKey.API_VERSIONS, 1)
    feed(client, stream, [frame(api_versions_answer(1), cid2)])
    assert state(client, NODE) is ConnectionState.READY
    client.close()


def test_a_metadata_topic_without_a_name_is_skipped() -> None:
    """Metadata v10+ may answer a topic by id with a null name (UNKNOWN_TOPIC_ID): nothing to key it by."""
    metadata = ClusterMetadata(300000)
    answer = metadata_answer([(1, *BROKER)], [("ok", 0), ("gone", int(ErrorCode.UNKNOWN_TOPIC_ID))])
    answer.topics[1].name = None
    metadata.update(answer, 0, complete=False)
    assert metadata.topics() == {"ok"} and None not in metadata.unavailable


def test_a_request_expires_at_its_deadline_so_a_poll_there_does_not_spin(
        wire: tuple[NetworkClient, FakeIO, FakeClock, FakeStream]) -> None:
    """poll() waits until the earliest request deadline; the request must expire *at* it, or a
    poll at that instant waits 0 ms and expires nothing, over and over (a busy loop; in the
    simulator, where time stands still while nobody waits, a hang)."""
    client, _, clock, stream = wire
    future = client.send(NODE, HeartbeatRequest, HeartbeatResponse, heartbeat_request, 500)
    client.poll(0)
    clock.advance(500)
    client.poll(0)
    assert future.failed() and isinstance(future.exception, RequestTimedOutError)
