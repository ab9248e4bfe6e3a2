"""groupclient.network against brokers that send bad bytes or bad addresses, and its thread-safety.

The client runs over an in-memory IOBackend defined here (no sockets, a fake clock, no sleeps);
only addresses the fake does not know go to the real SocketIO, which must refuse them.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.group import HeartbeatRequest, HeartbeatResponse

from groupclient.clock import FakeClock
from groupclient.errors import DisconnectedError, ProtocolError
from groupclient.network.client import NetworkClient
from groupclient.network.connection import ConnectionState
from tests.memory_broker import SIZE, FakeStream, take_requests

from tests.memory_wire import (
    BROKER, LIMIT, NODE, FakeIO, connect, feed, heartbeat_frame, heartbeat_request, new_client, send_heartbeat, split, state,
)


# -- 1. undecodable or misframed answers ------------------------------------------------------------
def body_of(correlation_id: int) -> bytes:
    return heartbeat_frame(correlation_id)[4:]


BAD_ANSWERS: dict[str, Callable[[int], list[bytes]]] = {
    "arbitrary bytes": lambda cid: [bytes(range(7, 250, 3))],
    "negative size": lambda cid: [SIZE.pack(-5) + body_of(cid)],
    "size zero": lambda cid: [SIZE.pack(0)],
    "size below four": lambda cid: [SIZE.pack(3) + b"abc"],
    "size over the limit": lambda cid: [SIZE.pack(LIMIT + 1)],
    "size of 2**31-1 in pieces": lambda cid: [b"\x7f", b"\xff\xff", b"\xff"],
    "size four, no body": lambda cid: [SIZE.pack(4) + SIZE.pack(cid)],
    "right size, garbage inside": lambda cid: [SIZE.pack(12) + b"\xfe" * 12],
    "right id, truncated body": lambda cid: [SIZE.pack(6) + SIZE.pack(cid) + b"\x00\x00"],
    "wrong correlation id": lambda cid: [heartbeat_frame(cid + 1)],
    "a second answer nobody asked for": lambda cid: [heartbeat_frame(cid) + heartbeat_frame(cid + 2)],
}


@pytest.mark.parametrize("make", BAD_ANSWERS.values(), ids=BAD_ANSWERS.keys())
def test_a_bad_answer_fails_the_in_flight_requests_with_protocol_error_and_closes(
        wire: tuple[NetworkClient, FakeIO, FakeClock, FakeStream], make: Callable[[int], list[bytes]]) -> None:
    client, io, clock, stream = wire
    first, cid = send_heartbeat(client, stream, NODE)
    second = client.send(NODE, HeartbeatRequest, HeartbeatResponse, heartbeat_request)
    feed(client, stream, make(cid))
    assert state(client, NODE) is ConnectionState.DISCONNECTED and stream.closed
    assert second.failed() and isinstance(second.exception, ProtocolError)
    assert first.is_done() and (first.succeeded() or isinstance(first.exception, ProtocolError))
    # backed off, then reconnects on a new stream
    assert not client.ready(NODE) and len(io.streams) == 1
    clock.advance(1000)
    assert connect(client, io, NODE) is not stream


def test_a_truncated_answer_then_close_is_a_plain_disconnect(
        wire: tuple[NetworkClient, FakeIO, FakeClock, FakeStream]) -> None:
    client, _, _, stream = wire
    future, cid = send_heartbeat(client, stream, NODE)
    feed(client, stream, [heartbeat_frame(cid)[:-1]], eof=True)
    assert state(client, NODE) is ConnectionState.DISCONNECTED
    error = future.exception
    assert future.failed() and isinstance(error, DisconnectedError) and not isinstance(error, ProtocolError)


def test_answers_split_anywhere_are_read(wire: tuple[NetworkClient, FakeIO, FakeClock, FakeStream]) -> None:
    client, _, _, stream = wire
    first, cid = send_heartbeat(client, stream, NODE)
    second, cid2 = send_heartbeat(client, stream, NODE)
    data = heartbeat_frame(cid) + heartbeat_frame(cid2)
    feed(client, stream, [data[i:i + 1] for i in range(len(data))])
    assert first.succeeded() and second.succeeded() and state(client, NODE) is ConnectionState.READY


def test_an_api_versions_answer_without_api_keys_is_a_protocol_error() -> None:
    client, io, _ = new_client()
    client.ready(NODE)
    client.poll(0)
    stream = io.streams[0]
    (_, _, cid), = take_requests(stream)
    # v3: no error, a null api_keys (compact) array, throttle 0, no tags: decodes, but names no API
    payload = SIZE.pack(cid) + struct.pack(">h", 0) + b"\x00" + SIZE.pack(0) + b"\x00"
    feed(client, stream, [SIZE.pack(len(payload)) + payload])
    assert state(client, NODE) is ConnectionState.DISCONNECTED and client.connection_failed(NODE)
    client.close()


def first_frame_verdict(data: bytes, correlation_id: int) -> str:
    """What the framing alone says about the first answer: incomplete, bad, or up to the decoder."""
    if len(data) < 4:
        return "incomplete"
    size = SIZE.unpack_from(data, 0)[0]
    if size < 4 or size > LIMIT:
        return "bad"
    if len(data) < 4 + size:
        return "incomplete"
    return "decoder" if SIZE.unpack_from(data, 4)[0] == correlation_id else "bad"


def structured_answers(correlation_id: int) -> st.SearchStrategy[bytes]:
    """Frames made of a plausible or bad size, the right or a wrong id, and a good or mangled body."""
    good = heartbeat_frame(correlation_id)[8:]
    bodies = st.one_of(st.just(good), st.binary(max_size=40), st.integers(0, len(good)).map(lambda n: good[:n]),
                       st.binary(min_size=1, max_size=8).map(lambda tail: good + tail))
    ids = st.one_of(st.just(correlation_id), st.integers(-(2**31), 2**31 - 1))

    def assemble(parts: tuple[bytes, int, int | None, bytes]) -> bytes:
        body, cid, size, rest = parts
        payload = SIZE.pack(cid) + body
        return SIZE.pack(len(payload) if size is None else size) + payload + rest

    sizes = st.one_of(st.none(), st.integers(-(2**31), 3), st.integers(LIMIT + 1, 2**31 - 1), st.integers(4, 64))
    return st.tuples(bodies, ids, sizes, st.binary(max_size=16)).map(assemble)


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_no_bytes_a_broker_sends_make_the_client_raise(data: st.DataObject) -> None:
    client, io, _ = new_client()
    stream = connect(client, io, NODE)
    future, cid = send_heartbeat(client, stream, NODE)
    wire = data.draw(st.one_of(st.binary(max_size=64), structured_answers(cid)), label="wire")
    cuts = data.draw(st.lists(st.integers(1, max(len(wire) - 1, 1)), max_size=6), label="cuts")
    feed(client, stream, split(wire, cuts))  # nothing escapes poll()

    verdict = first_frame_verdict(wire, cid)
    closed = state(client, NODE) is ConnectionState.DISCONNECTED
    event(f"{verdict}: {'closed' if closed else 'open'}, {'succeeded' if future.succeeded() else 'not succeeded'}")
    assert closed == stream.closed
    if verdict == "incomplete":
        assert not future.is_done() and not closed
    elif verdict == "bad":
        assert closed and future.failed() and isinstance(future.exception, ProtocolError)
    else:  # the decoder decides: an answer, or a ProtocolError and a closed connection
        assert future.succeeded() or (closed and isinstance(future.exception, ProtocolError))
    if future.failed():
        assert closed
    # and a close by the broker leaves nothing pending
    feed(client, stream, [], eof=True)
    assert state(client, NODE) is ConnectionState.DISCONNECTED and future.is_done()
    assert future.succeeded() or isinstance(future.exception, DisconnectedError)
    client.close()


@settings(max_examples=60, deadline=None, database=None)
@given(cuts=st.lists(st.integers(1, 200), max_size=12))
def test_good_answers_split_into_any_chunks_are_read(cuts: list[int]) -> None:
    client, io, _ = new_client()
    stream = connect(client, io, NODE)
    first, cid = send_heartbeat(client, stream, NODE)
    second, cid2 = send_heartbeat(client, stream, NODE)
    feed(client, stream, split(heartbeat_frame(cid) + heartbeat_frame(cid2), cuts))
    assert first.succeeded() and second.succeeded() and state(client, NODE) is ConnectionState.READY
    client.close()


# -- 3. completions run outside the client lock ---------------------------------------------------
def test_a_listener_may_call_the_client_when_add_node_fails_its_request() -> None:
    old, new = ("coordinator", 9100), ("coordinator", 9200)
    client, io, _ = new_client(brokers={BROKER, old, new})
    coordinator = 2**31 - 2
    client.add_node(coordinator, *old)
    stream = connect(client, io, coordinator)
    future, _ = send_heartbeat(client, stream, coordinator)
    seen: list[BaseException] = []

    def on_failure(exc: BaseException) -> None:
        seen.append(exc)
        client.disconnect(coordinator)  # takes the client lock

    future.add_errback(on_failure)
    mover = threading.Thread(target=client.add_node, args=(coordinator, *new), daemon=True)
    mover.start()
    mover.join(10)
    assert not mover.is_alive(), "add_node deadlocked: a listener ran under the client lock"
    assert seen and isinstance(seen[0], DisconnectedError)
    assert connect(client, io, coordinator).address == new  # the new address is used
    client.close()


