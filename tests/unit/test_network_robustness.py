"""groupclient.network against brokers that send bad bytes or bad addresses, and its thread-safety.

The client runs over an in-memory IOBackend defined here (no sockets, a fake clock, no sleeps);
only addresses the fake does not know go to the real SocketIO, which must refuse them.
"""

from __future__ import annotations

import random
import logging
import socket
import struct
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.group import HeartbeatRequest, HeartbeatResponse
from kafka.protocol.metadata.api_versions import ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataResponse

from groupclient.clock import FakeClock
from groupclient.errors import (
    DisconnectedError, FatalError, FatalGroupError, InternalError, ProtocolError, RequestTimedOutError,
)
from groupclient.network.client import NetworkClient, NetworkConfig
from groupclient.network.connection import CLIENT_MAX_VERSIONS, BrokerConnection, ConnectionState
from groupclient.network import future as future_module
from groupclient.network.future import RequestFuture
from groupclient.network.io import EVENT_READ, EVENT_WRITE, SocketIO, Stream
from groupclient.network.metadata import ClusterMetadata
from groupclient.protocol.apis import ApiKey
from groupclient.error_codes import ErrorCode
from tests.memory_broker import SIZE, FakeStream, api_versions_answer, take_requests

LIMIT = 100_000_000  # BrokerConnection's default max_response_bytes
BROKER = ("broker", 9092)


# -- an in-memory IOBackend ------------------------------------------------------------------
class FakePoller:
    """Level-triggered: a stream is always writable, readable while it has bytes or its EOF."""

    def __init__(self) -> None:
        self.registered: dict[int, tuple[FakeStream, int, Any]] = {}

    @staticmethod
    def _fake(stream: Stream) -> FakeStream:
        assert isinstance(stream, FakeStream)
        return stream

    def register(self, stream: Stream, events: int, data: Any) -> None:
        assert id(stream) not in self.registered
        self.registered[id(stream)] = (self._fake(stream), events, data)

    def modify(self, stream: Stream, events: int, data: Any) -> None:
        assert id(stream) in self.registered
        self.registered[id(stream)] = (self._fake(stream), events, data)

    def unregister(self, stream: Stream) -> None:
        self.registered.pop(id(stream), None)

    def select(self, timeout_ms: int) -> list[tuple[Any, int]]:
        ready = []
        for stream, mask, data in list(self.registered.values()):
            events = (mask & EVENT_WRITE) | (mask & EVENT_READ if stream.readable() else 0)
            if events:
                ready.append((data, events))
        return ready

    def interrupt(self) -> None:
        pass

    def close(self) -> None:
        self.registered.clear()


class FakeIO:
    def __init__(self, brokers: set[tuple[str, int]]) -> None:
        self.brokers = brokers
        self.streams: list[FakeStream] = []

    def open_stream(self, host: str, port: int) -> Stream:
        if (host, port) not in self.brokers:
            # the real backend must refuse an impossible address with OSError, and nothing else
            stream = SocketIO().open_stream(host, port)
            stream.close()
            raise AssertionError(f"SocketIO tried to connect to {host!r}:{port!r}")
        stream = FakeStream((host, port))
        self.streams.append(stream)
        return stream

    def new_poller(self) -> FakePoller:
        return FakePoller()


# -- the broker's side -----------------------------------------------------------------------
def frame(response: Any, correlation_id: int) -> bytes:
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))


def heartbeat_request(version: int) -> Any:
    return HeartbeatRequest(version=version, group_id="g", generation_id=1, member_id="m", group_instance_id=None)


def heartbeat_answer() -> Any:
    return HeartbeatResponse(version=CLIENT_MAX_VERSIONS[ApiKey.HEARTBEAT], throttle_time_ms=0, error_code=0)


def new_client(brokers: set[tuple[str, int]] | None = None,
               bootstrap: list[tuple[str, int]] | None = None) -> tuple[NetworkClient, FakeIO, FakeClock]:
    clock = FakeClock()
    io = FakeIO({BROKER} if brokers is None else brokers)
    client = NetworkClient(NetworkConfig(bootstrap or [BROKER], "t"), clock, random.Random(0), io=io)
    return client, io, clock


def connect(client: NetworkClient, io: FakeIO, node: int) -> FakeStream:
    """Connect to ``node`` and answer its ApiVersions request; the stream of the ready connection."""
    for _ in range(10):
        if client.ready(node):
            return io.streams[-1]
        client.poll(0)
        if io.streams:
            for api_key, version, correlation_id in take_requests(io.streams[-1]):
                assert api_key == ApiKey.API_VERSIONS
                io.streams[-1].incoming.append(frame(api_versions_answer(version), correlation_id))
    raise AssertionError(f"node {node} never became ready")


def send_heartbeat(client: NetworkClient, stream: FakeStream, node: int) -> tuple[RequestFuture[Any], int]:
    """A Heartbeat in flight to ``node``, written to the wire; the future and correlation id."""
    future = client.send(node, HeartbeatRequest, HeartbeatResponse, heartbeat_request)
    client.poll(0)
    (api_key, _, correlation_id), = take_requests(stream)
    assert api_key == ApiKey.HEARTBEAT and not future.is_done()
    return future, correlation_id


