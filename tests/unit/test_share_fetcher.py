"""The share consumer's fetching and acknowledging (groupclient/share/fetcher.py, engine.py) on a
scripted network and a fake clock: records of the acquired ranges only, with their delivery counts;
gaps; a record that cannot be deserialized; a batch that cannot be read; the share session's
epochs; acknowledgements piggy-backed, sent alone, and failed where they cannot go."""

from __future__ import annotations

from typing import Any

from groupclient.error_codes import ErrorCode
from groupclient.errors import AcknowledgementFailedError, InvalidRecordStateError, RecordDeserializationError
from groupclient.protocol.apis import ApiKey
from groupclient.protocol.share_group import AcknowledgeType as A
from groupclient.protocol.share_group import ShareAcknowledgeResponse, ShareFetchResponse
from groupclient.share.engine import ACK_LINGER_MS, FETCH_AHEAD_POLLS, QUICK_GAP_MS, ShareEngine
from groupclient.share.fetcher import ShareFetchConfig, ShareFetcher
from groupclient.share.in_flight import InFlight
from groupclient.structs import TopicPartition

from .test_record_decoding import batch
from .test_share_member import JOBS, MEMBER_ID, Harness

E = ErrorCode
TP = TopicPartition("jobs", 0)
R = ShareFetchResponse.ShareFetchableTopicResponse
P = R.PartitionData


def records(base: int, count: int, bad: int | None = None) -> bytes:
    return batch(base, [(None, b"x" if base + i != bad else b"bad", []) for i in range(count)])


def fetch_answer(partitions: list[Any], error: ErrorCode = E.NONE) -> Any:
    return ShareFetchResponse(version=2, throttle_time_ms=0, error_code=int(error), error_message=None,
                              acquisition_lock_timeout_ms=30000,
                              responses=[R(topic_id=JOBS, partitions=partitions)] if partitions else [],
                              node_endpoints=[])


def part(data: bytes | None = None, acquired: list[tuple[int, int, int]] = (), error: ErrorCode = E.NONE,
         ack_error: ErrorCode = E.NONE, index: int = 0) -> Any:
    return P(partition_index=index, error_code=int(error), error_message=None, acknowledge_error_code=int(ack_error),
             acknowledge_error_message=None, current_leader=P.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1),
             records=data, acquired_records=[P.AcquiredRecords(first_offset=f, last_offset=last, delivery_count=n)
                                             for f, last, n in acquired])


def ack_answer(error: ErrorCode = E.NONE, partition_error: ErrorCode = E.NONE) -> Any:
    T = ShareAcknowledgeResponse.ShareAcknowledgeTopicResponse
    return ShareAcknowledgeResponse(
        version=2, throttle_time_ms=0, error_code=int(error), error_message=None, acquisition_lock_timeout_ms=30000,
        responses=[] if error else [T(topic_id=JOBS, partitions=[T.PartitionData(
            partition_index=0, error_code=int(partition_error), error_message=None,
            current_leader=T.PartitionData.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1))])],
        node_endpoints=[])


def strict(data: bytes | None, headers: Any) -> Any:
    if data == b"bad":
        raise ValueError("not a value")
    return data


class Fetching:
    """A joined share member with partition 0 of ``jobs``, and its fetcher and engine."""

    def __init__(self, explicit: bool = False) -> None:
        self.member = Harness()
        self.member.join({JOBS: [0]})
        self.net, self.clock = self.member.net, self.member.clock
        self.fetches: list[Any] = []
        self.acks: list[Any] = []
        self.net.on(ApiKey.SHARE_FETCH, lambda req: self.fetches.pop(0) if self.fetches else None)
        self.net.on(ApiKey.SHARE_ACKNOWLEDGE, lambda req: self.acks.pop(0) if self.acks else None)
        self.fetcher = ShareFetcher(self.net, ShareFetchConfig(  # type: ignore[arg-type]
            "g", MEMBER_ID, 500, 1, 1 << 20, 500, 0, True, lambda t: None, lambda t: strict))
        self.in_flight = InFlight(explicit)
        self.outcomes: list[Any] = []
        self.engine = ShareEngine(self.net, self.clock, self.member.member, self.fetcher,  # type: ignore[arg-type]
                                  self.in_flight, lambda offsets, error: self.outcomes.append((offsets, error)))
        self.metadata_requests = self.net.metadata.update_requests()

    def sent(self, api: ApiKey) -> list[Any]:
        return self.net.requests(api)

    def turn(self, *answers: Any, fetch: bool = True) -> BaseException | None:
        """One step: answers for the next fetches, delivered; the error poll() would raise."""
        self.fetches.extend(answers)
        self.engine.step(fetch=fetch)
        self.net.deliver()
        self.engine.take_answers()
        self.engine.run_callbacks()
        return self.engine.take_error()

    def take(self) -> list[Any]:
        chunks = self.fetcher.take_records(500)
        for chunk in chunks:
            self.in_flight.deliver(chunk.partition, chunk.node, chunk.records)
        return [r for chunk in chunks for r in chunk.records]

    def refreshed(self) -> bool:
        return self.net.metadata.update_requests() > self.metadata_requests


