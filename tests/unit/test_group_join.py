"""JoinGroup branches of the coordinator core (fake clock, no sockets)."""

from __future__ import annotations

import pytest

from groupclient.coordinator.classic_group.state import GroupState, IllegalStateTransition, check_transition

from .group_harness import Harness


def test_state_table_allows_only_kafka_transitions() -> None:
    S = GroupState
    check_transition("g", S.EMPTY, S.PREPARING_REBALANCE)
    check_transition("g", S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE)
    check_transition("g", S.COMPLETING_REBALANCE, S.STABLE)
    check_transition("g", S.STABLE, S.PREPARING_REBALANCE)
    for current, target in [(S.EMPTY, S.STABLE), (S.STABLE, S.COMPLETING_REBALANCE),
                            (S.EMPTY, S.COMPLETING_REBALANCE), (S.DEAD, S.PREPARING_REBALANCE),
                            (S.STABLE, S.EMPTY)]:
        with pytest.raises(IllegalStateTransition):
            check_transition("g", current, target)


def test_v4_join_without_member_id_gets_member_id_required_then_joins() -> None:
    h = Harness()
    first = h.join(client="alice").join()
    assert first.error.name == "MEMBER_ID_REQUIRED"
    assert first.member_id.startswith("alice-")
    assert h.state() == "Empty"  # a pending member does not start a rebalance
    second = h.join(first.member_id, client="alice")
    h.advance(0)  # even a zero initial delay completes on the timer, as Kafka's purgatory does
    assert second.join().error.name == "NONE"
    assert second.join().generation_id == 1
    assert second.join().leader_id == first.member_id


def test_pre_v4_join_is_admitted_at_once() -> None:
    h = Harness()
    pending = h.join(client="old", v4=False)
    h.advance(0)
    result = pending.join()
    assert result.error.name == "NONE" and result.generation_id == 1


def test_pending_member_expires_after_session_timeout() -> None:
    h = Harness()
    pending_id = h.join(session=6000).join().member_id
    assert pending_id in h.coordinator.groups["g"].pending_members
    h.advance(6000)
    assert pending_id not in h.coordinator.groups["g"].pending_members


def test_initial_delay_holds_answers_and_extends_while_members_arrive() -> None:
    h = Harness(group_initial_rebalance_delay_ms=3000)
    a = h.join_new(client="a", rebalance=10_000)
    h.advance(2000)
    b = h.join_new(client="b", rebalance=10_000)
    h.advance(1000)  # first delay ends, but b arrived: wait another round
    assert not a.done and not b.done and h.state() == "PreparingRebalance"
    h.advance(2999)
    assert not a.done
    h.advance(1)
    ra, rb = a.join(), b.join()
    assert ra.generation_id == rb.generation_id == 1
    assert ra.leader_id == ra.member_id  # first joiner leads
    assert [m.member_id for m in ra.members] == [ra.member_id, rb.member_id]
    assert rb.members == ()  # followers learn nothing about the others
    assert h.state() == "CompletingRebalance"


def test_initial_delay_is_bounded_by_the_rebalance_timeout() -> None:
    h = Harness(group_initial_rebalance_delay_ms=3000)
    first = h.join_new(client="a", rebalance=7000)
    waited = 0
    # a new member every 2.9 s would extend forever without the bound
    for i in range(10):
        if first.done:
            break
        h.join_new(client=f"x{i}", rebalance=7000)
        h.advance(2900)
        waited += 2900
    assert first.done
    assert waited <= 7000 + 2900


def test_rebalance_completes_early_when_all_members_rejoin() -> None:
    h = Harness()
    r1, r2 = h.stable_group(2)
    again1 = h.join(r1.member_id, client="m0")  # the leader rejoins: rebalance
    assert h.state() == "PreparingRebalance"
    assert h.heartbeat(r2.member_id, r2.generation_id) == "REBALANCE_IN_PROGRESS"
    again2 = h.join(r2.member_id, client="m1")
    assert again1.join().generation_id == again2.join().generation_id == 2


def test_members_that_do_not_rejoin_are_removed_after_the_rebalance_timeout() -> None:
    h = Harness()
    r1, r2 = h.stable_group(2)
    again = h.join(r2.member_id, client="m1", protocols=(("range", b"changed"),))
    assert h.state() == "PreparingRebalance"
    for _ in range(9):  # m0 stays alive by heartbeats but never rejoins
        h.advance(3000)
        assert h.heartbeat(r1.member_id, r1.generation_id) == "REBALANCE_IN_PROGRESS"
    h.advance(2999)
    assert not again.done
    h.advance(1)
    result = again.join()
    assert result.generation_id == 2
    assert result.leader_id == r2.member_id  # the old leader did not rejoin: re-elected
    assert list(h.coordinator.groups["g"].members) == [r2.member_id]


def test_silent_member_is_removed_at_session_timeout_even_mid_rebalance() -> None:
    h = Harness()
    r1, r2 = h.stable_group(2)
    again = h.join(r2.member_id, client="m1", protocols=(("range", b"changed"),))
    h.advance(10_000)  # m0 neither heartbeats nor rejoins
    assert again.join().generation_id == 2
    assert list(h.coordinator.groups["g"].members) == [r2.member_id]


