"""Offsets retention, the cleanup of Empty groups (KIP-211) and DeleteGroups (fake clock; DeleteGroups
over real sockets is in tests/integration/test_coordinator_limits.py)."""

from __future__ import annotations

import uuid
from typing import Any

from groupclient.coordinator.group.coordinator import LeavingMember
from groupclient.coordinator.group.offsets import OffsetToCommit, commit_offsets
from groupclient.coordinator.storage.group_store import CommittedOffset, GroupSnapshot

from groupclient.error_codes import ErrorCode as E

from .group_harness import Harness, group_store

MINUTE = 60_000
HOUR = 60 * MINUTE
TOPIC_ID, OTHER_ID = uuid.UUID(int=1), uuid.UUID(int=2)


def _commit(h: Harness, group: str, generation: int = -1, member: str = "", partition: int = 0) -> str:
    codes = commit_offsets(h.coordinator, group, generation, member, None,
                           [OffsetToCommit("t", partition, 10 + partition)], h.clock.wall_ms(), h.now)
    return codes[("t", partition)].name


def _keep_alive(h: Harness, members: list[tuple[str, int]], ms: int, group: str = "g") -> None:
    """Advance ``ms`` while the members heartbeat every 5 s."""
    for _ in range(ms // 5000):
        h.advance(5000)
        for member_id, generation in members:
            assert h.heartbeat(member_id, generation, group=group) == "NONE"


def test_fresh_group_ids_do_not_pile_up() -> None:
    h = Harness()
    for i in range(20_000):
        # a JoinGroup v4+ without a member id creates the group and a pending member ...
        assert h.join(group=f"fresh-{i}", session=6000).join().error.name == "MEMBER_ID_REQUIRED"
    h.advance(6000)  # ... which expires: 20,000 Empty groups with nothing in them
    assert len(h.coordinator.groups) == 20_000
    h.advance(600_000)  # offsets.retention.check.interval.ms: one cleanup pass deletes them
    assert h.coordinator.groups == {}
    assert h.store.group_ids() == set()


def test_the_cleanup_runs_periodically_on_the_timer_queue_and_stops_with_the_last_partition() -> None:
    h = Harness(offsets_retention_check_interval_ms=MINUTE)
    deadline = h.coordinator.next_deadline()
    assert deadline is not None and deadline <= h.now + MINUTE
    h.join(group="a", session=6000)
    h.advance(6000 + MINUTE)
    assert "a" not in h.coordinator.groups
    h.join(group="b", session=6000)
    h.advance(6000 + MINUTE)  # and again one interval later
    assert "b" not in h.coordinator.groups
    h.coordinator.unload_all()
    assert h.coordinator.next_deadline() is None


def test_offsets_of_a_consumer_group_expire_only_after_it_has_been_empty_for_the_retention() -> None:
    h = Harness(offsets_retention_minutes=60, offsets_retention_check_interval_ms=MINUTE)
    (member,) = h.stable_group(1)
    assert _commit(h, "g", 1, member.member_id) == "NONE"
    # a live group keeps its offsets however old the commit
    _keep_alive(h, [(member.member_id, 1)], 2 * HOUR)
    assert h.store.offsets["g"][("t", 0)].offset == 10
    h.coordinator.leave_group("g", [LeavingMember(member.member_id)], h.now)
    h.advance(0)
    assert h.state() == "Empty"
    h.advance(HOUR - MINUTE)  # not yet: the retention counts from when the group became Empty
    assert ("t", 0) in h.store.offsets["g"] and "g" in h.coordinator.groups
    h.advance(2 * MINUTE)  # retention passed and a check ran: offsets expire, then the group goes
    assert "g" not in h.store.offsets and "g" not in h.store.groups
    assert "g" not in h.coordinator.groups


def test_simple_commits_expire_one_by_one_from_their_commit_time() -> None:
    h = Harness(offsets_retention_minutes=60, offsets_retention_check_interval_ms=MINUTE)
    assert _commit(h, "simple", partition=0) == "NONE"
    h.advance(30 * MINUTE)
    assert _commit(h, "simple", partition=1) == "NONE"
    h.advance(31 * MINUTE)
    assert list(h.store.offsets["simple"]) == [("t", 1)]  # partition 0 is past retention
    assert "simple" in h.coordinator.groups  # it still has offsets
    h.advance(30 * MINUTE)
    assert "simple" not in h.store.offsets and "simple" not in h.coordinator.groups


def test_an_empty_group_that_never_committed_is_deleted_at_the_next_check() -> None:
    h = Harness(offsets_retention_check_interval_ms=MINUTE)
    (member,) = h.stable_group(1)
    assert "g" in h.store.groups  # its metadata was stored when the rebalance completed
    h.coordinator.leave_group("g", [LeavingMember(member.member_id)], h.now)
    h.advance(MINUTE)
    assert "g" not in h.coordinator.groups and "g" not in h.store.groups


def test_a_loaded_empty_group_counts_its_retention_from_the_load() -> None:
    store = group_store()
    store.put_group(GroupSnapshot("g", 4, "consumer", None, None, ()))
    store.put_offsets("g", {("t", 0): CommittedOffset(5, -1, None, 0)})  # committed "long ago"
    h = Harness(store=store, offsets_retention_minutes=60, offsets_retention_check_interval_ms=MINUTE)
    h.advance(HOUR - MINUTE)
    assert ("t", 0) in store.offsets["g"]
    h.advance(2 * MINUTE)
    assert "g" not in store.offsets and "g" not in h.coordinator.groups


def test_delete_groups() -> None:
    from groupclient.coordinator.group.retention import delete_groups

    h = Harness()
    (member,) = h.stable_group(1, group="busy")
    assert _commit(h, "idle") == "NONE"
    assert _commit(h, "idle", partition=1) == "NONE"
    results = delete_groups(h.coordinator, ["idle", "busy", "nope", ""])
    assert {g: e.name for g, e in results.items()} == {
        "idle": "NONE", "busy": "NON_EMPTY_GROUP", "nope": "GROUP_ID_NOT_FOUND", "": "INVALID_GROUP_ID"}
    assert "idle" not in h.coordinator.groups and "idle" not in h.store.offsets
    assert "busy" in h.coordinator.groups
    assert delete_groups(h.coordinator, ["idle"])["idle"].name == "GROUP_ID_NOT_FOUND"
    h.coordinator.unload_partition(h.coordinator.partition_for("busy"))
    assert delete_groups(h.coordinator, ["busy"])["busy"].name == "NOT_COORDINATOR"


def test_a_deleted_group_can_be_used_again() -> None:
    from groupclient.coordinator.group.retention import delete_groups

    h = Harness()
    assert _commit(h, "g") == "NONE"
    assert delete_groups(h.coordinator, ["g"])["g"].name == "NONE"
    (member,) = h.stable_group(1)
    assert member.generation_id == 1
    assert _commit(h, "g", 1, member.member_id) == "NONE"


def _consumer_protocol(h: Harness, member: str, epoch: int, topics: list[str], owned: list[int] | None = None) -> Any:
    from groupclient.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest as Request

    tps = None if owned is None else [Request.TopicPartitions(topic_id=TOPIC_ID, partitions=owned)]
    request = Request(version=1, group_id="cg", member_id=member, member_epoch=epoch,
                      rebalance_timeout_ms=60_000 if epoch == 0 else -1,
                      subscribed_topic_names=topics if epoch == 0 else None,
                      topic_partitions=[] if epoch == 0 else tps)
    return h.coordinator.consumer.heartbeat(request, h.now, {"t": (TOPIC_ID, 1), "u": (OTHER_ID, 1)}, "c", "/h")


def test_a_consumer_protocol_groups_offsets_expire_from_their_commit_once_no_member_subscribes_to_the_topic() -> None:
    """Kafka 4.x (OffsetMetadataManager.cleanupExpiredOffsets): a consumer group's offset expires
    once the retention has passed since its commit, if no member subscribes to its topic; the group
    is deleted once it has neither members nor offsets.  (Offsets of an Empty consumer group were
    kept for ever here before.)"""
    h = Harness(offsets_retention_minutes=60, offsets_retention_check_interval_ms=MINUTE)
    answer = _consumer_protocol(h, "A", 0, ["t"])
    epoch = answer.member_epoch
    for topic in ("t", "u"):
        codes = commit_offsets(h.coordinator, "cg", epoch, "A", None, [OffsetToCommit(topic, 0, 5)],
                               h.clock.wall_ms(), h.now)
        assert set(codes.values()) == {E.NONE}, codes
    for _ in range(140):  # an hour and ten minutes, A heartbeating every 30 s (its session is 45 s)
        h.advance(30_000)
        _consumer_protocol(h, "A", epoch, ["t"], [0])
    # u's offset expired (nobody subscribes to u); t's is kept while A subscribes to it
    assert set(h.store.offsets["cg"]) == {("t", 0)}
    _consumer_protocol(h, "A", -1, ["t"])  # the group is Empty now, its offset committed 70 minutes ago
    h.advance(2 * MINUTE)
    assert h.store.offsets.get("cg", {}) == {} and h.coordinator.consumer.get("cg") is None
