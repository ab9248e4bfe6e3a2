"""When to heartbeat, and until when the member may keep its partitions: pure functions of ``now``.

Mirrors the Java client's ``Heartbeat`` (a session timer reset by each answered heartbeat, an
interval timer that says when to send the next one, and a poll timer that enforces
``max_poll_interval_ms`` on the application), plus an *ownership lease*: the latest instant at
which the coordinator cannot yet have given this member's partitions to another member.

- The coordinator expires a member ``session_timeout_ms`` after the last heartbeat it *received*,
  which is later than when the member *sent* it; so any answered heartbeat (NONE, and also
  REBALANCE_IN_PROGRESS, which proves the member is still in the group) keeps the member until
  ``sent + session_timeout_ms``.
- A rebalance may complete without a member that has not rejoined once its rebalance timeout
  (``max_poll_interval_ms``) has passed since it began.  It began after the last heartbeat that was
  answered NONE (the group was stable then), so the member is safe until that heartbeat's
  ``sent + rebalance_timeout_ms``.

Past the earlier of the two, the member must treat its partitions as lost.  A member with no
partitions, or one that has sent its JoinGroup, has no lease to keep.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Heartbeat:
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    retry_backoff_ms: int
    last_sent: int = 0
    last_poll: int = 0
    session_anchor: int = 0  # send time of the last answered heartbeat (or when the lease began)
    stable_anchor: int = 0  # send time of the last heartbeat answered NONE (or when it began)
    heartbeat_failed: bool = False
    in_flight: bool = False
    follow_up_at: int | None = None  # an extra, early heartbeat (see follow_up)

    def __post_init__(self) -> None:
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms must be lower than session_timeout_ms")

    # -- events --------------------------------------------------------------------------
    def poll(self, now: int) -> None:
        """The application is in poll(): the poll timer starts again."""
        self.last_poll = now

    def follow_up(self, at: int) -> None:
        """Heartbeat early, at ``at``: after a cooperative round a follow-up rebalance usually
        comes at once (a member revoked partitions and rejoins), and members that revoked nothing
        learn of it only from a heartbeat answered REBALANCE_IN_PROGRESS; the partitions held
        back stand still until they do."""
        self.follow_up_at = at

    def sent(self, now: int) -> None:
        self.follow_up_at = None
        self.last_sent = now
        self.heartbeat_failed = False
        self.in_flight = True

    def received(self, now: int, sent_at: int, group_stable: bool) -> None:
        """An answer proving membership came for the heartbeat sent at ``sent_at``;
        ``group_stable``: NONE, not REBALANCE_IN_PROGRESS."""
        self.in_flight = False
        self.session_anchor = max(self.session_anchor, sent_at)
        if group_stable:
            self.stable_anchor = max(self.stable_anchor, sent_at)

    def failed(self, now: int) -> None:
        """The heartbeat failed: try again after the retry backoff, not a whole interval."""
        self.heartbeat_failed = True
        self.in_flight = False

    def joined(self, sync_sent_at: int) -> None:
        """A SyncGroup answer gave the member its assignment.  The coordinator restarted the
        member's session when it answered, and no later rebalance can have begun before it
        processed the SyncGroup, so the lease runs from when the SyncGroup was sent (or from a
        later answered heartbeat)."""
        self.session_anchor = max(self.session_anchor, sync_sent_at)
        self.stable_anchor = max(self.stable_anchor, sync_sent_at)
        self.last_sent = sync_sent_at
        self.heartbeat_failed = False
        self.in_flight = False

    # -- decisions -----------------------------------------------------------------------
    def time_to_next_heartbeat(self, now: int) -> int:
        if self.in_flight:
            return self.retry_backoff_ms  # look again for the answer soon (Java's thread waits the backoff)
        wait = self.retry_backoff_ms if self.heartbeat_failed else self.heartbeat_interval_ms
        due = self.last_sent + wait
        if self.follow_up_at is not None:
            due = min(due, self.follow_up_at)
        return max(0, due - now)

    def should_heartbeat(self, now: int) -> bool:
        return not self.in_flight and self.time_to_next_heartbeat(now) == 0

    def lease_deadline(self) -> int:
        """Until when the member may keep its partitions without a new answered heartbeat."""
        return min(self.session_anchor + self.session_timeout_ms, self.stable_anchor + self.max_poll_interval_ms)

    def lease_expired(self, now: int) -> bool:
        return now >= self.lease_deadline()

    def poll_timeout_expired(self, now: int) -> bool:
        return now - self.last_poll > self.max_poll_interval_ms

    def time_to_poll_timeout(self, now: int) -> int:
        return max(0, self.last_poll + self.max_poll_interval_ms - now)
