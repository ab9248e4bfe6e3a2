"""The consumer-protocol member's clocks, pure in ``now`` (as :mod:`.heartbeat` is the classic
member's): when the next ConsumerGroupHeartbeat is due, the retry backoff after a failure, the
poll timeout (max_poll_interval_ms), and the two deadlines after which the broker may have given
the member's partitions to others, its lease:

* the revocation deadline: a target that takes partitions away must be reconciled within the
  rebalance timeout, counted from when the broker took the heartbeat it answered with that target
  (the broker fences the member after it);
* the session: the broker expires a member none of whose heartbeats it took within the group's
  session timeout; the last heartbeat it answered was sent at ``proven_at``, so its session ran
  from later than that.

Nothing here reads a clock, takes a lock or sends: the member holds its lock around every call and
passes ``now``; the unit tests drive it with plain numbers (tests/unit/test_consumer_timing.py).
"""

from __future__ import annotations

import random

from ..network.backoff import ExponentialBackoff

IN_FLIGHT_CHECK_MS = 50  # how often the heartbeat thread looks for the answer of a heartbeat in flight
# While partitions come to the member (it joined, or a target gave it more), the rest of what the
# group moves to it is released by other members one by one, and the broker says so only in the
# answer to this member's next heartbeat: at the broker's interval, a released partition waits
# half an interval on average with no owner.  So until SETTLING_INTERVALS intervals pass with
# nothing more coming, the member heartbeats every tenth of the interval (not below
# SETTLING_FLOOR_MS): only the members gaining partitions, only while they do.
SETTLING_INTERVALS = 2
SETTLING_DIVISOR = 10
SETTLING_FLOOR_MS = 100


class ConsumerHeartbeatTimer:
    """A consumer-protocol member's heartbeat, poll and lease deadlines (monotonic ms)."""

    def __init__(self, rebalance_timeout_ms: int, retry_backoff_ms: int, now: int, rng: random.Random) -> None:
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self._backoff = ExponentialBackoff(retry_backoff_ms, max(retry_backoff_ms, 1000))
        self._rng = rng  # the consumer's: jitter of the retry only
        self.interval_ms = 0  # the broker's; until the first answer, heartbeat at once
        self.next_at = 0
        self.in_flight = False
        self.failures = 0  # in a row, answered or not: the backoff grows with them
        self.last_poll = now
        self.proven_at: int | None = None  # when the last heartbeat the broker answered was sent
        self.revoke_by: int | None = None  # the broker may fence the member from then on
        self.settling_until = 0  # heartbeats go at the settling cadence until then (see above)

    # -- heartbeats ----------------------------------------------------------------------------
    def due(self, now: int) -> bool:
        """A heartbeat may go out now: none is in flight and its time has come."""
        return not self.in_flight and now >= self.next_at

    def send_at_once(self) -> None:
        """The next heartbeat is due now (a join, an acknowledgement, a coordinator to find again)."""
        self.next_at = 0

    def time_to_next(self, now: int) -> int:
        """Until the next heartbeat is due; while one is in flight, a short while: the heartbeat
        thread must read its answer itself (a busy application does not poll), or no further
        heartbeat would go out and the broker would fence the member after its session."""
        if self.in_flight:
            return IN_FLIGHT_CHECK_MS
        return max(0, self.next_at - now)

    def sent(self, now: int) -> None:
        """A heartbeat went out at ``now``: the next one is due an interval later."""
        self.in_flight = True
        self.next_at = now + max(self.interval_ms, 1)

    def failed(self, now: int) -> None:
        """No answer, or an error answer: retry after the backoff, which grows with each failure
        in a row."""
        self.in_flight = False
        self.next_at = now + self._backoff.backoff_ms(self.failures, self._rng)
        self.failures += 1

    def answered(self) -> None:
        """An answer without error came (whether or not it still concerns this membership)."""
        self.in_flight = False
        self.failures = 0

    def proven(self, sent_at: int, interval_ms: int, at_once: bool) -> None:
        """The broker took the heartbeat sent at ``sent_at`` for the current membership: its
        session runs from then on, the interval it gave applies, and the next heartbeat is due an
        interval after that one, or ``at_once`` (an acknowledgement waits for this answer)."""
        self.proven_at = sent_at
        if interval_ms > 0:
            self.interval_ms = interval_ms
        self.next_at = 0 if at_once else sent_at + self._cadence(sent_at)

    def gaining(self, sent_at: int) -> None:
        """The answer to the heartbeat sent at ``sent_at`` (already :meth:`proven`) joined the
        member or gave it partitions: more may be released to it soon, so heartbeat at the
        settling cadence for the next SETTLING_INTERVALS intervals."""
        self.settling_until = sent_at + SETTLING_INTERVALS * max(self.interval_ms, 1)
        if self.next_at:
            self.next_at = min(self.next_at, sent_at + self._cadence(sent_at))

    def _cadence(self, sent_at: int) -> int:
        """From a heartbeat sent at ``sent_at`` to the next: the interval, or while settling a
        tenth of it (not below SETTLING_FLOOR_MS, never above the interval)."""
        interval = max(self.interval_ms, 1)
        if sent_at >= self.settling_until:
            return interval
        return min(interval, max(SETTLING_FLOOR_MS, self.interval_ms // SETTLING_DIVISOR))

    # -- the poll timeout ------------------------------------------------------------------------
    def polled(self, now: int) -> None:
        self.last_poll = now

    def poll_ok(self, now: int) -> bool:
        """The application polled within the poll interval (max_poll_interval_ms)."""
        return now - self.last_poll < self.rebalance_timeout_ms

    def time_to_poll_timeout(self, now: int) -> int:
        return max(0, self.last_poll + self.rebalance_timeout_ms - now)

    # -- the lease -------------------------------------------------------------------------------
    def must_revoke_by(self, took_at: int) -> None:
        """A target takes partitions away: the broker fences the member a rebalance timeout
        after it took the heartbeat (sent at ``took_at``) it answered with that target."""
        self.revoke_by = took_at + self.rebalance_timeout_ms

    def revoked(self) -> None:
        """Nothing owned is asked back any more (reconciled, fenced, left)."""
        self.revoke_by = None

    def session_end(self, session_ms: int | None, holds_partitions: bool) -> int | None:
        """When the broker may have expired the member's session, if known and if it matters
        (the member holds partitions)."""
        if session_ms is None or self.proven_at is None or not holds_partitions:
            return None
        return self.proven_at + session_ms

    def lease_end(self, session_ms: int | None, holds_partitions: bool) -> int | None:
        """The first of the two deadlines, or None when neither applies."""
        ends = [t for t in (self.revoke_by, self.session_end(session_ms, holds_partitions)) if t is not None]
        return min(ends) if ends else None

    def expired_session(self, now: int, session_ms: int | None, holds_partitions: bool) -> bool:
        end = self.session_end(session_ms, holds_partitions)
        return end is not None and now >= end

    def missed_revocation(self, now: int) -> bool:
        return self.revoke_by is not None and now >= self.revoke_by
