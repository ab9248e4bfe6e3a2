"""Fuzzed frames over real sockets to the coordinator.

A sample of schema-drawn requests of every API, as they are or spoilt (cut short, bits
flipped, bytes added), and frames whose size is impossible, each sent on a raw socket: the
answer is a frame the response class reads at that version with the same correlation id, or
the server closes that connection and no other (a bystander connection keeps being answered,
and a fresh one is accepted).  No request waits past its bound, no error is logged, and the
server's memory and request budget are back where they were.
"""

from __future__ import annotations

import socket
import struct
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from groupclient.coordinator import EmbeddedCluster
from groupclient.protocol.apis import API_SPECS, ApiKey
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.schema import client_ids, correlation_ids, encode_request, messages, spoilers
from tests.fuzz.server import (
    ANSWER_S, FUZZ_SETTINGS, HOLDING, check_answer, fail_on_server_errors, fuzz_cluster, peek_key,
)
from tests.integration.wire import WireClient

pytestmark = pytest.mark.integration

VERSIONS = [(spec.key, v) for spec in API_SPECS.values() for v in range(spec.request.max_version + 1)]
# a JoinGroup or Fetch may be held (HOLDING), a Produce with acks=0 is not answered: after this,
# such a request counts as waiting and its connection is given up
SHORT_WAIT_S = 0.3
RSS_GROWTH_BOUND = 64 * 1024 * 1024  # ~7 MB here: the topics, groups and offsets the requests made


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[EmbeddedCluster]:
    yield from fuzz_cluster()


def rss_bytes() -> int:
    """This process's resident memory (the cluster runs in one of its threads)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def api_versions_answered(wire: WireClient) -> bool:
    response = wire.request(ApiVersionsRequest(version=3, client_software_name="fuzz", client_software_version="1"))
    return bool(response.error_code == 0 and response.api_keys)


def open_connections(cluster: EmbeddedCluster) -> int:
    return cluster._call(lambda core: len(core.nodes[0]._connections))


class Sender:
    """One connection at a time, replaced when the server closes it or a request stays waiting."""

    def __init__(self, cluster: EmbeddedCluster) -> None:
        self.cluster = cluster
        self.wire = WireClient(cluster.bootstrap_servers, timeout_s=ANSWER_S)

    def replace(self) -> None:
        self.wire.close()
        self.wire = WireClient(self.cluster.bootstrap_servers, timeout_s=ANSWER_S)

    def exchange(self, frame: bytes) -> str:
        """Send ``frame``; "answered" (checked), "closed" or "waiting"."""
        payload = frame[4:]
        key = peek_key(payload)
        wait_s = SHORT_WAIT_S if key in HOLDING or key is ApiKey.PRODUCE else ANSWER_S
        self.wire.sock.settimeout(wait_s)
        started = time.monotonic()
        try:
            self.wire.send_raw(frame)
            answer = self.wire.read_frame()
        except (TimeoutError, socket.timeout):
            assert key in HOLDING or key is ApiKey.PRODUCE, f"{key!r} not answered in {wait_s} s: the server hangs"
            self.replace()
            return "waiting"
        except ConnectionError:
            self.replace()
            return "closed"
        assert time.monotonic() - started < ANSWER_S
        check_answer(payload, struct.pack(">i", len(answer)) + answer)
        return "answered"


def test_fuzzed_frames_over_sockets_close_only_their_own_connection(
        fuzzed: EmbeddedCluster, caplog: pytest.LogCaptureFixture) -> None:
    bystander = WireClient(fuzzed.bootstrap_servers, timeout_s=ANSWER_S)
    sender = Sender(fuzzed)
    rss_before = rss_bytes()
    outcomes: Counter[str] = Counter()

    @fuzz_settings(150)
    @given(case=st.sampled_from(VERSIONS), data=st.data())
    def run(case: tuple[ApiKey, int], data: st.DataObject) -> None:
        key, version = case
        request = data.draw(messages(API_SPECS[key].request, version), label="request")
        frame = encode_request(request, data.draw(correlation_ids()), data.draw(client_ids()))
        spoilt = data.draw(st.booleans(), label="spoilt")
        if spoilt:
            frame = data.draw(spoilers(), label="spoil")(frame)
        outcome = sender.exchange(frame)
        outcomes[outcome] += 1
        event(outcome)
        if outcome == "closed":
            assert spoilt, f"a well-formed {key.name} v{version} request closed its connection"
            # that connection only: the one opened before all of these is still answered
            assert api_versions_answered(bystander)

    try:
        run()
        assert outcomes["answered"] >= 20 and outcomes["closed"] >= 3, outcomes  # both paths were taken
        assert api_versions_answered(sender.wire)  # a fresh connection is answered
        assert api_versions_answered(bystander)
    finally:
        sender.wire.close()
        bystander.close()
    # a connection given up while its JoinGroup was held stays until the rebalance answers it,
    # as in Kafka; every other one is gone
    assert fuzzed.wait_until(lambda: open_connections(fuzzed) <= outcomes["waiting"], 10, interval_s=0.02)
    assert fuzzed.request_memory_stats().in_use == 0
    assert rss_bytes() - rss_before < RSS_GROWTH_BOUND
    fail_on_server_errors(caplog, 0)


@pytest.mark.parametrize("size", [2**31 - 1, FUZZ_SETTINGS["max_request_bytes"] + 1, -1, -(2**31), 0, 7])
def test_an_impossible_frame_size_closes_that_connection_at_once(fuzzed: EmbeddedCluster, size: int) -> None:
    bystander = WireClient(fuzzed.bootstrap_servers, timeout_s=ANSWER_S)
    wire = WireClient(fuzzed.bootstrap_servers, timeout_s=ANSWER_S)
    rss_before = rss_bytes()
    try:
        wire.send_raw(struct.pack(">i", size) + b"\x00" * 64)
        assert wire.is_closed_by_server()
        assert api_versions_answered(bystander)
    finally:
        wire.close()
        bystander.close()
    assert rss_bytes() - rss_before < 50 * 1024 * 1024  # nothing of the declared size was allocated


def test_a_big_frame_abandoned_half_way_gives_its_budget_back(fuzzed: EmbeddedCluster) -> None:
    """A frame over the unmetered size takes its bytes from the request budget before it is read;
    the client going away half way gives them back."""
    size = 3 * 1024 * 1024
    wire = WireClient(fuzzed.bootstrap_servers, timeout_s=ANSWER_S)
    try:
        wire.send_raw(struct.pack(">ihhi", size, int(ApiKey.METADATA), 4, 1) + b"\x00" * 100_000)
        assert fuzzed.wait_until(lambda: fuzzed.request_memory_stats().in_use == size, 10, interval_s=0.02)
    finally:
        wire.close()
    assert fuzzed.wait_until(lambda: fuzzed.request_memory_stats().in_use == 0, 10, interval_s=0.02)
    fresh = WireClient(fuzzed.bootstrap_servers, timeout_s=ANSWER_S)
    try:
        assert api_versions_answered(fresh)
    finally:
        fresh.close()
