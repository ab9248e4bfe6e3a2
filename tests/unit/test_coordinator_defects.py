"""Coordinator defects against Kafka's classic GroupCoordinator: join order, timer isolation,
OffsetCommit validation order, GROUP_MAX_SIZE_REACHED, and connection hygiene on the node."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable

import pytest
from kafka.protocol.consumer.group import JoinGroupRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from groupclient.coordinator import EmbeddedCluster
from groupclient.coordinator.group.offsets import OffsetToCommit, commit_offsets
from groupclient.coordinator.group.timers import TimerQueue
from groupclient.coordinator.storage.group_store import GroupSnapshot, GroupStore, MemberSnapshot
from tests.integration.wire import WireClient

from .group_harness import RANGE, Harness

ROUNDROBIN = (("roundrobin", b"rr-meta"),)


# -- 1. a pending member is checked for a common protocol before it is admitted -----------------
def test_pending_member_without_a_common_protocol_is_refused_and_the_rebalance_completes() -> None:
    h = Harness()
    a_id = h.join(client="a", protocols=RANGE).join().member_id  # MEMBER_ID_REQUIRED
    b_id = h.join(client="b", protocols=ROUNDROBIN).join().member_id
    a = h.join(a_id, client="a", protocols=RANGE)
    b = h.join(b_id, client="b", protocols=ROUNDROBIN)
    assert b.join().error.name == "INCONSISTENT_GROUP_PROTOCOL"
    assert b_id not in h.coordinator.groups["g"].members
    h.advance(0)  # the initial delayed join ends: select_protocol must not raise here
    assert a.join().error.name == "NONE" and a.join().generation_id == 1
    assert a.join().protocol_name == "range"
    assert h.state() == "CompletingRebalance"


def test_pending_member_of_another_protocol_type_is_inconsistent() -> None:
    h = Harness()
    a_id = h.join(client="a").join().member_id
    b_id = h.join(client="b").join().member_id
    h.join(a_id, client="a")
    assert h.join(b_id, client="b", protocol_type="connect").join().error.name == "INCONSISTENT_GROUP_PROTOCOL"


def test_an_exception_in_one_timer_action_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    queue = TimerQueue()
    ran: list[str] = []

    def explode(now: int) -> None:
        raise RuntimeError("boom")

    queue.schedule(("join", "g1"), 10, explode)
    queue.schedule(("join", "g2"), 10, lambda now: ran.append("g2"))
    queue.schedule(("heartbeat", "g2", "m"), 15, lambda now: ran.append("g2-heartbeat"))
    with caplog.at_level(logging.ERROR):
        assert queue.run_due(20) == 3
    assert ran == ["g2", "g2-heartbeat"]
    failed = [r for r in caplog.records if r.exc_info is not None]
    assert len(failed) == 1 and "boom" in str(failed[0].exc_info[1])  # type: ignore[index]
    assert queue.next_deadline() is None


def test_a_failing_group_timer_does_not_stall_another_groups_rebalance(caplog: pytest.LogCaptureFixture) -> None:
    h = Harness()
    first = h.join_new(client="a", group="g1")
    second = h.join_new(client="b", group="g2")

    def broken_select_protocol() -> str:
        raise ValueError("broken group")

    h.coordinator.groups["g1"].select_protocol = broken_select_protocol  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR):
        h.advance(0)  # both groups' initial joins are due now; g1's runs first and raises
    assert not first.done
    assert second.join().error.name == "NONE" and h.state("g2") == "CompletingRebalance"
    assert any(r.exc_info is not None for r in caplog.records)


# -- 2. OffsetCommit validation order (Kafka's validateOffsetCommit) ----------------------------
def _commit(h: Harness, generation: int, member: str, group: str = "g", instance: str | None = None) -> str:
    codes = commit_offsets(h.coordinator, group, generation, member, instance,
                           [OffsetToCommit("t", 0, 1)], h.clock.wall_ms(), h.now)
    return codes[("t", 0)].name


def test_commit_checks_member_and_generation_before_completing_rebalance() -> None:
    h = Harness()
    a, b = h.join_new(client="a"), h.join_new(client="b")
    h.advance(0)
    leader = a.join().member_id
    assert h.state() == "CompletingRebalance"
    assert _commit(h, 1, "ghost") == "UNKNOWN_MEMBER_ID"
    assert _commit(h, 7, leader) == "ILLEGAL_GENERATION"
    assert _commit(h, -1, "") == "UNKNOWN_MEMBER_ID"  # not a simple commit: the group has members
    assert _commit(h, 1, leader, instance="unknown-instance") == "UNKNOWN_MEMBER_ID"
    assert _commit(h, 1, leader) == "REBALANCE_IN_PROGRESS"  # a valid member, mid-assignment
    assert b.join().generation_id == 1


def test_commit_rules_in_empty_and_stable_groups() -> None:
    h = Harness()
    # generation -1 on an Empty (or new) group is a simple commit; Kafka 4.x ClassicGroup accepts it
    # whatever member id it carries (validateOffsetCommit returns before validating the member)
    assert _commit(h, -1, "", group="simple") == "NONE"
    assert _commit(h, -1, "leftover-member", group="simple") == "NONE"
    assert _commit(h, 0, "leftover-member", group="simple") == "UNKNOWN_MEMBER_ID"
    r1, _ = h.stable_group(2)
    assert _commit(h, -1, "") == "UNKNOWN_MEMBER_ID"
    assert _commit(h, -1, r1.member_id) == "ILLEGAL_GENERATION"
    assert _commit(h, 1, r1.member_id) == "NONE"


# -- 3. GROUP_MAX_SIZE_REACHED removes the refused member, as Kafka's handleJoinGroup ------------
def test_group_max_size_refusal_removes_an_existing_member_and_its_static_id() -> None:
    store = GroupStore()
    members = tuple(
        MemberSnapshot(f"m{i}", "inst-2" if i == 2 else None, f"c{i}", "127.0.0.1", 30_000, 10_000,
                       b"range-meta", b"")
        for i in range(3)
    )
    # a group of three saved while group.max.size was larger, loaded with a limit of two
    store.put_group(GroupSnapshot("g", 1, "consumer", "range", "m0", members))
    h = Harness(store=store, group_max_size=2)
    assert h.state() == "Stable" and len(h.coordinator.groups["g"].members) == 3
    first = h.join("m0", client="c0")  # the leader rejoins: rebalance
    second = h.join("m1", client="c1")
    refused = h.join("m2", client="c2", instance="inst-2").join()
    assert refused.error.name == "GROUP_MAX_SIZE_REACHED"
    assert refused.member_id == ""  # Kafka answers with UNKNOWN_MEMBER_ID ("")
    group = h.coordinator.groups["g"]
    assert "m2" not in group.members and "inst-2" not in group.static_members
    # everyone left in the group has rejoined: the rebalance completes at once
    assert first.join().generation_id == second.join().generation_id == 2
    assert [m.member_id for m in first.join().members] == ["m0", "m1"]


def test_group_max_size_refusal_of_a_new_member_changes_nothing() -> None:
    h = Harness(group_max_size=1)
    (only,) = h.stable_group(1)
    refused = h.join(client="late").join()
    assert refused.error.name == "GROUP_MAX_SIZE_REACHED" and refused.member_id == ""
    assert list(h.coordinator.groups["g"].members) == [only.member_id] and h.state() == "Stable"


# -- 6. connection hygiene on the node (real sockets) ------------------------------------------
def _metadata_ok(client: WireClient) -> bool:
    request = MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False,
                              include_topic_authorized_operations=False)
    return bool(client.request(request).brokers)


def _poll(condition: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def _closed_by_server(client: WireClient, timeout_s: float = 5.0) -> bool:
    """True once the node closes the connection; False if it is still open after ``timeout_s``."""
    client.sock.settimeout(timeout_s)
    try:
        return client.sock.recv(1) == b""
    except socket.timeout:
        return False
    except ConnectionError:
        return True


def _admitted_connection(address: str, timeout_s: float = 10.0) -> WireClient:
    """A new connection that gets answered, once the node has released a slot."""
    deadline = time.monotonic() + timeout_s
    while True:
        client = WireClient(address, 5)
        try:
            if _metadata_ok(client):
                return client
        except OSError:  # closed at once: no slot free yet
            pass
        client.close()
        if time.monotonic() > deadline:
            raise AssertionError(f"no connection to {address} admitted within {timeout_s} s")
        time.sleep(0.02)


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
                assert _poll(lambda: any("refusing connection" in r.getMessage() for r in caplog.records))
            assert all(_metadata_ok(c) for c in kept)  # the admitted ones are untouched
            kept.pop().close()
            kept.append(_admitted_connection(address))  # a freed slot is usable again
        finally:
            extra.close()
            for c in kept:
                c.close()


@pytest.mark.integration
def test_idle_connections_are_closed_and_busy_ones_kept() -> None:
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0, connections_max_idle_ms=300) as cluster:
        idle, busy = WireClient(cluster.bootstrap_servers, 5), WireClient(cluster.bootstrap_servers, 5)
        try:
            assert _metadata_ok(idle) and _metadata_ok(busy)
            started = time.monotonic()
            for _ in range(8):  # a request every 100 ms keeps a connection open past 300 ms
                time.sleep(0.1)
                assert _metadata_ok(busy)
            assert _closed_by_server(idle, timeout_s=5.0)
            assert time.monotonic() - started < 5
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
