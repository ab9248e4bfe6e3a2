"""The consumer-protocol member's clocks (member/consumer_timing.py), driven with plain numbers:
no clock, no member, no network."""

from __future__ import annotations

import random

from groupclient.member.consumer_timing import IN_FLIGHT_CHECK_MS, ConsumerHeartbeatTimer

REBALANCE_MS = 30_000
BACKOFF_MS = 100


def timer(now: int = 1_000) -> ConsumerHeartbeatTimer:
    return ConsumerHeartbeatTimer(REBALANCE_MS, BACKOFF_MS, now, random.Random(7))


def test_the_first_heartbeat_is_due_at_once_and_the_next_an_interval_after_it_was_sent() -> None:
    t = timer()
    assert t.due(1_000) and t.time_to_next(1_000) == 0
    t.sent(1_000)
    assert not t.due(1_000) and not t.due(10**9)  # in flight: never two at once
    assert t.time_to_next(1_000) == IN_FLIGHT_CHECK_MS  # the heartbeat thread looks for the answer
    t.answered()
    t.proven(1_000, 3_000, at_once=False)
    assert t.interval_ms == 3_000
    assert not t.due(3_999) and t.due(4_000) and t.time_to_next(2_500) == 1_500


def test_an_interval_of_zero_in_an_answer_keeps_the_one_given_before() -> None:
    t = timer()
    t.proven(0, 2_000, at_once=False)
    t.proven(5_000, 0, at_once=False)
    assert t.interval_ms == 2_000 and t.next_at == 7_000


def test_an_acknowledgement_waiting_for_the_answer_goes_at_once() -> None:
    t = timer()
    t.sent(0)
    t.answered()
    t.proven(0, 5_000, at_once=True)
    assert t.due(1)


def test_failures_back_off_longer_each_time_and_an_answer_resets_them() -> None:
    t = timer()
    waits = []
    for _ in range(5):
        t.sent(0)
        t.failed(0)
        assert not t.in_flight
        waits.append(t.next_at)
    assert waits[0] >= 1 and waits[-1] > waits[0]  # exponential, jittered
    assert max(waits) <= 1_000  # capped at 1 s (or retry_backoff_ms when larger)
    t.sent(0)
    t.answered()
    assert t.failures == 0 and not t.in_flight


def test_the_same_seed_gives_the_same_backoffs() -> None:
    def backoffs() -> list[int]:
        t = timer()
        out = []
        for _ in range(4):
            t.failed(0)
            out.append(t.next_at)
        return out

    assert backoffs() == backoffs()


def test_the_poll_timeout_counts_from_the_last_poll() -> None:
    t = timer(now=0)
    assert t.poll_ok(REBALANCE_MS - 1) and not t.poll_ok(REBALANCE_MS)
    assert t.time_to_poll_timeout(10_000) == REBALANCE_MS - 10_000
    t.polled(20_000)
    assert t.poll_ok(REBALANCE_MS + 1) and t.time_to_poll_timeout(REBALANCE_MS + 1) == 20_000 - 1
    assert t.time_to_poll_timeout(10**9) == 0


def test_a_revocation_must_be_done_a_rebalance_timeout_after_the_broker_took_the_heartbeat() -> None:
    t = timer()
    assert t.lease_end(None, True) is None and not t.missed_revocation(10**9)
    t.must_revoke_by(5_000)
    assert t.lease_end(None, False) == 5_000 + REBALANCE_MS
    assert not t.missed_revocation(5_000 + REBALANCE_MS - 1) and t.missed_revocation(5_000 + REBALANCE_MS)
    t.revoked()
    assert t.lease_end(None, True) is None


def test_the_session_runs_from_the_last_heartbeat_the_broker_answered_while_partitions_are_held() -> None:
    t = timer()
    t.proven(8_000, 3_000, at_once=False)
    assert t.session_end(45_000, holds_partitions=True) == 53_000
    assert t.session_end(45_000, holds_partitions=False) is None  # nothing to lose
    assert t.session_end(None, holds_partitions=True) is None  # the group's timeout not known yet
    assert not t.expired_session(52_999, 45_000, True) and t.expired_session(53_000, 45_000, True)
    t.must_revoke_by(0)  # the earlier deadline wins
    assert t.lease_end(45_000, True) == REBALANCE_MS


def test_no_session_deadline_before_any_answer() -> None:
    t = timer()
    assert t.session_end(45_000, True) is None and not t.expired_session(10**9, 45_000, True)
