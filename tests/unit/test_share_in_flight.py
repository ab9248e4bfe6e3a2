"""The share consumer's records in flight and their acknowledgements (groupclient/share/in_flight.py):
Java's rules, and the acknowledgement batches byte for byte as Java's ``Acknowledgements`` makes
them (the expected batches are what kafka-clients 4.4.0 gave for the same input, run in jshell)."""

from __future__ import annotations

from collections import namedtuple

import pytest
from hypothesis import given, strategies as st

from groupclient.errors import IllegalStateError
from groupclient.protocol.share_group import AcknowledgeType as A
from groupclient.share.in_flight import InFlight, acknowledgement_batches
from groupclient.structs import TopicPartition

TP = TopicPartition("t", 0)
Rec = namedtuple("Rec", "topic partition offset")
ACC, REL, REJ = int(A.ACCEPT), int(A.RELEASE), int(A.REJECT)


def records(*offsets: int) -> list[Rec]:
    return [Rec("t", 0, o) for o in offsets]


@pytest.mark.parametrize("acks, batches", [
    ({o: ACC for o in range(5)}, [(0, 4, [ACC])]),
    ({0: ACC, 1: 0, 2: ACC}, [(0, 2, [ACC, 0, ACC])]),
    ({**{o: ACC for o in range(15)}, 3: REJ}, [(0, 3, [ACC, ACC, ACC, REJ]), (4, 14, [ACC])]),
    ({**{o: ACC for o in range(10)}, 10: REJ}, [(0, 10, [ACC] * 10 + [REJ])]),
    ({**{o: ACC for o in range(11)}, 11: REJ}, [(0, 10, [ACC]), (11, 11, [REJ])]),
    ({0: REJ, **{o: ACC for o in range(1, 21)}}, [(0, 0, [REJ]), (1, 20, [ACC])]),
    ({0: ACC, 1: ACC, 5: REL, 6: ACC}, [(0, 1, [ACC]), (5, 6, [REL, ACC])]),
    ({0: 0, 1: 0}, [(0, 1, [0])]),
])
def test_acknowledgement_batches_are_javas(acks: dict[int, int], batches: list[tuple[int, int, list[int]]]) -> None:
    assert acknowledgement_batches(acks) == batches


@given(st.dictionaries(st.integers(0, 60), st.sampled_from([0, ACC, REL, REJ]), min_size=1))
def test_the_batches_say_exactly_what_was_acknowledged(acks: dict[int, int]) -> None:
    said: dict[int, int] = {}
    for first, last, types in acknowledgement_batches(acks):
        assert len(types) in (1, last - first + 1)
        for i, offset in enumerate(range(first, last + 1)):
            assert offset not in said
            said[offset] = types[0] if len(types) == 1 else types[i]
    assert said == acks


def test_explicit_mode_takes_each_record_of_the_last_poll_once() -> None:
    flight = InFlight(explicit=True)
    flight.deliver(TP, 1, records(5, 6, 7))
    flight.acknowledge(TP, 5, A.ACCEPT)
    flight.acknowledge(TP, 6, A.RELEASE)
    assert flight.unacknowledged() == 1
    with pytest.raises(IllegalStateError, match="already acknowledged .ACCEPT."):
        flight.acknowledge(TP, 5, A.REJECT)
    with pytest.raises(IllegalStateError, match="offset 9 of t-0 cannot be acknowledged"):
        flight.acknowledge(TP, 9, A.ACCEPT)
    with pytest.raises(IllegalStateError, match="cannot be acknowledged"):
        flight.acknowledge(TopicPartition("t", 1), 5, A.ACCEPT)
    flight.acknowledge(TP, 7, A.REJECT)
    assert flight.take() == {(TP, 1): {5: ACC, 6: REL, 7: REJ}}
    assert flight.in_flight() == 0
    with pytest.raises(IllegalStateError, match="acknowledgement was sent already"):
        flight.acknowledge(TP, 5, A.ACCEPT)  # taken: no longer in flight


