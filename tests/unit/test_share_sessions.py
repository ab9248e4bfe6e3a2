"""Share sessions and the cluster's share groups (sans-IO): session epochs as Kafka's
``ShareSessionCache`` keeps them, what closing a session releases, and a group's share.* configs
reaching its membership and its share-partitions."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from groupclient.coordinator.config import CoordinatorConfig
from groupclient.protocol.share_group import ShareAcquireMode
from groupclient.coordinator.share_group.group import ShareHeartbeatError
from groupclient.coordinator.share_group.partition import AckBatch, Acquired
from groupclient.coordinator.share_group.service import SessionError, ShareGroups, next_epoch, reset_duration_ms
from groupclient.coordinator.storage.journal import Journal
from groupclient.error_codes import ErrorCode as E
from tests.unit.group_harness import group_store

T = uuid.UUID(int=7)


def groups(**configs: dict[str, str]) -> ShareGroups:
    store = group_store()
    store.group_configs.update(configs)
    return ShareGroups(CoordinatorConfig(), store)


def session_error(call: object) -> E:
    with pytest.raises(SessionError) as error:
        call()  # type: ignore[operator]
    return error.value.error


def test_a_session_opens_at_epoch_0_and_each_request_moves_it_on() -> None:
    s = groups()
    assert s.fetch_session(0, "g", "m", 0, [(T, 0)], []).epoch == 1
    assert session_error(lambda: s.fetch_session(0, "g", "m", 2, [], [])) is E.INVALID_SHARE_SESSION_EPOCH
    assert s.fetch_session(0, "g", "m", 1, [(T, 1)], [(T, 0)]).partitions == [(T, 1)]
    assert s.acknowledge_session(0, "g", "m", 2).epoch == 3
    assert session_error(lambda: s.acknowledge_session(0, "g", "m", 0)) is E.INVALID_SHARE_SESSION_EPOCH
    assert session_error(lambda: s.fetch_session(0, "g", "other", 1, [], [])) is E.SHARE_SESSION_NOT_FOUND
    assert session_error(lambda: s.acknowledge_session(0, "g", "other", -1)) is E.SHARE_SESSION_NOT_FOUND
    assert (next_epoch(2**31 - 1), next_epoch(-1)) == (1, -1)


def test_each_broker_keeps_its_own_session_of_a_member() -> None:
    # a member fetching from the leaders of three partitions has a session with each, each at its
    # own epoch: opening one with a broker leaves its sessions with the others as they were
    s = groups()
    assert s.fetch_session(0, "g", "m", 0, [(T, 0)], []).epoch == 1
    assert s.fetch_session(1, "g", "m", 0, [(T, 1)], []).epoch == 1
    assert s.fetch_session(0, "g", "m", 1, [], []).partitions == [(T, 0)]
    assert s.acknowledge_session(1, "g", "m", 1).epoch == 2
    p = s.share_partition("g", T, 0, lambda reset: 0)
    q = s.share_partition("g", T, 1, lambda reset: 0)
    assert p is not None and q is not None
    p.acquire("m", [(0, 9)], 10, 10, ShareAcquireMode.BATCH_OPTIMIZED, 0)
    q.acquire("m", [(0, 9)], 10, 10, ShareAcquireMode.BATCH_OPTIMIZED, 0)
    s.close_session(1, "g", "m")  # ends what broker 1's session holds, and only that
    assert q.acquired_by("m") == [] and len(p.acquired_by("m")) == 10
    assert s.fetch_session(0, "g", "m", 2, [], []).epoch == 3


def test_closing_a_session_releases_what_its_member_holds_in_its_partitions() -> None:
    s = groups()
    s.fetch_session(0, "g", "m", 0, [(T, 0)], [])
    p = s.share_partition("g", T, 0, lambda reset: 0)
    assert p is not None
    p.acquire("m", [(0, 9)], 10, 10, ShareAcquireMode.BATCH_OPTIMIZED, 0)
    s.close_session(0, "g", "m")
    assert p.acquired_by("m") == [] and (0, "g", "m") not in s.sessions
    assert p.acquire("n", [(0, 9)], 10, 10, ShareAcquireMode.BATCH_OPTIMIZED, 0)[0].deliveries == 2


def test_a_groups_share_configs_reach_its_membership_and_its_partitions() -> None:
    s = groups(g={"share.heartbeat.interval.ms": "6000", "share.record.lock.duration.ms": "20000",
                  "share.delivery.count.limit": "3", "share.renew.acknowledge.enable": "false",
                  "share.auto.offset.reset": "earliest"})
    answer = s.heartbeat("g", "m", 0, None, ["t"], "c", "/h", 0, {"t": 1})
    assert answer.heartbeat_interval_ms == 6000
    resets: list[str] = []

    def start(at: int) -> Callable[[str], int]:
        def started(reset: str) -> int:
            resets.append(reset)
            return at
        return started

    p = s.share_partition("g", T, 0, start(5))
    assert p is not None and resets == ["earliest"] and p.start_offset == 5
    assert (p.settings.record_lock_duration_ms, p.settings.delivery_count_limit,
            p.settings.renew_acknowledge_enable) == (20000, 3, False)
    other = s.share_partition("h", T, 0, start(0))
    assert other is not None and resets[-1] == "latest" and other.settings.record_lock_duration_ms == 30000


def test_a_heartbeat_for_a_group_that_does_not_exist_is_refused_with_kafkas_messages() -> None:
    s = groups()
    for epoch, message in ((3, "Share group g not found."), (-1, "Group g not found.")):
        with pytest.raises(ShareHeartbeatError) as error:
            s.heartbeat("g", "m", epoch, None, None, "c", "/h", 0, {})
        assert (error.value.error, error.value.message) == (E.GROUP_ID_NOT_FOUND, message)


def test_by_duration_resets_reach_back_that_far() -> None:
    assert (reset_duration_ms("by_duration:PT1H"), reset_duration_ms("BY_DURATION:P1DT0.5S")) == (3_600_000, 86_400_500)
    assert reset_duration_ms("latest") is None


def test_what_a_share_partition_settled_survives_a_restart_and_a_compaction(tmp_path: Path) -> None:
    """Accepted and archived records stay finished, released ones keep their deliveries, and what
    was only acquired comes back as never delivered (Kafka's share coordinator keeps no
    acquisition); the journal is compacted on the way."""
    store = group_store(tmp_path, compaction_min_bytes=512)
    s = ShareGroups(CoordinatorConfig(), store)
    s.fetch_session(0, "g", "m", 0, [(T, 0)], [])
    p = s.share_partition("g", T, 0, lambda reset: 0)
    assert p is not None
    for other in range(1, 40):  # other partitions, each settling a record: compactions rewrite the journal
        q = s.share_partition("g", T, other, lambda reset: 0)
        assert q is not None
        q.acquire("m", [(0, 9)], 10, 10, ShareAcquireMode.BATCH_OPTIMIZED, 0)
        for offset in range(3):
            q.acknowledge("m", [AckBatch(offset, offset, (1,))], 0)
            s.persist("g", T, other)
    p.acquire("m", [(0, 9)], 10, 10, ShareAcquireMode.BATCH_OPTIMIZED, 0)
    p.acknowledge("m", [AckBatch(0, 9, (2,))], 0)  # released: delivered once
    p.acquire("m", [(0, 9), (10, 19)], 20, 20, ShareAcquireMode.BATCH_OPTIMIZED, 0)
    p.acknowledge("m", [AckBatch(0, 0, (1,)), AckBatch(2, 2, (3,)), AckBatch(3, 3, (2,))], 0)
    s.persist("g", T, 0)
    store.close()
    assert len(list(Journal(tmp_path / "groups.journal").replay())) < 39 * 3  # compacted
    again = ShareGroups(CoordinatorConfig(), group_store(tmp_path))
    restored = again.known_partition("g", T, 0)
    assert restored is not None and restored.start_offset == 1
    assert restored.acquire("n", [(0, 9), (10, 19)], 30, 30, ShareAcquireMode.BATCH_OPTIMIZED, 0) == [
        Acquired(1, 1, 2), Acquired(3, 3, 3), Acquired(4, 9, 2), Acquired(10, 19, 1)]
    assert all(again.known_partition("g", T, other).start_offset == 3 for other in range(1, 40))  # type: ignore[union-attr]


def test_a_share_group_exists_after_a_restart_empty_until_deleted(tmp_path: Path) -> None:
    store = group_store(tmp_path)
    s = ShareGroups(CoordinatorConfig(), store)
    s.heartbeat("kept", "m", 0, None, ["t"], "c", "/h", 0, {"t": 1})
    s.heartbeat("gone", "m", 0, None, ["t"], "c", "/h", 0, {"t": 1})
    s.heartbeat("gone", "m", -1, None, None, "c", "/h", 0, {"t": 1})
    s.delete("gone")
    store.close()
    again = ShareGroups(CoordinatorConfig(), group_store(tmp_path))
    assert {g: again.groups[g].state for g in again.groups} == {"kept": "Empty"}