def test_only_the_acquired_records_come_with_their_delivery_counts_and_gaps_are_acknowledged() -> None:
    f = Fetching()
    data = records(0, 10)
    assert f.turn(fetch_answer([part(data, [(2, 3, 1), (6, 7, 3), (9, 12, 1)])])) is None
    got = f.take()
    assert [(r.offset, r.delivery_count) for r in got] == [(2, 1), (3, 1), (6, 3), (7, 3), (9, 1)]
    [first] = f.sent(ApiKey.SHARE_FETCH)
    assert first.share_session_epoch == 0 and [t.topic_id for t in first.topics] == [JOBS]
    f.in_flight.acknowledge_all(A.ACCEPT)
    f.engine.send_acknowledged()
    f.turn(fetch_answer([]))
    second = f.sent(ApiKey.SHARE_FETCH)[1]
    assert second.share_session_epoch == 1
    [acked] = second.topics[0].partitions
    batches = [(b.first_offset, b.last_offset, list(b.acknowledge_types)) for b in acked.acknowledgement_batches]
    assert batches == [(2, 3, [1]), (6, 7, [1]), (9, 12, [1, 0, 0, 0])]  # 10-12 acquired, no record: gaps


def test_a_record_that_cannot_be_deserialized_is_raised_before_the_rest_is_settled_and_released() -> None:
    f = Fetching(explicit=True)
    assert f.turn(fetch_answer([part(records(0, 4, bad=2), [(0, 3, 1)])])) is None
    assert [r.offset for r in f.take()] == [0, 1, 3]  # built when a poll takes them
    f.engine.take_answers()  # what the next poll does first
    error = f.engine.take_error()
    assert isinstance(error, RecordDeserializationError) and error.offset == 2
    assert "acknowledge('jobs', 0, 2, AcknowledgeType.REJECT)" in str(error)
    for offset in (0, 1, 3):
        f.in_flight.acknowledge(TP, offset, A.ACCEPT)
    assert f.in_flight.take() == {(TP, 0): {0: 1, 1: 1, 2: int(A.RELEASE), 3: 1}}


def test_a_bad_record_outside_the_acquired_ranges_is_not_this_consumers_business() -> None:
    f = Fetching()
    assert f.turn(fetch_answer([part(records(0, 6, bad=2), [(3, 5, 2)])])) is None
    assert [(r.offset, r.delivery_count) for r in f.take()] == [(3, 2), (4, 2), (5, 2)]
    assert f.fetcher.pending == {}  # nothing released: offset 2 is not ours


def test_a_batch_that_cannot_be_read_is_rejected_and_the_others_still_come() -> None:
    f = Fetching()
    good = records(0, 3)
    corrupt = bytearray(records(3, 3))
    corrupt[-1] ^= 0xFF  # its CRC no longer matches
    assert f.turn(fetch_answer([part(good + bytes(corrupt) + records(6, 2), [(0, 7, 1)])])) is None
    assert [r.offset for r in f.take()] == [0, 1, 2, 6, 7]
    f.engine.take_answers()
    error = f.engine.take_error()
    assert error is not None and error.code == E.CORRUPT_MESSAGE  # type: ignore[attr-defined]
    [(_, acks)] = f.fetcher.pending[0].values()
    assert acks == {3: int(A.REJECT), 4: int(A.REJECT), 5: int(A.REJECT)}


def test_a_lost_session_starts_again_and_its_acknowledgements_fail_where_they_were() -> None:
    f = Fetching()
    f.turn(fetch_answer([part(records(0, 2), [(0, 1, 1)])]))
    f.take()
    f.in_flight.acknowledge_all(A.ACCEPT)
    ticket = f.engine.send_acknowledged(wait=True)
    assert ticket is not None
    assert f.turn(fetch_answer([], error=E.SHARE_SESSION_NOT_FOUND)) is None  # not the application's to handle
    [(offsets, error)] = f.outcomes
    assert offsets == {TP: {0, 1}} and isinstance(error, AcknowledgementFailedError)
    f.clock.advance(100)  # the backoff after an error answer
    f.turn(fetch_answer([]))
    assert [r.share_session_epoch for r in f.sent(ApiKey.SHARE_FETCH)] == [0, 1, 0]


def test_acknowledgements_that_cannot_go_are_reported_without_waiting_for_an_answer() -> None:
    f = Fetching()
    f.turn(fetch_answer([part(records(0, 2), [(0, 1, 1)])]))
    f.take()
    f.fetcher.sessions[0].failed()  # the connection dropped meanwhile: the session is gone
    f.in_flight.acknowledge_all(A.ACCEPT)
    sent = f.engine.send_acknowledged(wait=True)
    assert sent is not None
    f.turn(fetch=False)
    [(_, error)] = f.outcomes
    assert isinstance(error, AcknowledgementFailedError)
    assert f.sent(ApiKey.SHARE_ACKNOWLEDGE) == []


