"""Single well-formed requests with extreme values, over real sockets to the real coordinator:
each gets Kafka's refusal at once, and the server goes on serving (and accepting) everyone."""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

import pytest
from kafka.protocol.admin.topics import CreateTopicsRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from groupclient.coordinator import EmbeddedCluster
from groupclient.protocol.apis import API_SPECS, ApiKey
from groupclient.error_codes import ErrorCode
from tests.integration.wire import WireClient

pytestmark = pytest.mark.integration

TOO_MANY_PER_REQUEST = "Excessively large number of partitions per request."  # Kafka's words

CT = CreateTopicsRequest.CreatableTopic
MT = MetadataRequest.MetadataRequestTopic


def create(wire: WireClient, *topics: tuple[str, int], validate_only: bool = False) -> list[tuple[int, str | None]]:
    resp = wire.request(CreateTopicsRequest(version=7, timeout_ms=1000, validate_only=validate_only, topics=[
        CT(name=name, num_partitions=n, replication_factor=-1, assignments=[], configs=[]) for name, n in topics]))
    return [(t.error_code, t.error_message) for t in resp.topics]


def metadata(wire: WireClient, names: list[str]) -> dict[str, int]:
    resp = wire.request(MetadataRequest(version=12, topics=[MT(name=n) for n in names],
                                        allow_auto_topic_creation=True, include_topic_authorized_operations=False))
    return {t.name: t.error_code for t in resp.topics}


def still_serving(cluster: EmbeddedCluster) -> None:
    fresh = WireClient(cluster.bootstrap_servers)
    try:
        assert create(fresh, (f"after-{time.monotonic_ns()}", 1)) == [(0, None)]
    finally:
        fresh.close()


def test_a_topic_of_2_31_partitions_is_refused_at_once_like_kafka(cluster: EmbeddedCluster) -> None:
    wire = WireClient(cluster.bootstrap_servers, timeout_s=5)  # answered at once: no work grows with it
    try:
        started = time.monotonic()
        huge = [(ErrorCode.POLICY_VIOLATION, TOO_MANY_PER_REQUEST)]
        assert create(wire, ("huge", 2**31 - 1)) == huge
        assert create(wire, ("huge", 2**31 - 1), validate_only=True) == huge
        # the total counts, not each topic (and a sum past 2**31 does not wrap around, as Kafka's int does)
        assert create(wire, ("a", 6000), ("b", 6000)) == [huge[0], huge[0]]
        assert create(wire, ("a", 2**31 - 1), ("b", 2**31 - 1)) == [huge[0], huge[0]]
        assert time.monotonic() - started < 5
        assert create(wire, ("ok", 10_000)) == [(0, None)]  # up to the limit is fine
        assert set(cluster.topic_partitions()) == {"ok"}
    finally:
        wire.close()
    still_serving(cluster)


def test_the_cluster_wide_partition_limit_refuses_with_policy_violation() -> None:
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0, max_partitions=100) as cluster:
        wire = WireClient(cluster.bootstrap_servers)
        try:
            assert create(wire, ("t1", 60)) == [(0, None)]
            (code, message), (code2, _) = create(wire, ("t2", 30), ("t3", 30))
            assert code == 0 and code2 == ErrorCode.POLICY_VIOLATION
            assert create(wire, ("t4", 11))[0][0] == ErrorCode.POLICY_VIOLATION
            assert "max_partitions" in (create(wire, ("t4", 11))[0][1] or "")
            # auto-creation past the limit is refused; within it, created (Kafka 4.4 answers
            # UNKNOWN_TOPIC_OR_PARTITION to the request that creates a topic too: test_refusals.py)
            assert metadata(wire, [f"auto{i}" for i in range(11)]) == {
                f"auto{i}": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for i in range(11)}
            assert cluster.storage_stats()["partitions"] == 60 + 30
            assert metadata(wire, ["auto-one"]) == {"auto-one": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
            assert cluster.storage_stats()["partitions"] == 60 + 30 + 1
        finally:
            wire.close()


def test_auto_creation_is_bounded_per_request() -> None:
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0, max_partitions_per_request=1000) as cluster:
        wire = WireClient(cluster.bootstrap_servers)
        try:
            names = [f"many-{i}" for i in range(1100)]
            assert set(metadata(wire, names).values()) == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
            assert not cluster.topic_partitions()
            assert set(metadata(wire, names[:1000]).values()) == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
            assert sorted(cluster.topic_partitions()) == sorted(names[:1000])  # these were created
        finally:
            wire.close()
        still_serving(cluster)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="counts descriptors in /proc")
