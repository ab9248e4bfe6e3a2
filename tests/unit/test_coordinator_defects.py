"""Coordinator defects against Kafka's classic GroupCoordinator: join order, timer isolation,
OffsetCommit validation order, GROUP_MAX_SIZE_REACHED (connection hygiene on the node is in
tests/integration/test_coordinator_limits.py)."""

from __future__ import annotations

import logging

import pytest

from groupclient.coordinator.group.offsets import OffsetToCommit, commit_offsets
from groupclient.coordinator.group_base.timers import TimerQueue
from groupclient.coordinator.storage.group_store import GroupSnapshot, MemberSnapshot

from .group_harness import RANGE, Harness, group_store

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
    store = group_store()
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
