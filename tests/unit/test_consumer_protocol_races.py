"""Two races of the consumer protocol (KIP-848).

A commit that races a revocation (with KIP-1251's commit fencing, Kafka 4.3+): an async commit
sent at epoch N, the partition given up meanwhile and the epoch moved on, the broker's
STALE_MEMBER_EPOCH for the whole commit.  The commit fails saying which partitions failed and why,
and is not sent again at the new epoch (which the broker would take without checking ownership);
one whose partitions are all still the member's is.

A target that arrives while ``poll()`` waits for records (read by the heartbeat thread) ends that
wait, so that what it revokes is given up, and handed to its next owner, at once.
"""

from __future__ import annotations

from typing import Any

import pytest
from kafka.structs import OffsetAndMetadata

from groupclient.clock import Timer
from groupclient.errors import CommitFailedError, RetriableError
from groupclient.protocol.apis import ApiKey

from .test_consumer_member import ORDERS, E, Harness, answer, commit_ok, tp

OFFSETS = {tp("orders", 0): OffsetAndMetadata(5, "", None), tp("orders", 1): OffsetAndMetadata(7, "", None)}


def test_an_async_commit_that_raced_a_revocation_fails_naming_each_partition() -> None:
    h = Harness()
    h.join({ORDERS: [0, 1]})
    held = True  # the commit's answer comes only after the member gave up orders-0 and moved to epoch 2
    h.commit_answer = lambda req: None if held else commit_ok(req, E.STALE_MEMBER_EPOCH)
    results: list[Any] = []
    h.committer.commit_async(OFFSETS, lambda offsets, error: results.append(error))
    h.step(answer(2, {ORDERS: [1]}), answer(2), advance_ms=1000)  # the acknowledgement overtook the commit
    assert h.subscription.assigned() == {tp("orders", 1)}
    held = False
    h.net.deliver()  # STALE_MEMBER_EPOCH, as Kafka 4.4 answers a commit at epoch 1 naming orders-0
    h.committer.invoke_completed_commit_callbacks()
    [error] = results
    assert isinstance(error, CommitFailedError) and not isinstance(error, RetriableError)
    assert "sent at member epoch 1" in str(error) and "orders-0 was revoked" in str(error), error
    assert "the other 1 partition are still this member's" in str(error), error
    assert set(error.partitions) == set(OFFSETS)
    assert "given up by this member" in error.partitions[tp("orders", 0)]
    assert "still this member's" in error.partitions[tp("orders", 1)]
    assert len(h.net.requests(ApiKey.OFFSET_COMMIT)) == 1  # not sent again at epoch 2


def test_a_sync_commit_naming_a_partition_given_up_meanwhile_is_not_sent_again_at_the_new_epoch() -> None:
    h = Harness()
    h.join({ORDERS: [0, 1]})

    def given_up_then_stale(req: Any) -> Any:
        h.subscription.drop_partitions({tp("orders", 0)})
        return commit_ok(req, E.STALE_MEMBER_EPOCH)

    h.commit_answer = given_up_then_stale
    with pytest.raises(CommitFailedError, match="orders-0 was revoked") as raised:
        h.committer.commit_sync(OFFSETS, Timer(h.clock, 10_000))
    assert [c.generation_id_or_member_epoch for c in h.commits] == [1]
    assert set(raised.value.partitions) == set(OFFSETS)


def test_a_stale_commit_of_partitions_still_owned_is_sent_again_at_the_new_epoch() -> None:
    h = Harness()
    h.join({ORDERS: [0, 1]})

    def stale_then_ok(req: Any) -> Any:
        if len(h.commits) == 1:  # meanwhile a heartbeat brought a new epoch, the same partitions
            h.answers.append(answer(2, {ORDERS: [0, 1]}))
            h.clock.advance(1000)
            h.member.send_heartbeat_if_due(h.clock.monotonic_ms())
            return commit_ok(req, E.STALE_MEMBER_EPOCH)
        return commit_ok(req)

    h.commit_answer = stale_then_ok
    h.committer.commit_sync(OFFSETS, Timer(h.clock, 10_000))
    assert [c.generation_id_or_member_epoch for c in h.commits] == [1, 2]


def test_a_refused_commit_says_which_partitions_and_why() -> None:
    h = Harness()
    h.join({ORDERS: [0, 1]})
    h.commit_answer = lambda req: commit_ok(req, E.UNKNOWN_MEMBER_ID)
    with pytest.raises(CommitFailedError) as raised:
        h.committer.commit_sync(OFFSETS, Timer(h.clock, 10_000))
    assert raised.value.partitions == {tp("orders", 0): "UNKNOWN_MEMBER_ID", tp("orders", 1): "UNKNOWN_MEMBER_ID"}


def test_a_new_target_ends_the_application_threads_wait_and_an_unchanged_one_does_not() -> None:
    h = Harness()
    h.join({ORDERS: [0, 1]})
    before = h.net.interrupts
    h.answers.append(answer(2, {ORDERS: [1]}))  # read by the heartbeat thread while poll() waits
    h.clock.advance(1000)
    h.member.send_heartbeat_if_due(h.clock.monotonic_ms())
    h.net.deliver()
    assert h.net.interrupts == before + 1
    h.reconciler.reconcile(Timer(h.clock, 1000))
    h.net.deliver()
    h.answers.append(answer(2, {ORDERS: [1]}))  # the same target again: nothing to wake for
    h.clock.advance(1000)
    h.member.send_heartbeat_if_due(h.clock.monotonic_ms())
    h.net.deliver()
    assert h.net.interrupts == before + 1
