"""Share sessions (groupclient/share/session.py): epochs, what each request names, and a session
the broker lost, as Java's ShareSessionHandler."""

from __future__ import annotations

import uuid

from groupclient.error_codes import ErrorCode
from groupclient.share.session import MAX_EPOCH, ShareSession, next_epoch
from groupclient.structs import TopicPartition

T = uuid.UUID(int=7)
T2 = uuid.UUID(int=8)
P0, P1 = TopicPartition("t", 0), TopicPartition("t", 1)


def test_epochs_run_from_zero_and_wrap_to_one() -> None:
    assert next_epoch(0) == 1 and next_epoch(41) == 42
    assert next_epoch(MAX_EPOCH) == 1
    assert next_epoch(-1) == -1


def test_a_session_opens_with_every_partition_then_names_only_changes() -> None:
    s = ShareSession(1)
    first = s.fetch({P0: (T, 0), P1: (T, 1)}, {})
    assert first.epoch == 0 and [tp for tp, _ in first.added] == [P0, P1] and not first.forgotten
    assert s.answered(ErrorCode.NONE) and s.epoch == 1
    same = s.fetch({P0: (T, 0), P1: (T, 1)}, {})
    assert same.epoch == 1 and not same.added and not same.forgotten
    s.answered(ErrorCode.NONE)
    moved = s.fetch({P0: (T, 0)}, {})
    assert moved.forgotten == [(T, 1)] and not moved.added
    s.answered(ErrorCode.NONE)
    recreated = s.fetch({P0: (T2, 0)}, {})  # the topic was deleted and made again: a new id
    assert recreated.forgotten == [(T, 0)] and recreated.added == [(P0, (T2, 0))]


def test_a_lost_session_starts_again_at_epoch_zero_with_everything() -> None:
    s = ShareSession(1)
    s.fetch({P0: (T, 0)}, {})
    s.answered(ErrorCode.NONE)
    s.fetch({P0: (T, 0)}, {})
    for code in (ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                 ErrorCode.SHARE_SESSION_LIMIT_REACHED):
        assert not s.answered(code)
        assert s.epoch == 0 and not s.is_open
        again = s.fetch({P0: (T, 0)}, {})
        assert again.added == [(P0, (T, 0))]
    assert s.acknowledge({}) is None  # a ShareAcknowledge cannot open a session


def test_another_error_still_moves_the_epoch_on_and_a_failed_request_starts_over() -> None:
    s = ShareSession(1)
    s.fetch({P0: (T, 0)}, {})
    s.answered(ErrorCode.NONE)
    assert not s.answered(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    assert s.epoch == 2  # as Java's: only the session errors reset it
    s.failed()
    assert s.epoch == 0


def test_closing_sends_epoch_minus_one() -> None:
    s = ShareSession(1)
    s.fetch({P0: (T, 0)}, {})
    s.answered(ErrorCode.NONE)
    s.close()
    request = s.acknowledge({})
    assert request is not None and request.epoch == -1
    s.failed()
    assert s.epoch == -1
