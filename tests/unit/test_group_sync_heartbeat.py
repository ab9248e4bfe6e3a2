"""SyncGroup, Heartbeat, LeaveGroup, offsets and coordinator moves (fake clock)."""

from __future__ import annotations

from groupclient.coordinator.group.coordinator import GroupCoordinator, LeavingMember
from groupclient.coordinator.group.offsets import OffsetToCommit, commit_offsets, fetch_offsets

from .group_harness import Harness, group_store


def _two_joined(h: Harness) -> tuple[str, str]:
    a, b = h.join_new(client="a"), h.join_new(client="b")
    h.advance(0)
    return a.join().member_id, b.join().member_id


def test_followers_wait_for_the_leader_assignment_and_left_out_members_get_empty() -> None:
    h = Harness()
    leader, follower = _two_joined(h)
    waiting = h.sync(follower, 1)
    assert not waiting.done and h.state() == "CompletingRebalance"
    led = h.sync(leader, 1, {leader: b"L", "stranger": b"?"})
    assert led.sync().assignment == b"L"
    assert waiting.sync().error.name == "NONE" and waiting.sync().assignment == b""
    assert h.state() == "Stable"
    # once Stable, a SyncGroup simply returns the current assignment
    assert h.sync(follower, 1).sync().assignment == b""
    assert h.sync(leader, 1).sync().protocol_name == "range"


def test_sync_errors() -> None:
    h = Harness()
    leader, follower = _two_joined(h)
    assert h.sync(follower, 7).sync().error.name == "ILLEGAL_GENERATION"
    assert h.sync("nobody", 1).sync().error.name == "UNKNOWN_MEMBER_ID"
    assert h.sync(leader, 1, group="nope").sync().error.name == "UNKNOWN_MEMBER_ID"
    h.sync(leader, 1, {leader: b"L", follower: b"F"})
    h.join(follower, client="b", protocols=(("range", b"new"),))  # starts a rebalance
    assert h.sync(leader, 1).sync().error.name == "REBALANCE_IN_PROGRESS"


def test_a_rebalance_during_completing_answers_waiting_syncs_with_rebalance_in_progress() -> None:
    h = Harness()
    leader, follower = _two_joined(h)
    waiting = h.sync(follower, 1)
    h.join_new(client="late")
    assert waiting.sync().error.name == "REBALANCE_IN_PROGRESS"
    assert h.state() == "PreparingRebalance"


def test_member_that_never_syncs_is_removed_after_the_rebalance_timeout() -> None:
    h = Harness()
    leader, follower = _two_joined(h)
    for _ in range(10):
        h.advance(3000)
        h.heartbeat(leader, 1)
        h.heartbeat(follower, 1)
    # neither synced within the 30 s rebalance timeout: both dropped, the group rebalances to Empty
    assert h.state() == "Empty"


def test_heartbeat_answers_by_state() -> None:
    h = Harness()
    r1, r2 = h.stable_group(2)
    assert h.heartbeat(r1.member_id, 1) == "NONE"
    assert h.heartbeat(r1.member_id, 0) == "ILLEGAL_GENERATION"
    assert h.heartbeat("ghost", 1) == "UNKNOWN_MEMBER_ID"
    assert h.heartbeat(r1.member_id, 1, group="other") == "UNKNOWN_MEMBER_ID"
    h.join(r1.member_id, client="m0")
    assert h.heartbeat(r2.member_id, 1) == "REBALANCE_IN_PROGRESS"


def test_heartbeats_keep_a_member_and_silence_expires_it() -> None:
    h = Harness()
    r1, r2 = h.stable_group(2)
    for _ in range(5):
        h.advance(9_000)
        assert h.heartbeat(r1.member_id, 1) == "NONE"
        assert h.heartbeat(r2.member_id, 1) == "NONE"
    h.advance(9_000)
    h.heartbeat(r1.member_id, 1)
    h.advance(1_000)  # r2 silent for 10 s
    assert h.state() == "PreparingRebalance"
    assert r2.member_id not in h.coordinator.groups["g"].members
    rejoin = h.join(r1.member_id, client="m0")
    assert rejoin.join().generation_id == 2 and rejoin.join().leader_id == r1.member_id


