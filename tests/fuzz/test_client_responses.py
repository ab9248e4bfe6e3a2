"""Fuzzing the client's response decoding: BrokerConnection over an in-memory stream.

For every API the client sends and every version it may use, answers are drawn from the
response schema with random field values, then delivered as they are, spoilt inside their frame,
or framed wrongly (a wrong correlation id, a size of 2 GB, a negative size, a second answer
nobody asked for), in chunks cut anywhere.  ``on_readable`` never raises; an intact answer is
read as sent; anything else is read as some answer or fails the request with ProtocolError
(a groupclient.errors class) and closes the connection, which may connect again after its
backoff.  The real-socket version is test_client_socket.py.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from groupclient.errors import DisconnectedError, ProtocolError
from groupclient.network.client import NetworkClient
from groupclient.network.connection import CLIENT_MAX_VERSIONS, BrokerConnection, Completion, ConnectionState
from groupclient.network.metadata import ClusterMetadata
from groupclient.protocol.apis import API_SPECS, ApiKey
from groupclient.protocol.decoding import MalformedMessage, check_nulls
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.client import MAX_RESPONSE_BYTES, MemoryIO, faults, ready_connection
from tests.memory_broker import take_requests
from tests.fuzz.client_apis import classes
from tests.fuzz.schema import encode_response, messages

CASES = [pytest.param(ApiKey(key), version, id=f"{ApiKey(key).name}-v{version}")
         for key, newest in CLIENT_MAX_VERSIONS.items() for version in range(newest + 1)]
EXAMPLES = 6  # per API version: ~110 of them


def send(conn: BrokerConnection, io: MemoryIO, key: ApiKey, version: int) -> tuple[Any, int]:
    """A request of ``key`` at ``version`` (all fields at their defaults) written out; its future
    and correlation id."""
    request, response = classes(key)
    future = conn.send(request(version=version), response, 0)
    conn.on_writable(0)
    (api_key, sent_version, correlation_id), = take_requests(io.stream)
    assert (api_key, sent_version) == (key, version)
    return future, correlation_id


def deliver(conn: BrokerConnection, io: MemoryIO, chunks: list[bytes]) -> list[Completion]:
    """The chunks, one per read, until all are read or the connection closed; the futures are
    completed as NetworkClient completes them."""
    io.stream.incoming.extend(chunks)
    completions: list[Completion] = []
    for _ in range(len(chunks) + 1):
        if conn.state is ConnectionState.DISCONNECTED or not io.stream.incoming:
            break
        completions += conn.on_readable(0)  # never raises: that is the first thing tested
    NetworkClient._finish(completions)
    return completions


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = [0, *sorted({c for c in cuts if 0 < c < len(data)}), len(data)]
    return [data[a:b] for a, b in zip(points, points[1:])]


def as_sent(key: ApiKey, response: Any) -> Any:
    """A broker answers ApiVersions with an error at v0, whatever version was asked (KIP-511)."""
    if key is ApiKey.API_VERSIONS and response.error_code:
        return type(response)(version=0, error_code=response.error_code, api_keys=response.api_keys)
    return response


@pytest.mark.parametrize("key, version", CASES)
def test_every_answer_is_read_or_refused_with_a_protocol_error(key: ApiKey, version: int) -> None:
    @fuzz_settings(EXAMPLES)
    @given(response=messages(classes(key)[1], version), data=st.data())
    def run(response: Any, data: st.DataObject) -> None:
        io = MemoryIO()
        conn = ready_connection(io)
        future, correlation_id = send(conn, io, key, version)
        response = as_sent(key, response)
        answer = encode_response(response, correlation_id)
        fault = data.draw(faults(), label="fault")
        wire = fault.apply(answer, correlation_id)
        cuts = data.draw(st.lists(st.integers(1, max(len(wire) - 1, 1)), max_size=4), label="cuts")
        completions = deliver(conn, io, split(wire, cuts))
        closed = conn.state is ConnectionState.DISCONNECTED
        event(f"{fault.kind}: {'closed' if closed else 'open'}")
        assert closed == io.stream.closed
        (done, ok, value), *_ = completions
        assert done is future
        if fault.kind == "intact":
            assert ok and value == response and not closed
        elif fault.kind in ("wrong id", "bad size"):
            assert not ok and isinstance(value, ProtocolError) and closed
        elif fault.kind == "unasked":
            assert ok and value == response and closed  # the second answer closed the connection
        elif not ok:
            assert isinstance(value, ProtocolError) and closed, repr(value)
        if closed:  # backed off, then free to connect again
            assert not conn.in_flight and conn.can_connect(1000)

    run()


@pytest.mark.parametrize("size", [2**31 - 1, MAX_RESPONSE_BYTES + 1, -(2**31), 3])
def test_a_size_out_of_bounds_is_refused_before_anything_is_allocated(size: int) -> None:
    io = MemoryIO()
    conn = ready_connection(io)
    future, _ = send(conn, io, ApiKey.HEARTBEAT, 4)
    tracemalloc.start()
    try:
        deliver(conn, io, [size.to_bytes(4, "big", signed=True) + b"\x00" * 64])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert conn.state is ConnectionState.DISCONNECTED
    assert future.failed() and isinstance(future.exception, ProtocolError)
    assert peak < 1_000_000, f"{peak} bytes allocated for a frame of {size} bytes"


def test_a_declared_frame_the_broker_never_finishes_costs_its_size_until_the_connection_closes() -> None:
    """A size under the limit is trusted (the buffer for it is allocated: bounded by
    max_response_bytes, as Kafka's clients bound it), and given back when the connection closes."""
    io = MemoryIO()
    conn = ready_connection(io)
    future, correlation_id = send(conn, io, ApiKey.HEARTBEAT, 4)
    declared = 50_000_000
    deliver(conn, io, [declared.to_bytes(4, "big") + correlation_id.to_bytes(4, "big") + b"\x00" * 100])
    assert conn.state is ConnectionState.READY and not future.is_done()
    assert len(conn._rbuf) <= declared + 4 + 64 * 1024
    io.stream.eof = True
    NetworkClient._finish(conn.on_readable(0))
    error = future.exception
    # the broker closed early: a disconnect, not bytes that were misread
    assert future.failed() and isinstance(error, DisconnectedError) and not isinstance(error, ProtocolError)
    assert len(conn._rbuf) <= 64 * 1024


@pytest.mark.parametrize("version", range(CLIENT_MAX_VERSIONS[ApiKey.METADATA] + 1))
def test_any_metadata_answer_is_applied(version: int) -> None:
    """What the client does first with an answer it read: any well-formed Metadata answer (any
    node ids, hosts, ports, racks, partitions and error codes) is applied, and then queried."""

    @fuzz_settings(EXAMPLES)
    @given(response=messages(API_SPECS[ApiKey.METADATA].response, version), complete=st.booleans())
    def run(response: Any, complete: bool) -> None:
        metadata = ClusterMetadata(300_000)
        metadata.update(response, 0, complete)
        assert metadata.version == 1
        for topic in metadata.topics():
            for partition in metadata.partitions_for_topic(topic) or ():
                metadata.leader_for(topic, partition)
            metadata.partition_racks(topic)
        metadata.needs_update(1)

    run()


@pytest.mark.parametrize("key, version", CASES)
def test_an_answer_with_a_null_where_the_schema_has_none_is_refused(key: ApiKey, version: int) -> None:
    """kafka-python reads a null in a non-nullable string, bytes or array as None, which no code
    reading the answer expects; the client refuses such an answer as Kafka's clients do:
    ProtocolError, and the connection closes."""
    response_cls = classes(key)[1]

    @fuzz_settings(EXAMPLES)
    @given(response=messages(response_cls, version, nulls=True))
    def run(response: Any) -> None:
        io = MemoryIO()
        conn = ready_connection(io)
        future, correlation_id = send(conn, io, key, version)
        response = as_sent(key, response)
        deliver(conn, io, [encode_response(response, correlation_id)])
        try:
            check_nulls(response, response._struct, response.version, response_cls.__name__)
        except MalformedMessage:
            event("null where the schema has none")
            assert future.failed() and isinstance(future.exception, ProtocolError), future.value
            assert "non-nullable" in str(future.exception) and conn.state is ConnectionState.DISCONNECTED
        else:
            assert future.succeeded() and future.value == response and conn.state is ConnectionState.READY

    run()
