"""Defects found while fuzzing the reading of a peer's bytes, a test each (fixed in
groupclient/protocol/decoding.py).

1. Tagged fields were read in time quadratic in the message: kafka-python's generated decoders
   copy the rest of the message for each struct that has tagged fields, so a 2.4 MB request of
   small entries with a tag each kept the coordinator's event loop (every connection) busy for
   over ten seconds, and a 100 MB one for hours; a broker's answer did the same to a client.
2. A null where the schema allows none (a bit flip turns a length into -1) was read as None and
   crashed the handler: UNKNOWN_SERVER_ERROR and a traceback, or for a version not served, the
   connection closed "after an internal error".  Kafka refuses such a request and closes.
3. A request whose last string ran past the end of its frame was read with the string cut short.

The linear-time tests measure how the CPU time of the thread that decodes grows from a quarter
of the entries to all of them (the best of two tries each): about 4x when linear, 16x when
quadratic.  A ratio measured in one run holds on a slow or busy machine, where a bound in seconds
did not (4.04 s against a 4.0 s bound, in a clean-clone run on two loaded cores).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka.protocol.admin.groups import DescribeGroupsRequest, ListGroupsRequest, ListGroupsResponse
from kafka.protocol.consumer.group import (
    HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, OffsetCommitRequest, SyncGroupRequest,
)

from groupclient.coordinator import EmbeddedCluster
from groupclient.network.client import NetworkClient
from groupclient.network.connection import ConnectionState
from groupclient.protocol.apis import ApiKey
from groupclient.error_codes import ErrorCode
from tests.fuzz.client import MemoryIO, ready_connection
from tests.memory_broker import take_requests
from tests.fuzz.schema import encode_request, uvarint
from tests.fuzz.server import ask, check_answer, fail_on_server_errors, fuzz_cluster

ENTRIES = 400_000  # entries of 6-7 bytes each: frames of 2.4-2.8 MB
GROWTH_BOUND = 8.0  # CPU time of ENTRIES over that of ENTRIES // 4: ~4 read in place, ~16 quadratic


def growth(measure: Callable[[int], float]) -> float:
    """How many times longer ``measure`` (CPU seconds to read that many entries) takes for
    ENTRIES than for a quarter of them, the best of two tries each (the least disturbed)."""
    small = min(measure(ENTRIES // 4) for _ in range(2))
    large = min(measure(ENTRIES) for _ in range(2))
    return large / max(small, 1e-6)


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[EmbeddedCluster]:
    yield from fuzz_cluster()


def leave_group_of_tagged_members(count: int) -> bytes:
    """LeaveGroup v5 naming ``count`` members, each with an unknown tagged field (valid, KIP-482)."""
    header = struct.pack(">hhih", ApiKey.LEAVE_GROUP, 5, 77, 4) + b"fuzz" + b"\x00"
    member = b"\x01" + b"\x00" + b"\x00" + b"\x01\x09\x00"  # member "", no instance id, no reason; tag 9, 0 bytes
    # an empty group id: answered INVALID_GROUP_ID once every member was read, with a short answer
    return header + b"\x01" + uvarint(count + 1) + member * count + b"\x00"


def test_the_coordinator_reads_tagged_fields_in_linear_time(fuzzed: EmbeddedCluster,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    node = fuzzed._require_core().nodes[0]

    def measure(entries: int) -> float:
        payload = leave_group_of_tagged_members(entries)

        async def timed() -> tuple[bytes | None, float]:
            started = time.thread_time()  # the event loop's thread: what every connection waits on
            frame = await node.answer_frame(payload, "127.0.0.1")
            return frame, time.thread_time() - started

        frame, cpu_s = fuzzed._run(timed())
        assert frame is not None
        answer = check_answer(payload, frame)
        assert answer.error_code == ErrorCode.INVALID_GROUP_ID and answer.members == []
        return cpu_s

    grew = growth(measure)
    assert grew < GROWTH_BOUND, f"4x the entries took {grew:.1f}x the event loop's time"
    fail_on_server_errors(caplog, 0)


def test_the_client_reads_tagged_fields_in_linear_time() -> None:
    def measure(entries: int) -> float:
        io = MemoryIO()
        conn = ready_connection(io)
        request = ListGroupsRequest(version=5, states_filter=[], types_filter=[])
        future = conn.send(request, ListGroupsResponse, 0)
        conn.on_writable(0)
        (_, _, correlation_id), = take_requests(io.stream)
        group = b"\x01" * 4 + b"\x01\x09\x00"  # four empty strings; tag 9, 0 bytes
        body = struct.pack(">ih", 0, 0) + uvarint(entries + 1) + group * entries + b"\x00"
        payload = struct.pack(">i", correlation_id) + b"\x00" + body  # flexible header: no tags
        io.stream.incoming.append(struct.pack(">i", len(payload)) + payload)
        started = time.thread_time()
        completions = conn.on_readable(0)
        cpu_s = time.thread_time() - started
        (done, ok, response), = completions
        assert done is future and ok and len(response.groups) == entries
        assert response.groups[0].unknown_tags == {"_9": b""}
        return cpu_s

    grew = growth(measure)
    assert grew < GROWTH_BOUND, f"4x the entries took {grew:.1f}x the client's thread's time"


def framed_payload(request: Any) -> bytes:
    return encode_request(request, 5, "fuzz")[4:]


NULLS = {
    # SyncGroup v1 handle(): bytes(None) -> TypeError -> "handler failed", UNKNOWN_SERVER_ERROR
    "SyncGroup v1, null assignment": SyncGroupRequest(
        version=1, group_id="fuzz-g0", generation_id=1, member_id="m", assignments=[
            SyncGroupRequest.SyncGroupRequestAssignment(member_id="m", assignment=None)]),
    # JoinGroup v2 handle(): iterating None protocols
    "JoinGroup v2, null protocols": JoinGroupRequest(
        version=2, group_id="fuzz-g0", session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
        protocol_type="consumer", protocols=None),
    # DescribeGroups v6 is not served: error_response() iterates None groups outside the handler's
    # guard, and the connection closed "after an internal error"
    "DescribeGroups v6, null groups": DescribeGroupsRequest(version=6, groups=None,
                                                            include_authorized_operations=False),
    # LeaveGroup v3 handle(): iterating None members
    "LeaveGroup v3, null members": LeaveGroupRequest(version=3, group_id="fuzz-g0", members=None),
    # OffsetCommit v2: a null topic name reached the group coordinator
    "OffsetCommit v2, null topic": OffsetCommitRequest(
        version=2, group_id="fuzz-g0", generation_id_or_member_epoch=-1, member_id="", retention_time_ms=-1,
        topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=None, partitions=[
            OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                partition_index=0, committed_offset=1, committed_metadata="")])]),
}


@pytest.mark.parametrize("request_", NULLS.values(), ids=NULLS.keys())
def test_a_null_where_the_schema_has_none_closes_the_connection(
        fuzzed: EmbeddedCluster, caplog: pytest.LogCaptureFixture, request_: Any) -> None:
    outcome = ask(fuzzed, framed_payload(request_))
    assert outcome.kind == "closed" and "non-nullable" in str(outcome.reason), outcome
    fail_on_server_errors(caplog, 0)


def test_a_last_string_past_the_end_of_the_frame_closes_the_connection(fuzzed: EmbeddedCluster) -> None:
    whole = framed_payload(HeartbeatRequest(version=0, group_id="fuzz-g0", generation_id=1, member_id="member-1"))
    cut = whole[:-3]  # member_id says 8 bytes, 5 are there
    outcome = ask(fuzzed, cut)
    assert outcome.kind == "closed", f"read as {check_answer(cut, outcome.frame) if outcome.frame else outcome}"
    assert ask(fuzzed, whole).kind == "answer"


def test_a_client_refuses_an_answer_whose_last_string_runs_past_its_frame() -> None:
    io = MemoryIO()
    conn = ready_connection(io)
    future = conn.send(ListGroupsRequest(version=0), ListGroupsResponse, 0)
    conn.on_writable(0)
    (_, _, correlation_id), = take_requests(io.stream)
    # error 0, one group: id "g", protocol type said to be 9 bytes, 2 there
    payload = struct.pack(">ihih", correlation_id, 0, 1, 1) + b"g" + struct.pack(">h", 9) + b"co"
    io.stream.incoming.append(struct.pack(">i", len(payload)) + payload)
    NetworkClient._finish(conn.on_readable(0))
    assert future.failed() and "past the end" in str(future.exception)
    assert conn.state is ConnectionState.DISCONNECTED
