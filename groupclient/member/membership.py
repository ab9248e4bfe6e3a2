"""What the consumer, its commits and the heartbeat thread ask of a member, whichever group
protocol it follows: :class:`~groupclient.member.group_member.GroupMember` (classic) and
:class:`~groupclient.member.consumer_member.ConsumerGroupMember` (KIP-848) both are a
:class:`Membership`.  What only one protocol has (the join sequence, reconciliation) stays with
that protocol's driver (``groupclient/consumer/*_driver.py``).

Every method may be called from either thread unless it says otherwise; each takes the member's
own lock at most once and never calls user code or a future listener under it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..clock import Clock, Timer
from ..network.future import RequestFuture
from ..network.transport import Transport
from .coordinator_lookup import CoordinatorLookup
from .types import CommitIdentity, GroupConfig, MemberSnapshot, PartitionOwnership


class Membership(Protocol):
    """One member of one group, as the protocol-independent parts of the consumer see it."""

    client: Transport
    clock: Clock
    config: GroupConfig
    coordinator: CoordinatorLookup
    ownership: PartitionOwnership

    # -- who it is -------------------------------------------------------------------------
    def snapshot(self) -> MemberSnapshot:
        """Its id, generation or epoch, and state, read at once."""

    def commit_identity(self) -> CommitIdentity | None:
        """What an OffsetCommit carries, or None when the member may not commit now."""

    def offset_fetch_identity(self) -> CommitIdentity | None:
        """What an OffsetFetch names (KIP-848's v9 member fields), or None."""

    def is_stable(self) -> bool:
        """It owns the assignment the group gave it, with nothing under way."""

    def rebalance_in_progress(self) -> bool:
        """A join, or a reconciliation, is under way."""

    def rebalance_timing(self) -> tuple[str, int, int]:
        """The current rebalance's reason, and when it began and reached its last step (ms)."""

    # -- errors and fencing ------------------------------------------------------------------
    def set_fatal(self, error: BaseException) -> None:
        """Keep ``error``: the group refused this member for good, or groupclient failed."""

    def note_failure(self, error: BaseException) -> None:
        """A request of this member failed: a fatal error is kept (:meth:`set_fatal`)."""

    def take_error(self) -> BaseException | None:
        """What ``poll()`` raises now (the protocol decides whether once or every time)."""

    def request_rejoin(self, reason: str) -> None:
        """Rejoin at the next poll (the consumer protocol's broker reassigns by itself: logged)."""

    def fenced_if_still(self, sent: CommitIdentity, reason: str, keep_member_id: bool) -> None:
        """A request sent as ``sent`` was answered "fenced": if the member is still ``sent``, its
        partitions are lost now and it joins again."""

    # -- the coordinator -----------------------------------------------------------------------
    def coordinator_unknown(self) -> bool:
        """No coordinator is known (or its connection is gone)."""

    def coordinator_problem(self) -> str | None:
        """Why the coordinator was last lost or not found (for a timeout's message)."""

    def mark_coordinator_dead(self, reason: str) -> None:
        """Forget the coordinator: the next step looks it up again."""

    def ensure_coordinator_ready(self, timer: Timer) -> bool:
        """Find the coordinator and connect within ``timer`` (application thread)."""

    def send_to_coordinator(self, request_cls: Any, response_cls: Any, build: Callable[[int], Any],
                            timeout_ms: int | None = None, heartbeat: bool = False) -> RequestFuture[Any]:
        """Send the request ``build(version)`` makes to the coordinator."""

    # -- heartbeats, the poll timeout and the lease ------------------------------------------------
    def heartbeat_enabled(self) -> bool:
        """Heartbeats are sent now (the member is in the group, or leaving it)."""

    def send_heartbeat_if_due(self, now: int) -> RequestFuture[None] | None:
        """Send the heartbeat if it is due; its future, or None."""

    def time_to_next_heartbeat(self, now: int) -> int:
        """Until the next heartbeat is due (ms)."""

    def poll_heartbeat(self, now: int) -> None:
        """The application polled (restarts the poll timer)."""

    def poll_timed_out(self, now: int) -> bool:
        """The application has not polled within max_poll_interval_ms."""

    def time_to_poll_timeout(self, now: int) -> int:
        """Until max_poll_interval_ms runs out (ms)."""

    def time_to_lease_end(self, now: int) -> int | None:
        """Until the partitions may be others' (ms), or None when no deadline applies."""

    def check_lease(self, now: int) -> bool:
        """Drop the partitions if the lease ended (or the other thread decided a loss); True if
        it dropped them."""

    def leave_if_poll_timed_out(self, now: int,
                                before_sending: Callable[[], None]) -> tuple[bool, RequestFuture[None] | None]:
        """The heartbeat thread's poll-timeout step: leave if the application stopped polling."""

    def maybe_leave_group(self, reason: str,
                          before_sending: Callable[[], None] | None = None) -> RequestFuture[None] | None:
        """Leave the group (close, unsubscribe); the leave's future, or None when nothing is sent."""