def test_a_commit_goes_alone_when_no_fetch_is_due_and_its_outcome_is_per_partition() -> None:
    f = Fetching()
    f.turn(fetch_answer([part(records(0, 2), [(0, 1, 1)])]))
    f.take()
    f.in_flight.acknowledge_all(A.ACCEPT)
    ticket, partitions = f.engine.send_acknowledged(wait=True)  # type: ignore[misc]
    f.acks.append(ack_answer(partition_error=E.INVALID_RECORD_STATE))
    from groupclient.clock import Timer
    results = f.engine.wait_for(ticket, partitions, Timer(f.clock, 1000), lambda: None)
    assert results is not None and isinstance(results[TP], InvalidRecordStateError)
    [ack] = f.sent(ApiKey.SHARE_ACKNOWLEDGE)
    assert ack.share_session_epoch == 1


def test_the_callback_cannot_call_the_consumer() -> None:
    f = Fetching()
    calls: list[bool] = []
    f.engine.callback = lambda offsets, error: calls.append(f.engine.in_callback)
    f.turn(fetch_answer([part(records(0, 1), [(0, 0, 1)])]))
    f.take()
    f.in_flight.acknowledge_all(A.ACCEPT)
    f.engine.send_acknowledged()
    f.turn(fetch_answer([part(ack_error=E.NONE)]))
    assert calls == [True] and not f.engine.in_callback


def test_records_whose_locks_ran_out_in_the_buffer_are_not_handed_out() -> None:
    f = Fetching()
    f.turn(fetch_answer([part(records(0, 4), [(0, 3, 1)])]))
    assert [r.offset for chunk in f.fetcher.take_records(2) for r in chunk.records] == [0, 1]
    f.clock.advance(30_000 - 2_000)  # the broker's lock (30 s), less the margin left for the application
    assert f.fetcher.take_records(500) == [] and f.fetcher.expired_unused == 2
    assert f.fetcher.buffered() == 0


def test_a_lock_runs_from_when_the_fetch_went_not_from_when_the_application_took_the_answer() -> None:
    # the answer came while the application was busy (it arrives on whichever thread polls the
    # network, and waits for the application's next poll): its records' locks were already running
    f = Fetching()
    f.fetches.append(fetch_answer([part(records(0, 4), [(0, 3, 1)])]))
    f.engine.step(fetch=True)
    f.net.deliver()
    f.clock.advance(30_000 - 1_000)  # the application comes back 29 s later
    f.engine.take_answers()
    assert f.fetcher.take_records(500) == [] and f.fetcher.expired_unused == 4


def quick_poll(f: Fetching, gap_ms: int) -> None:
    """The application takes what is buffered, and comes back to poll() ``gap_ms`` later."""
    f.take()
    f.engine.handed_out(f.clock.monotonic_ms())
    f.clock.advance(gap_ms)
    f.engine.poll_started(f.clock.monotonic_ms())
    f.in_flight.acknowledge_all(A.ACCEPT)
    f.engine.send_acknowledged()


def test_an_application_that_keeps_up_gets_fetches_of_several_polls_and_its_acknowledgements_ride_on_them() -> None:
    f = Fetching()
    f.turn(fetch_answer([part(records(0, 4), [(0, 3, 1)])]))
    quick_poll(f, gap_ms=QUICK_GAP_MS - 1)
    f.turn(fetch_answer([part(records(4, 3000), [(4, 3003, 1)])]))
    first, second = f.sent(ApiKey.SHARE_FETCH)[:2]
    assert (first.max_records, second.max_records) == (500, FETCH_AHEAD_POLLS * 500)  # batch_size stays a poll's
    assert second.batch_size == 500 and second.topics[0].partitions[0].acknowledgement_batches  # it carried them
    # 2,500 records wait, more than a fetch asks for: none is due, and the acknowledgements of the
    # next poll wait for one...
    quick_poll(f, gap_ms=QUICK_GAP_MS - 1)
    f.turn()
    assert f.sent(ApiKey.SHARE_ACKNOWLEDGE) == [] and len(f.sent(ApiKey.SHARE_FETCH)) == 2
    # ...ACK_LINGER_MS at most: then they go on their own
    f.clock.advance(ACK_LINGER_MS)
    f.acks.append(ack_answer())
    f.turn()
    assert len(f.sent(ApiKey.SHARE_ACKNOWLEDGE)) == 1


def test_a_slower_application_fetches_a_poll_ahead_and_its_acknowledgements_go_at_once() -> None:
    f = Fetching()
    f.turn(fetch_answer([part(records(0, 1600), [(0, 1599, 1)])]))
    quick_poll(f, gap_ms=QUICK_GAP_MS)  # back a moment too late: as any application's
    f.acks.append(ack_answer())
    f.turn()
    assert [r.max_records for r in f.sent(ApiKey.SHARE_FETCH)] == [500]  # 1,100 records wait: no fetch
    assert len(f.sent(ApiKey.SHARE_ACKNOWLEDGE)) == 1