def feed(client: NetworkClient, stream: FakeStream, chunks: list[bytes], eof: bool = False) -> None:
    """Deliver the chunks (one per recv) and poll until the client read them or closed the stream."""
    stream.incoming.extend(chunks)
    stream.eof = eof
    for _ in range(len(chunks) + 2):
        if stream.closed or not stream.readable():
            break
        client.poll(0)


def state(client: NetworkClient, node: int) -> ConnectionState:
    return client._conns[node].state


def heartbeat_frame(correlation_id: int) -> bytes:
    return frame(heartbeat_answer(), correlation_id)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = [0, *sorted(c for c in set(cuts) if 0 < c < len(data)), len(data)]
    return [data[a:b] for a, b in zip(points, points[1:]) if b > a]


NODE = -1  # the bootstrap server's node id


@pytest.fixture
def wire() -> Iterator[tuple[NetworkClient, FakeIO, FakeClock, FakeStream]]:
    client, io, clock = new_client()
    stream = connect(client, io, NODE)
    yield client, io, clock, stream
    client.close()


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


# -- 4. compose with an adapter that raises -------------------------------------------------------------
def test_compose_fails_the_composed_future_when_the_adapter_raises(caplog: pytest.LogCaptureFixture) -> None:
    source: RequestFuture[int] = RequestFuture()
    boom = KeyError("no such field")

    def adapter(value: int, out: RequestFuture[str]) -> None:
        raise boom

    composed = source.compose(adapter)
    with caplog.at_level(logging.ERROR, logger="groupclient.network"):
        source.success(1)
    # an adapter's own bug is fatal, never retried: InternalError, the bug its cause, logged
    assert composed.failed() and isinstance(composed.exception, InternalError) and not composed.retriable()
    assert isinstance(composed.exception, FatalError) and composed.exception.__cause__ is boom
    assert "no such field" in str(composed.exception)
    assert any(r.exc_info and r.exc_info[1] is boom for r in caplog.records)


def test_compose_passes_a_groupclient_error_from_the_adapter_as_it_is() -> None:
    source: RequestFuture[int] = RequestFuture()
    refused = FatalGroupError(ErrorCode.GROUP_AUTHORIZATION_FAILED, "test")

    def adapter(value: int, out: RequestFuture[str]) -> None:
        raise refused

    composed = source.compose(adapter)
    source.success(1)
    assert composed.exception is refused


def test_compose_keeps_the_adapters_answer_when_it_raises_after_answering() -> None:
    source: RequestFuture[int] = RequestFuture()

    def adapter(value: int, out: RequestFuture[int]) -> None:
        out.success(value)
        raise RuntimeError("after the answer")

    composed = source.compose(adapter)
    source.success(5)
    assert composed.value == 5


# -- 5. RequestFuture across threads --------------------------------------------------------------
def _switch_on_every_line(frame: FrameType, event: str, arg: Any) -> Any:
    """A tracer for RequestFuture's frames: each line event runs Python code, where the
    interpreter may switch threads.  CPython 3.11 happens to have no switch point between a check
    of ``_done`` and the list append after it; 3.10 and free-threaded builds do."""
    return _switch_on_every_line if frame.f_code.co_filename == future_module.__file__ else None


def test_listeners_added_while_another_thread_completes_run_exactly_once() -> None:
    iterations = 2000
    futures: list[RequestFuture[int]] = [RequestFuture() for _ in range(iterations)]
    adding = [threading.Event() for _ in range(iterations)]
    runs: list[list[int]] = [[] for _ in range(iterations)]  # per future: how often each listener ran

    def counter(i: int, k: int) -> Callable[[Any], None]:
        def count(_: Any) -> None:
            runs[i][k] += 1
        return count

    def complete() -> None:
        for i, future in enumerate(futures):
            assert adding[i].wait(10)  # complete while the other thread is adding listeners
            if i % 2:
                future.success(i)
            else:
                future.failure(ValueError(i))

    def listen() -> None:
        for i, future in enumerate(futures):
            adding[i].set()
            after_done = 3  # and a few once it is done, which must run at once
            for k in range(10_000):
                runs[i].append(0)
                future.add_both(counter(i, k))
                if future.is_done():
                    after_done -= 1
                    if not after_done:
                        break

    old_interval, old_trace = sys.getswitchinterval(), threading.gettrace()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, to hit the race
    threading.settrace(_switch_on_every_line)
    try:
        threads = [threading.Thread(target=complete, daemon=True), threading.Thread(target=listen, daemon=True)]
        for t in threads:
            t.start()
    finally:
        threading.settrace(old_trace)
    try:
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(old_interval)
    assert not any(t.is_alive() for t in threads)
    wrong = [i for i, r in enumerate(runs) if set(r) != {1}]
    assert not wrong, f"{len(wrong)} of {iterations} futures ran a listener other than once, e.g. {runs[wrong[0]]}"


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
