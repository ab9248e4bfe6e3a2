"""Share groups (KIP-932) in the simulator: ShareConsumer applications on the real coordinator,
the share invariants (groupclient/testing/share_invariants.py) checked after every step, and the
seeded random fault schedules of groupclient/testing/share_schedules.py; see docs/testing.md."""

from __future__ import annotations

import pytest

from groupclient.structs import TopicPartition
from groupclient.testing.invariants import InvariantViolation
from groupclient.testing.share_members import Delivery, ShareBehaviour
from groupclient.testing.share_schedules import GROUP_CONFIGS, check_share_seeds_in_parallel
from groupclient.testing.simulation import GroupSimulation

# seeds beyond the first 100 that once failed, each with what it caught:
# 90, 120: a member's share sessions with three leaders were one on the embedded cluster, each
#          new one ending the one before; records stayed acquired and never finished
# 141: a member whose application paused past the record lock was handed records whose locks had
#      run out (their lock was counted from when the application took the answer, not from when
#      the fetch went)
REGRESSIONS = [90, 120, 141]


def share_sim(nodes: int, seed: int = 1) -> GroupSimulation:
    sim = GroupSimulation(seed, nodes=nodes, topics={"t": 3})
    sim.core.group_store.group_configs[sim.share_group_id] = dict(GROUP_CONFIGS)
    return sim


def test_one_member_drains_partitions_led_by_three_nodes() -> None:
    # a share session is one broker's: the member's sessions with the three leaders are three
    # (they once were one in the embedded cluster, each new one ending the one before)
    sim = share_sim(nodes=3)
    try:
        leaders = {sim.core.partition_leader(p) for p in range(3)}
        assert len(leaders) == 3
        sim.produce("t", 90)
        member = sim.add_share_member("s0", behaviour=ShareBehaviour(mode="implicit"))
        assert sim.run_until(sim.share_drained, 60_000), sim.describe_share()
        sim.share_invariants.check_drained()
        sessions = {node for node, _, member_id in sim.core.share_groups.sessions if member_id == member.member_id}
        assert sessions == leaders
    finally:
        sim.close()


def test_the_invariants_catch_a_record_handed_to_a_member_that_does_not_hold_it() -> None:
    # the invariants judge what the applications were handed against the share-partition: a
    # hand-out the broker never made (here, written into the ledger by hand) is a violation
    sim = share_sim(nodes=1)
    try:
        sim.produce("t", 30)
        member = sim.add_share_member("s0")
        assert sim.run_until(lambda: bool(sim.share_ledger.deliveries), 10_000)
        key, [first, *_] = next(iter(sim.share_ledger.deliveries.items()))
        sim.share_ledger.delivered(key, Delivery("s1", "another-member", first.delivery_count, sim.now))
        with pytest.raises(InvariantViolation, match=r"was handed to s1 \(another-member\) at delivery 1, but the "
                                                     rf"share-partition has it ACQUIRED by {member.member_id}"):
            sim.share_invariants.check()
    finally:
        sim.close()


def test_the_invariants_catch_an_accepted_record_delivered_again_and_what_a_callback_found() -> None:
    sim = share_sim(nodes=1)
    try:
        ledger, invariants = sim.share_ledger, sim.share_invariants
        key = (TopicPartition("t", 0), 5)
        ledger.confirmed_accept(key, "s0", 1, at_ms=10)
        ledger.deliveries[key] = [Delivery("s0", "m0", 1, 0), Delivery("s1", "m1", 2, 5)]
        invariants._not_after_accept(key)  # told after the record went on: Kafka's answer to a late ACCEPT
        ledger.deliveries[key].append(Delivery("s2", "m2", 3, 11))
        with pytest.raises(InvariantViolation, match="accepted by s0 at delivery 1 .* then handed out again"):
            invariants._not_after_accept(key)
        ledger.problems.append("s0 was told of an acknowledgement it never made")
        with pytest.raises(InvariantViolation, match="it never made"):
            invariants.check()
    finally:
        sim.close()


def test_every_record_must_end_finished_and_handed_out() -> None:
    sim = share_sim(nodes=1)
    try:
        sim.produce("t", 3)
        with pytest.raises(InvariantViolation, match="is not finished"):
            sim.share_invariants.check_drained()
    finally:
        sim.close()


def test_100_seeded_share_schedules_keep_every_invariant_and_drain() -> None:
    """2-5 share members (explicit and implicit, each commit style, batch_optimized and
    record_limit), 1 or 3 nodes, a drawn delivery limit, 4 faults each: crashes and leaves with a
    comeback, pauses past the record lock, members frozen past their session, cut connections,
    nodes stopped, error / drop / delay answers to the share APIs; then everything must finish."""
    failures = check_share_seeds_in_parallel(list(range(100)) + REGRESSIONS, workers=2)
    assert not failures, "\n\n".join(f"share seed {seed}:\n{detail}" for seed, detail in failures[:3])