def test_partitions_past_the_fd_limit_leave_the_server_accepting_and_restartable(tmp_path: Path) -> None:
    """1,500 partitions written to under a 1,024-descriptor limit: journals share a budget of
    descriptors, connections are still accepted, and the data dir restarts with every record."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
    try:
        before = open_fds()
        with EmbeddedCluster(nodes=1, data_dir=tmp_path, group_initial_rebalance_delay_ms=0,
                             max_open_log_files=64) as cluster:
            wire = WireClient(cluster.bootstrap_servers)
            try:
                assert create(wire, ("wide", 1500)) == [(0, None)]
                for p in range(1500):
                    cluster.produce("wide", [b"v%d" % p], partition=p)
                assert cluster.storage_stats()["open_log_files"] == 64
                assert open_fds() - before < 64 + 40  # journals, sockets, the event loop's own
                still_serving(cluster)
            finally:
                wire.close()
        with EmbeddedCluster(nodes=1, data_dir=tmp_path, group_initial_rebalance_delay_ms=0) as again:
            assert again.end_offsets("wide") == {p: 1 for p in range(1500)}
            assert again.storage_stats()["open_log_files"] == 0  # nothing opened until written to
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _big_metadata_frame(correlation_id: int, size_at_least: int) -> bytes:
    """A well-formed Metadata request naming enough (unknown) topics to be ``size_at_least`` bytes."""
    names = [f"t{i:06d}-" + "x" * 240 for i in range(size_at_least // 250 + 1)]
    request = MetadataRequest(version=4, topics=[MT(name=n) for n in names], allow_auto_topic_creation=False)
    request.with_header(correlation_id=correlation_id, client_id="big")
    return bytes(request.encode(header=True, framed=True))


def test_request_bytes_across_connections_stay_within_the_budget() -> None:
    """Connections that each declare a big frame are let in one at a time once the budget
    (queued_max_request_bytes) is used up: the others wait unread until bytes are given back,
    while small requests (every group request) are answered meanwhile; then everyone is answered."""
    budget = 1_000_000
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0, queued_max_request_bytes=budget) as cluster:
        frames = [_big_metadata_frame(7, 3_000_000) for _ in range(4)]
        size = len(frames[0]) - 4
        senders = [WireClient(cluster.bootstrap_servers, timeout_s=30) for _ in frames]
        small = WireClient(cluster.bootstrap_servers, timeout_s=30)
        try:
            for sender, frame in zip(senders, frames):
                sender.send_raw(frame[:4 + 1000])  # the size, and the start of the frame
            # one frame was let in (it alone uses the budget up); the other three wait unread
            assert cluster.wait_until(lambda: cluster.request_memory_stats().waiting == 3, 20, interval_s=0.02)
            assert cluster.request_memory_stats().in_use == size
            assert create(small, ("meanwhile", 1)) == [(0, None)]  # not held up behind them
            assert cluster.request_memory_stats().waiting == 3
            for sender, frame in zip(senders, frames):
                sender.send_raw(frame[4 + 1000:])
            decode = API_SPECS[ApiKey.METADATA].response.decode
            for sender in senders:
                answer = decode(sender.read_frame(), version=4, header=True)
                assert answer.header.correlation_id == 7 and len(answer.topics) == 3_000_000 // 250 + 1
                assert {t.error_code for t in answer.topics} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
            stats = cluster.request_memory_stats()
            assert stats.in_use == 0 and stats.waiting == 0 and stats.waits == 3
            assert stats.peak < budget + size  # never more than one request past the budget
        finally:
            for c in [*senders, small]:
                c.close()
        still_serving(cluster)
