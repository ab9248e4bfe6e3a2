"""What every group driver is built from and does the same way: the member, its committer and
the heartbeat thread that keeps it in the group.  The drivers themselves are
``classic_driver.py`` and ``consumer_protocol_driver.py``; ``group_driver.py`` states what the
consumer asks of them and builds the one ``group_protocol`` names."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from ..clock import Clock, Timer
from ..member.heartbeat_thread import HeartbeatThread
from ..member.membership import Membership
from ..network.client import NetworkClient
from ..structs import OffsetAndMetadata, TopicPartition
from .commits import OffsetCommitter
from .listener import ListenerCalls
from .rebalance_events import RebalanceRecorder
from .subscription import SubscriptionState

CommitHook = Callable[[dict[TopicPartition, OffsetAndMetadata]], None]
CommitObserver = Callable[[float, BaseException | None], None]


@dataclass(frozen=True)
class GroupParts:
    """The consumer's parts a driver works with (each is the consumer's own, shared)."""

    client: NetworkClient
    clock: Clock
    rng: random.Random
    subscription: SubscriptionState
    listener_calls: ListenerCalls
    events: RebalanceRecorder
    drop_fetched: Callable[[], None]  # empty the fetch buffer: its records are of partitions given up
    on_commit: CommitHook | None  # the interceptors' on_commit
    commit_observer: CommitObserver | None  # telemetry of each commit


class DriverBase:
    """The member, its committer and its heartbeat thread (application thread, except what
    :class:`HeartbeatThread` runs)."""

    def __init__(self, member: Membership, committer: OffsetCommitter, parts: GroupParts) -> None:
        self.member = member
        self.committer = committer
        self.parts = parts
        self.subscription = parts.subscription
        self.clock = parts.clock
        self.client = parts.client
        self.heartbeat_thread: HeartbeatThread | None = None

    def start_heartbeat_thread(self) -> None:
        """Started before the first join, as Java does: a member waiting for its assignment
        heartbeats too, and reads answers while the application is away."""
        if self.heartbeat_thread is None:
            self.heartbeat_thread = HeartbeatThread(self.member, self.on_poll_timeout)
            self.heartbeat_thread.start()

    def stop_heartbeat_thread(self, timeout_s: float) -> None:
        if self.heartbeat_thread is not None:
            self.heartbeat_thread.shutdown(timeout_s)

    def on_poll_timeout(self) -> None:
        """Runs on the heartbeat thread: drop the partitions before the leave goes out, so that no
        other member can be assigned a partition this one still claims."""
        self.member.ownership.on_ownership_lost("poll() was not called within max_poll_interval_ms")

    def take_error(self) -> BaseException | None:
        return self.member.take_error()

    def poll_step(self, timer: Timer, applications_poll: bool) -> bool:
        """``poll()``'s group step: completed commits' callbacks; without a group subscription
        (manual assignment) only auto-commit; else the poll timer, the lease, then the protocol's
        own step (:meth:`_subscribed_step`).  True when the partitions owned can be fetched."""
        self.committer.invoke_completed_commit_callbacks()
        if not self.subscription.is_group_subscribed():
            self.committer.maybe_auto_commit(self.clock.monotonic_ms())
            return True
        now = self.clock.monotonic_ms()
        # every turn of the poll loop counts as polling (Java's pollHeartbeat), so one long poll()
        # on an idle topic never looks like an application that stopped polling; a member that
        # left for not polling joins again
        if applications_poll:
            self.member.poll_heartbeat(now)
        # a member that was frozen past its lease lets go before it hands out another record
        self.member.check_lease(now)
        return self._subscribed_step(timer, now, applications_poll)

    def _subscribed_step(self, timer: Timer, now: int, applications_poll: bool) -> bool:
        raise NotImplementedError