def test_leave_group_batched_and_leader_reelection() -> None:
    h = Harness()
    r1, r2, r3 = h.stable_group(3)
    top, results = h.coordinator.leave_group(
        "g", [LeavingMember(r1.member_id, reason="shutdown"), LeavingMember("ghost")], h.now)
    assert top.name == "NONE"
    assert [e.name for _, e in results] == ["NONE", "UNKNOWN_MEMBER_ID"]
    group = h.coordinator.groups["g"]
    assert group.leader_id == r2.member_id  # next oldest member leads
    assert h.state() == "PreparingRebalance"
    p2, p3 = h.join(r2.member_id, client="m1"), h.join(r3.member_id, client="m2")
    assert p2.join().generation_id == p3.join().generation_id == 2
    assert p2.join().leader_id == r2.member_id


def test_leave_of_static_member_by_instance_id_and_fencing() -> None:
    h = Harness()
    a = h.join(client="a", instance="i-a")
    h.advance(0)
    ra = a.join()
    _, results = h.coordinator.leave_group("g", [LeavingMember("someone-else", "i-a")], h.now)
    assert results[0][1].name == "FENCED_INSTANCE_ID"
    _, results = h.coordinator.leave_group("g", [LeavingMember("", "i-a")], h.now)
    assert results[0][1].name == "NONE"
    assert ra.member_id not in h.coordinator.groups["g"].members


def test_offset_commit_fencing_and_fetch() -> None:
    h = Harness()
    c = h.coordinator

    def commit(generation: int, member: str, group: str = "g", metadata: str | None = "m") -> str:
        codes = commit_offsets(c, group, generation, member, None,
                               [OffsetToCommit("t", 0, 42, metadata=metadata)], 1234, h.now, api_version=8)
        return codes[("t", 0)].name

    assert commit(-1, "", group="simple") == "NONE"  # a group that only stores offsets
    assert commit(3, "x", group="nogroup") == "ILLEGAL_GENERATION"  # v9 names it GROUP_ID_NOT_FOUND
    leader, follower = _two_joined(h)
    assert commit(1, leader) == "REBALANCE_IN_PROGRESS"  # CompletingRebalance
    h.sync(leader, 1, {leader: b"", follower: b""})
    assert commit(1, leader) == "NONE"
    assert commit(2, leader) == "ILLEGAL_GENERATION"
    assert commit(1, "ghost") == "UNKNOWN_MEMBER_ID"
    assert commit(1, leader, metadata="x" * 5000) == "OFFSET_METADATA_TOO_LARGE"
    error, offsets = fetch_offsets(c, "g", [("t", 0), ("t", 1)])
    assert error.name == "NONE"
    assert offsets[("t", 0)] is not None and offsets[("t", 0)].offset == 42  # type: ignore[union-attr]
    assert offsets[("t", 0)].metadata == "m"  # type: ignore[union-attr]
    assert offsets[("t", 1)] is None
    assert fetch_offsets(c, "simple", None)[1][("t", 0)].offset == 42  # type: ignore[union-attr]


def test_coordinator_move_loads_groups_with_fresh_deadlines_and_unloads_waiters() -> None:
    store = group_store()
    h = Harness(store=store)
    r1, r2 = h.stable_group(2)
    commit_offsets(h.coordinator, "g", 1, r1.member_id, None, [OffsetToCommit("t", 0, 7)], 0, h.now)
    waiting = h.join(r2.member_id, client="m1", protocols=(("range", b"other"),))
    partition = h.coordinator.partition_for("g")
    h.coordinator.unload_partition(partition)
    assert waiting.join().error.name == "NOT_COORDINATOR"
    assert h.heartbeat(r1.member_id, 1) == "NOT_COORDINATOR"

    h.advance(60_000)  # the new node loads long after the last heartbeat
    other = GroupCoordinator(h.config, store, 1, lambda c: f"{c}-other")
    assert other.load_partition(partition, h.now) == ["g"]
    group = other.groups["g"]
    assert group.state.value == "Stable" and group.generation_id == 1
    assert group.leader_id == r1.member_id
    assert group.members[r2.member_id].assignment == f"a-{r2.member_id}".encode()
    assert other.heartbeat("g", r1.member_id, None, 1, h.now).name == "NONE"
    assert fetch_offsets(other, "g", [("t", 0)])[1][("t", 0)].offset == 7  # type: ignore[union-attr]
    # r2 never heartbeats to the new node: it expires one session after the load
    assert other.heartbeat("g", r1.member_id, None, 1, h.now + 5_000).name == "NONE"
    other.on_timer(h.now + 10_000)
    assert r2.member_id not in group.members and group.state.value == "PreparingRebalance"
