"""One share-partition (sans-IO, time given as ``now``): records acquired, acknowledged, released,
redelivered and archived as Kafka's ``SharePartition`` does; its refusals with Kafka's codes and
messages; and, over random schedules of members fetching, acknowledging and going silent, the
invariants the share group promises (a record held by one member at a time, no delivery past the
limit, an accepted record never delivered again, every record finished in the end)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupclient.coordinator.share_group.partition import (
    BATCH_NOT_ACQUIRED, FIRST_PAST, IN_TRANSITION, LAST_PAST, NOT_BATCH_OWNER, NOT_IN_CACHE, NOT_OFFSET_OWNER,
    OFFSET_NOT_ACQUIRED, RENEW_DISABLED, AckBatch, AcknowledgeError, InFlight, RecordState, SharePartition,
    ShareSettings,
)
from groupclient.error_codes import ErrorCode
from groupclient.protocol.share_group import AcknowledgeType as T
from groupclient.protocol.share_group import ShareAcquireMode

BATCHES = [(0, 9), (10, 19), (20, 29)]  # the log: three batches of ten records
LOCK = 30_000
OPTIMIZED, LIMITED = ShareAcquireMode.BATCH_OPTIMIZED, ShareAcquireMode.RECORD_LIMIT


def fetch(p: SharePartition, member: str, now: int = 0, max_records: int = 500, batch_size: int = 500,
          mode: ShareAcquireMode = OPTIMIZED, log: list[tuple[int, int]] = BATCHES) -> list[tuple[int, int, int]]:
    return [(a.first, a.last, a.deliveries) for a in p.acquire(member, log, max_records, batch_size, mode, now)]


def ack(p: SharePartition, member: str, first: int, last: int, *types: T, now: int = 0) -> None:
    p.acknowledge(member, [AckBatch(first, last, tuple(int(t) for t in types))], now)


def refused(p: SharePartition, member: str, batches: list[AckBatch], now: int = 0) -> tuple[ErrorCode, str | None]:
    with pytest.raises(AcknowledgeError) as error:
        p.acknowledge(member, batches, now)
    return error.value.error, error.value.message


def test_a_fetch_takes_whole_log_batches_and_cuts_them_into_ranges_of_the_batch_size() -> None:
    assert fetch(SharePartition(0), "a", max_records=15) == [(0, 19, 1)]  # 15 ends inside the second batch
    assert fetch(SharePartition(0), "a", max_records=15, batch_size=10) == [(0, 9, 1), (10, 19, 1)]
    assert fetch(SharePartition(0), "a", max_records=15, mode=LIMITED) == [(0, 14, 1)]  # exactly


def test_members_get_what_others_do_not_hold_and_accepting_moves_the_start_offset() -> None:
    p = SharePartition(0)
    assert fetch(p, "a", max_records=10) == [(0, 9, 1)]
    assert fetch(p, "b", max_records=10) == [(10, 19, 1)]
    ack(p, "b", 10, 19, T.ACCEPT)
    assert p.start_offset == 0  # 0-9 are still held
    ack(p, "a", 0, 9, T.ACCEPT)
    assert (p.start_offset, p.next_offset, p.window) == (20, 20, {})


def test_released_records_come_back_first_with_their_count_then_new_ones() -> None:
    p = SharePartition(0)
    fetch(p, "a", max_records=10)
    ack(p, "a", 0, 9, T.RELEASE)
    assert fetch(p, "b", max_records=20) == [(0, 9, 2), (10, 19, 1)]


def test_a_lock_that_runs_out_frees_the_records_and_the_holder_can_no_longer_acknowledge() -> None:
    p = SharePartition(0)
    fetch(p, "a", max_records=10)
    assert p.next_lock_deadline() == LOCK
    assert fetch(p, "b", now=LOCK - 1, max_records=10, log=BATCHES[:1]) == []
    assert p.expire(LOCK) == list(range(10))
    assert refused(p, "a", [AckBatch(0, 9, (1,))], now=LOCK) == (ErrorCode.INVALID_RECORD_STATE, BATCH_NOT_ACQUIRED)
    assert fetch(p, "b", now=LOCK, max_records=10) == [(0, 9, 2)]
    assert refused(p, "a", [AckBatch(0, 9, (1,))], now=LOCK) == (ErrorCode.INVALID_RECORD_STATE, NOT_BATCH_OWNER)
    assert refused(p, "a", [AckBatch(0, 4, (1,))], now=LOCK) == (ErrorCode.INVALID_RECORD_STATE, NOT_OFFSET_OWNER)


def test_renewing_extends_the_lock_and_can_be_turned_off() -> None:
    p = SharePartition(0)
    fetch(p, "a", max_records=10)
    ack(p, "a", 0, 9, T.RENEW, now=20_000)
    assert p.expire(LOCK) == [] and p.next_lock_deadline() == 20_000 + LOCK
    off = SharePartition(0, ShareSettings(renew_acknowledge_enable=False))
    fetch(off, "a", max_records=10)
    assert refused(off, "a", [AckBatch(0, 9, (4,))]) == (ErrorCode.INVALID_RECORD_STATE, RENEW_DISABLED)


def test_a_record_released_at_its_last_delivery_is_archived() -> None:
    p = SharePartition(0, ShareSettings(delivery_count_limit=2))
    fetch(p, "a", log=BATCHES[:1])
    ack(p, "a", 0, 9, T.RELEASE)
    assert fetch(p, "a", log=BATCHES[:1]) == [(0, 9, 2)]
    ack(p, "a", 0, 9, T.RELEASE)
    assert (p.start_offset, fetch(p, "a", log=BATCHES[:1])) == (10, [])


def test_redelivery_is_throttled_as_records_near_their_limit_and_the_last_goes_alone() -> None:
    """Kafka's throttling with the default limit of 5 (throttle at 3), one log batch of ten, the
    member releasing everything each time: 0-9 at counts 1, 2 and 3; then half the range at count
    4; a record at its last delivery alone; finally every record archived."""
    p = SharePartition(0)
    log = BATCHES[:1]
    seen = []
    for _ in range(40):
        got = fetch(p, "a", log=log)
        if not got:
            break
        seen.append(got)
        for first, last, _ in got:
            ack(p, "a", first, last, T.RELEASE)
    assert seen[:4] == [[(0, 9, 1)], [(0, 9, 2)], [(0, 9, 3)], [(0, 4, 4)]]
    assert [(0, 0, 5)] in seen and all(len(g) == 1 for g in seen[3:])
    assert all(last - first + 1 == 1 for g in seen for first, last, count in g if count == 5)
    assert (p.start_offset, p.window) == (10, {})


def test_a_record_at_its_last_delivery_is_not_handed_out_after_others() -> None:
    """Offset 0 at 3 deliveries starts a throttled fetch (half its range of 10 allowed); offset 1,
    one delivery from the limit, waits for a fetch of its own."""
    p = SharePartition(0)
    p.window = {0: InFlight(RecordState.AVAILABLE, 3, unit=(0, 9)), 1: InFlight(RecordState.AVAILABLE, 4, unit=(0, 9))}
    p.next_offset = 2
    assert fetch(p, "a", log=[(0, 1)]) == [(0, 0, 4)]
    assert fetch(p, "b", log=[(0, 1)]) == [(1, 1, 5)]


def test_the_record_lock_limit_stops_new_records_not_redelivery() -> None:
    p = SharePartition(0, ShareSettings(max_record_locks=100))
    big = [(0, 149), (150, 299)]
    assert fetch(p, "a", log=big) == [(0, 149, 1)]  # a whole batch, past the limit
    assert fetch(p, "b", log=big) == []
    ack(p, "a", 0, 9, T.RELEASE)
    assert fetch(p, "b", log=big) == [(0, 9, 2)]


def test_acknowledgements_of_a_partition_are_all_or_nothing() -> None:
    p = SharePartition(0)
    fetch(p, "a", max_records=20)
    assert refused(p, "a", [AckBatch(0, 4, (1,)), AckBatch(5, 25, (1,))]) == (ErrorCode.INVALID_REQUEST, LAST_PAST)
    assert p.acquired_by("a") == list(range(20))  # 0-4 not accepted either
    assert refused(p, "a", [AckBatch(30, 31, (1,))]) == (ErrorCode.INVALID_REQUEST, FIRST_PAST)
    assert refused(p, "a", [AckBatch(0, 5, (1,)), AckBatch(5, 9, (2,))]) == (
        ErrorCode.INVALID_RECORD_STATE, IN_TRANSITION)
    ack(p, "a", 0, 3, T.ACCEPT, T.RELEASE, T.REJECT, T.GAP)
    assert [p.window[o].state for o in (1,)] == [RecordState.AVAILABLE] and p.start_offset == 1
    assert refused(p, "a", [AckBatch(2, 2, (1,))]) == (ErrorCode.INVALID_RECORD_STATE, OFFSET_NOT_ACQUIRED)
    ack(p, "a", 0, 0, T.ACCEPT)  # behind the start offset: taken silently, as Kafka does


def test_an_acknowledgement_with_nothing_in_flight_is_not_found() -> None:
    assert refused(SharePartition(7), "a", [AckBatch(7, 8, (1,))]) == (ErrorCode.INVALID_RECORD_STATE, NOT_IN_CACHE)


def test_a_closed_session_releases_only_its_members_records_keeping_their_count() -> None:
    p = SharePartition(0)
    fetch(p, "a", max_records=10)
    fetch(p, "b", max_records=10)
    assert p.release_member("a") == list(range(10))
    assert p.acquired_by("b") == list(range(10, 20))
    assert fetch(p, "c", max_records=10, log=BATCHES[:2]) == [(0, 9, 2)]


def test_the_log_start_moving_past_the_start_offset_drops_what_is_below() -> None:
    p = SharePartition(0)
    fetch(p, "a", max_records=10)
    p.move_start(5)
    assert (p.start_offset, p.acquired_by("a")) == (5, [5, 6, 7, 8, 9])
    ack(p, "a", 0, 9, T.ACCEPT)
    assert (p.start_offset, p.window) == (10, {})


def test_lag_counts_what_is_not_finished() -> None:
    p = SharePartition(0)
    fetch(p, "a", max_records=20)
    ack(p, "a", 10, 14, T.ACCEPT)
    assert p.lag(30) == 25  # 30 records, 5 finished past the start offset


# -- random schedules ------------------------------------------------------------------------------
MEMBERS = ("a", "b", "c")
step = st.one_of(
    st.tuples(st.just("fetch"), st.sampled_from(MEMBERS), st.integers(1, 25), st.sampled_from([OPTIMIZED, LIMITED])),
    st.tuples(st.just("ack"), st.sampled_from(MEMBERS), st.sampled_from([1, 2, 3, 4]), st.integers(1, 30)),
    st.tuples(st.just("wait"), st.integers(1, 40_000)),
    st.tuples(st.just("close"), st.sampled_from(MEMBERS)),
)


@settings(max_examples=120, deadline=None)
@given(st.lists(step, max_size=60), st.integers(2, 6))
def test_random_schedules_keep_the_share_groups_promises(steps: list[tuple[Any, ...]], limit: int) -> None:
    p = SharePartition(0, ShareSettings(delivery_count_limit=limit, max_record_locks=40))
    log = [(base, base + 4) for base in range(0, 60, 5)]
    now = 0
    accepted: set[int] = set()
    deliveries: dict[int, int] = {}
    for kind, *args in steps:
        if kind == "fetch":
            member, most, mode = args
            for got in p.acquire(str(member), log, int(most), 7, mode, now):
                for offset in range(got.first, got.last + 1):
                    assert offset not in accepted, f"accepted offset {offset} delivered again"
                    deliveries[offset] = deliveries.get(offset, 0) + 1
                    assert got.deliveries == deliveries[offset] <= limit
        elif kind == "ack":
            member, kind_of, count = args
            held = p.acquired_by(str(member))[: int(count)]
            if held:
                p.acknowledge(str(member), [AckBatch(o, o, (int(kind_of),)) for o in held], now)
                if kind_of == 1:
                    accepted.update(held)
        elif kind == "wait":
            now += int(args[0])
            p.expire(now)
        else:
            p.release_member(str(args[0]))
        check(p, now)
    # everyone goes; what is left is redelivered until every record is finished
    for _ in range(len(log) * 5 * limit + 5):
        now += LOCK
        ranges = p.acquire("z", log, 100, 7, OPTIMIZED, now)
        if not ranges and p.start_offset == 60:
            break
        for a in ranges:
            p.acknowledge("z", [AckBatch(a.first, a.last, (2,))], now)
        check(p, now)
    assert (p.start_offset, p.window) == (60, {})


def check(p: SharePartition, now: int) -> None:
    assert set(p.window) == set(range(p.start_offset, p.next_offset)), "the window has holes"
    assert p.start_offset == p.next_offset or p.window[p.start_offset].state not in (
        RecordState.ACKNOWLEDGED, RecordState.ARCHIVED), "the start offset stops at a finished record"
    for offset, record in p.window.items():
        held = record.state is RecordState.ACQUIRED
        assert held == bool(record.member) == (record.locked_until is not None), (offset, record)
        assert record.deliveries <= p.settings.delivery_count_limit
        assert not held or (record.locked_until or 0) > now, f"offset {offset}'s lock ran out but it is still held"


def test_only_records_the_log_read_covers_are_redelivered() -> None:
    """Two released ranges, but the log read (cut by the request's bytes) reaches only the first:
    the second waits for a read that covers it, rather than going out without its records."""
    p = SharePartition(0)
    fetch(p, "a", log=BATCHES[:2], batch_size=10)
    ack(p, "a", 0, 19, T.RELEASE)
    assert fetch(p, "b", log=BATCHES[:1]) == [(0, 9, 2)]
    assert fetch(p, "c", log=BATCHES[1:2]) == [(10, 19, 2)]


def test_offsets_a_log_lacks_are_acquired_with_the_batch_after_them() -> None:
    """A log with a hole (offsets 5-9 compacted away): the window stays whole, the client
    acknowledges the missing offsets as gaps, and the start offset moves past all of them."""
    p = SharePartition(0)
    assert fetch(p, "a", log=[(0, 4), (10, 14)], batch_size=5) == [(0, 4, 1), (5, 14, 1)]
    ack(p, "a", 0, 4, T.ACCEPT)
    ack(p, "a", 5, 9, T.GAP)
    ack(p, "a", 10, 14, T.ACCEPT)
    assert (p.start_offset, p.window) == (15, {})