def test_implicit_mode_refuses_acknowledge_and_accepts_everything() -> None:
    flight = InFlight(explicit=False)
    flight.deliver(TP, 1, records(0, 1))
    with pytest.raises(IllegalStateError, match="Implicit acknowledgement of delivery is being used"):
        flight.acknowledge(TP, 0, A.ACCEPT)
    flight.acknowledge_all(A.ACCEPT)
    assert flight.take() == {(TP, 1): {0: ACC, 1: ACC}}


def test_a_commit_in_explicit_mode_sends_what_was_acknowledged_and_keeps_the_rest_in_flight() -> None:
    flight = InFlight(explicit=True)
    flight.deliver(TP, 1, records(0, 1, 2))
    flight.acknowledge(TP, 1, A.ACCEPT)
    assert flight.take() == {(TP, 1): {1: ACC}}
    assert flight.unacknowledged() == 2
    flight.acknowledge(TP, 0, A.ACCEPT)  # still in flight: still acknowledgeable
    assert flight.take() == {(TP, 1): {0: ACC}}


def test_gaps_and_undeliverable_records_are_acknowledged_by_themselves() -> None:
    flight = InFlight(explicit=True)
    flight.gaps(TP, 1, [3, 4])
    flight.undeliverable(TP, 1, 7)
    assert flight.unacknowledged() == 0  # neither was handed out
    flight.acknowledge(TP, 7, A.REJECT)  # by offset: overrides the release
    with pytest.raises(IllegalStateError, match="cannot be acknowledged"):
        flight.acknowledge(TP, 7, A.ACCEPT)
    assert flight.take() == {(TP, 1): {3: 0, 4: 0, 7: REJ}}


def test_an_undeliverable_record_left_alone_is_released() -> None:
    flight = InFlight(explicit=False)
    flight.undeliverable(TP, 1, 2)
    flight.acknowledge_all(A.ACCEPT)
    assert flight.take() == {(TP, 1): {2: REL}}


def test_a_renewed_record_comes_back_and_still_needs_its_acknowledgement() -> None:
    flight = InFlight(explicit=True)
    flight.deliver(TP, 1, records(0, 1))
    flight.acknowledge(TP, 0, A.RENEW)
    flight.acknowledge(TP, 1, A.ACCEPT)
    assert flight.take() == {(TP, 1): {0: int(A.RENEW), 1: ACC}}
    assert flight.renewing() and flight.take_renewed() == {}
    flight.renew_answered(TP, [0, 1], ok=True)
    assert not flight.renewing()
    assert flight.take_renewed() == {TP: records(0)}
    assert flight.unacknowledged() == 1
    flight.acknowledge(TP, 0, A.ACCEPT)
    assert flight.take() == {(TP, 1): {0: ACC}}


def test_a_renewal_the_broker_refused_drops_the_record() -> None:
    flight = InFlight(explicit=True)
    flight.deliver(TP, 1, records(0))
    flight.acknowledge(TP, 0, A.RENEW)
    flight.take()
    flight.renew_answered(TP, [0], ok=False)
    assert not flight.renewing() and flight.take_renewed() == {} and flight.in_flight() == 0


def test_records_of_one_partition_from_two_leaders_go_back_each_to_its_own() -> None:
    # the leader moved between two fetches: one poll hands out the partition's records from the old
    # leader's answer and the new one's, and each acknowledgement goes where that record's lock is
    for explicit in (False, True):
        flight = InFlight(explicit=explicit)
        flight.deliver(TP, 1, records(0, 1))
        flight.deliver(TP, 2, records(2))
        if explicit:
            for offset, kind in ((0, A.ACCEPT), (1, A.RELEASE), (2, A.REJECT)):
                flight.acknowledge(TP, offset, kind)
            with pytest.raises(IllegalStateError, match="already acknowledged"):
                flight.acknowledge(TP, 2, A.ACCEPT)
        else:
            flight.acknowledge_all(A.ACCEPT)
        assert flight.take() == ({(TP, 1): {0: ACC, 1: REL}, (TP, 2): {2: REJ}} if explicit
                                 else {(TP, 1): {0: ACC, 1: ACC}, (TP, 2): {2: ACC}})
        flight.forget_settled()
        assert flight.in_flight() == 0 and flight.take() == {}