def test_protocol_is_chosen_by_vote_among_common_protocols() -> None:
    h = Harness()
    p_rr_first = (("roundrobin", b"1"), ("range", b"2"), ("sticky", b"3"))
    p_range_first = (("range", b"2"), ("roundrobin", b"1"))
    a = h.join_new(client="a", protocols=p_range_first)
    b = h.join_new(client="b", protocols=p_rr_first)
    c = h.join_new(client="c", protocols=p_rr_first)
    h.advance(0)
    assert {a.join().protocol_name, b.join().protocol_name, c.join().protocol_name} == {"roundrobin"}
    # the leader receives each member's metadata for the chosen protocol
    assert [m.metadata for m in a.join().members] == [b"1", b"1", b"1"]


def test_join_without_a_common_protocol_is_inconsistent() -> None:
    h = Harness()
    h.stable_group(1)
    bad = h.join(client="z", protocols=(("cooperative-sticky", b""),)).join()
    assert bad.error.name == "INCONSISTENT_GROUP_PROTOCOL"
    other_type = h.join(client="z", protocol_type="connect").join()
    assert other_type.error.name == "INCONSISTENT_GROUP_PROTOCOL"
    assert h.state() == "Stable"


@pytest.mark.parametrize("session", [5999, 1_800_001])
def test_session_timeout_outside_bounds_is_rejected(session: int) -> None:
    h = Harness()
    assert h.join(session=session).join().error.name == "INVALID_SESSION_TIMEOUT"


def test_group_max_size_is_enforced() -> None:
    h = Harness(group_max_size=2)
    h.stable_group(2)
    third = h.join(client="c3")
    assert third.join().error.name == "GROUP_MAX_SIZE_REACHED"
    assert len(h.coordinator.groups["g"].members) == 2


def test_unknown_member_id_and_not_coordinator() -> None:
    h = Harness()
    assert h.join("ghost").join().error.name == "UNKNOWN_MEMBER_ID"
    h.coordinator.unload_partition(h.coordinator.partition_for("g"))
    assert h.join().join().error.name == "NOT_COORDINATOR"
    assert h.join(group="").join().error.name == "INVALID_GROUP_ID"


def test_follower_rejoining_a_stable_group_unchanged_causes_no_rebalance() -> None:
    h = Harness()
    r1, r2 = h.stable_group(2)
    again = h.join(r2.member_id, client="m1").join()
    assert again.error.name == "NONE" and again.generation_id == 1
    assert h.state() == "Stable"


def test_lost_join_response_is_answered_again_in_completing_rebalance() -> None:
    h = Harness()
    a = h.join_new(client="a")
    h.advance(0)
    first = a.join()
    assert h.state() == "CompletingRebalance"
    again = h.join(first.member_id, client="a").join()
    assert (again.generation_id, again.leader_id, again.members) == (first.generation_id, first.leader_id, first.members)


def test_static_member_restart_in_stable_group_does_not_rebalance() -> None:
    h = Harness()
    a = h.join(client="a", instance="inst-a", v4=True)
    b = h.join(client="b", instance="inst-b", v4=True)
    h.advance(0)
    ra, rb = a.join(), b.join()
    h.sync(ra.member_id, 1, {ra.member_id: b"A", rb.member_id: b"B"})
    h.sync(rb.member_id, 1)
    # b restarts: it knows only its instance id
    restarted = h.join(client="b", instance="inst-b").join()
    assert restarted.error.name == "NONE"
    assert restarted.generation_id == 1 and h.state() == "Stable"
    assert restarted.member_id != rb.member_id
    assert h.sync(restarted.member_id, 1, instance="inst-b").sync().assignment == b"B"
    # the old incarnation is fenced
    assert h.heartbeat(rb.member_id, 1, instance="inst-b") == "FENCED_INSTANCE_ID"
    assert h.sync(rb.member_id, 1, instance="inst-b").sync().error.name == "FENCED_INSTANCE_ID"


def test_static_leader_restart_gets_skip_assignment_from_v9() -> None:
    h = Harness()
    a = h.join(client="a", instance="inst-a")
    h.advance(0)
    ra = a.join()
    h.sync(ra.member_id, 1, {ra.member_id: b"A"})
    old_style = h.join(client="a", instance="inst-a").join()
    assert old_style.leader_id == ra.member_id != old_style.member_id  # told it is not the leader
    assert old_style.members == ()
    new_style = h.join(client="a", instance="inst-a", skip_ok=True).join()
    assert new_style.skip_assignment and new_style.leader_id == new_style.member_id
    assert len(new_style.members) == 1
    assert h.state() == "Stable"


def test_static_member_with_changed_protocols_triggers_rebalance() -> None:
    h = Harness()
    a = h.join(client="a", instance="i", protocols=(("range", b""), ("roundrobin", b"")))
    h.advance(0)
    ra = a.join()
    h.sync(ra.member_id, 1, {ra.member_id: b"A"})
    again = h.join(client="a", instance="i", protocols=(("roundrobin", b""),))
    h.advance(0)
    assert again.join().protocol_name == "roundrobin" and again.join().generation_id == 2


def test_duplicate_join_from_same_member_answers_the_older_one() -> None:
    h = Harness()
    r1, r2 = h.stable_group(2)
    first = h.join(r1.member_id, client="m0")
    second = h.join(r1.member_id, client="m0")
    assert first.join().error.name == "REBALANCE_IN_PROGRESS"
    h.join(r2.member_id, client="m1")
    assert second.join().generation_id == 2
