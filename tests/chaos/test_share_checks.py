"""The chaos run's share invariants (share_side.check_share) on hand-written member logs: each
catches what it is there for, and a clean log passes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from .share_side import DELIVERY_LIMIT, ShareSide, check_share
from .test_checks import FakeMember


@dataclass
class FakeSide:
    members: list[FakeMember]
    end_offsets: dict[int, int] = field(default_factory=lambda: {0: 2})
    faults: list[str] = field(default_factory=list)

    def incarnations(self) -> list[FakeMember]:
        return self.members


def delivered(o: int, n: int, t: float = 0.0) -> dict[str, Any]:
    return {"e": "delivered", "p": 0, "o": o, "n": n, "t": t}


def acked(o: int, n: int, kind: str = "ACCEPT") -> dict[str, Any]:
    return {"e": "acked", "p": 0, "o": o, "n": n, "k": kind}


def answered(o: int, t: float = 0.0) -> dict[str, Any]:
    return {"e": "answered", "p": 0, "o": o, "t": t}


def judged(*logs: list[dict[str, Any]]) -> list[str]:
    return checked(*logs)[0]


def checked(*logs: list[dict[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    side = FakeSide([FakeMember(f"s{i}.0", log) for i, log in enumerate(logs)])
    return check_share(cast(ShareSide, side))


CLEAN = [delivered(0, 1), delivered(1, 1), acked(0, 1, "RELEASE"), acked(1, 1), answered(0, t=1.0),
         answered(1, t=1.0)]


def test_a_clean_log_passes() -> None:
    assert judged(CLEAN, [delivered(0, 2, t=2.0), acked(0, 2), answered(0, t=3.0)]) == []


def test_one_delivery_count_handed_out_twice_is_caught() -> None:
    assert "one delivery count handed out twice" in judged(CLEAN, [delivered(0, 1)])[0]


def test_an_accepted_record_delivered_again_is_caught() -> None:
    assert "accepted at delivery 1 by s0.0, then delivered again" in judged(CLEAN, [delivered(1, 2, t=2.0)])[0]


def test_an_accept_answered_after_the_record_went_to_another_member_is_counted_not_judged() -> None:
    # s0 was paused past the lock: s1 got the record, accepted it and the start offset moved on;
    # then s0's ACCEPT reached the broker, which takes any acknowledgement behind the start offset
    paused = [delivered(0, 1, t=0.0), delivered(1, 1, t=0.0), acked(0, 1), acked(1, 1), answered(1, t=1.0),
              answered(0, t=20.0)]
    violations, figures = checked(paused, [delivered(0, 2, t=16.0), acked(0, 2), answered(0, t=17.0)])
    assert violations == [] and figures["share_accepts_after_redelivery"] == 1


def test_a_refused_accept_is_not_taken_for_an_accepted_record() -> None:
    refused = [delivered(0, 1), delivered(1, 1), acked(0, 1), acked(1, 1),
               {"e": "refused", "p": 0, "o": 1, "why": "InvalidRecordStateError"}, answered(0)]
    assert judged(refused, [delivered(1, 2)]) == []


def test_a_delivery_past_the_limit_a_record_never_delivered_and_a_failure_are_caught() -> None:
    past = [delivered(0, n) for n in range(1, DELIVERY_LIMIT + 2)]
    failed = [{"e": "error", "error": "RuntimeError('boom')"}]
    found = judged(past, failed)
    assert any("delivered past the limit" in v for v in found)
    assert any("1 record(s) never delivered, from [1]" in v for v in found)
    assert any("s1.0 failed: RuntimeError('boom')" in v for v in found)


def test_an_answer_for_an_acknowledgement_never_made_is_caught() -> None:
    assert "never acknowledged" in judged([delivered(0, 1), delivered(1, 1), answered(0)])[0]
