"""The connection's receive buffer: answers larger than it, answers sharing a read, answers split
across reads, the buffer reused under answers already decoded, and its memory given back."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse

from groupclient.network.client import NetworkClient
from groupclient.network.connection import _MIN_ROOM, _SHRINK_AFTER, CLIENT_MAX_VERSIONS, ConnectionState
from groupclient.network.future import RequestFuture
from groupclient.protocol.apis import ApiKey
from tests.memory_broker import FakeStream, take_requests
from tests.memory_wire import (
    NODE, connect, frame, heartbeat_frame, new_client, send_heartbeat, split, state)

FETCH_VERSION = CLIENT_MAX_VERSIONS[ApiKey.FETCH]


def fetch_request(version: int) -> Any:
    return FetchRequest(version=version, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 30,
                        isolation_level=0, session_id=0, session_epoch=-1, topics=[], forgotten_topics_data=[],
                        rack_id="")


def fetch_answer(records: bytes) -> Any:
    partition = FetchResponse.FetchableTopicResponse.PartitionData(
        partition_index=0, error_code=0, high_watermark=1, last_stable_offset=1, log_start_offset=0,
        aborted_transactions=None, preferred_read_replica=-1, records=records)
    return FetchResponse(version=FETCH_VERSION, throttle_time_ms=0, error_code=0, session_id=0, responses=[
        FetchResponse.FetchableTopicResponse(topic="t", partitions=[partition])])


def send_fetch(client: NetworkClient, stream: FakeStream) -> tuple[RequestFuture[Any], int]:
    future = client.send(NODE, FetchRequest, FetchResponse, fetch_request)
    client.poll(0)
    (api_key, _, correlation_id), = take_requests(stream)
    assert api_key == ApiKey.FETCH
    return future, correlation_id


def records_of(future: RequestFuture[Any]) -> bytes:
    assert future.succeeded(), future.exception
    records: bytes = future.value.responses[0].partitions[0].records
    return records


def deliver(client: NetworkClient, stream: FakeStream, chunks: list[bytes]) -> None:
    stream.incoming.extend(chunks)
    for _ in range(len(chunks) + 2):
        if stream.closed or not stream.readable():
            break
        client.poll(0)


def buffer_size(client: NetworkClient) -> int:
    return len(client._conns[NODE]._rbuf)


@settings(max_examples=40, deadline=None, database=None)
@given(sizes=st.lists(st.sampled_from([0, 10, _MIN_ROOM - 90, _MIN_ROOM, 3 * _MIN_ROOM + 7]), min_size=1, max_size=5),
       cuts=st.lists(st.integers(1, 5 * _MIN_ROOM), max_size=10))
def test_answers_of_any_size_in_any_chunks_are_read_and_stay_intact(sizes: list[int], cuts: list[int]) -> None:
    """Each answer's records are its own bytes: later answers reusing the buffer do not change them."""
    client, io, _ = new_client()
    stream = connect(client, io, NODE)
    sent = [send_fetch(client, stream) for _ in sizes]
    payloads = [bytes([i + 1]) * size for i, size in enumerate(sizes)]
    wire = b"".join(frame(fetch_answer(p), cid) for p, (_, cid) in zip(payloads, sent))
    deliver(client, stream, split(wire, cuts))
    assert [records_of(f) for f, _ in sent] == payloads
    assert state(client, NODE) is ConnectionState.READY
    # the buffer grew for the largest answer only (plus the free space a read gets)
    assert buffer_size(client) <= max(_MIN_ROOM, 4 + len(wire)) + _MIN_ROOM
    client.close()


def test_a_grown_buffer_is_given_back_after_a_run_of_small_answers() -> None:
    client, io, _ = new_client()
    stream = connect(client, io, NODE)
    big, cid = send_fetch(client, stream)
    deliver(client, stream, [frame(fetch_answer(b"x" * (4 << 20)), cid)])
    assert len(records_of(big)) == 4 << 20
    grown = buffer_size(client)
    assert grown > 4 << 20
    for _ in range(_SHRINK_AFTER - 1):
        future, cid = send_heartbeat(client, stream, NODE)
        deliver(client, stream, [heartbeat_frame(cid)])
        assert future.succeeded()
    assert buffer_size(client) == grown  # not yet: a large answer may well come next
    future, cid = send_heartbeat(client, stream, NODE)
    deliver(client, stream, [heartbeat_frame(cid)])
    assert future.succeeded() and buffer_size(client) == _MIN_ROOM
    client.close()


def test_a_closed_connection_drops_its_grown_buffer() -> None:
    client, io, _ = new_client()
    stream = connect(client, io, NODE)
    future, cid = send_fetch(client, stream)
    answer = frame(fetch_answer(b"y" * (2 << 20)), cid)
    deliver(client, stream, [answer[: 1 << 20]])  # half an answer, then the broker goes away
    assert buffer_size(client) > 2 << 20 and not future.is_done()
    stream.eof = True
    client.poll(0)
    assert future.failed() and state(client, NODE) is ConnectionState.DISCONNECTED
    assert buffer_size(client) == _MIN_ROOM
    client.close()
