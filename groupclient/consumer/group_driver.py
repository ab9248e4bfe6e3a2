"""What the consumer facade asks of its group, whichever protocol the group follows, and the one
place that picks the implementation: :func:`build_group_driver`, keyed on ``group_protocol``.

A consumer with a ``group_id`` has exactly one :class:`GroupDriver`; without one it has none and
consumes without a group.  The facade never asks which protocol it is: what differs (a join with
client-side assignors, or reconciling the broker's target) is inside the driver, what is the same
(commits, heartbeats, the lease) is the :class:`~groupclient.member.membership.Membership` and the
:class:`~groupclient.consumer.commits.OffsetCommitter` it exposes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..clock import Timer
from ..member.membership import Membership
from ..member.types import GroupConfig
from .classic_driver import ClassicDriver
from .commits import OffsetCommitter
from .consumer_protocol_driver import ConsumerProtocolDriver
from .driver_base import GroupParts
from .subscription import TopicPattern


class GroupDriver(Protocol):
    """One consumer's membership of one group, as ``poll()``, ``subscribe()``, ``commit()`` and
    ``close()`` drive it (application thread only, except ``member``'s any-thread methods)."""

    @property
    def member(self) -> Membership:
        """The member: what works the same under either protocol (any thread)."""

    @property
    def committer(self) -> OffsetCommitter:
        """Commits and committed offsets (an OffsetFetch names the member as ``member`` says)."""

    def compile_pattern(self, pattern: str) -> TopicPattern:
        """``pattern`` compiled as this protocol reads it (the classic protocol's by this client,
        with Python's ``re``; the consumer protocol's by the broker, with RE2/J), or
        ConfigurationError now, before anything changes."""

    def subscribed(self, topics: list[str], pattern: str | None, changed: bool) -> None:
        """The subscription is now ``topics`` or ``pattern``; ``changed``: its topics differ from
        before."""

    def unsubscribed(self) -> None:
        """The consumer unsubscribed (it has left the group already)."""

    def enforce_rebalance(self, reason: str) -> None:
        """The application asked for a rebalance, with ``reason``."""

    def poll_step(self, timer: Timer, applications_poll: bool) -> bool:
        """``poll()``'s group step within ``timer``: True when the partitions owned can be fetched.
        ``applications_poll``: this turn is the application's own poll (not groupclient.aio's
        consumer thread), so it restarts max_poll_interval_ms."""

    def first_assignment_in_place(self) -> bool:
        """The member is stable with nothing pending: its first assignment is in place."""

    def take_error(self) -> BaseException | None:
        """What ``poll()`` raises now: the group's refusal, or None."""

    def start_heartbeat_thread(self) -> None:
        """Start the heartbeat thread if it is not running."""

    def stop_heartbeat_thread(self, timeout_s: float) -> None:
        """Stop the heartbeat thread, waiting at most ``timeout_s``."""

    def on_poll_timeout(self) -> None:
        """The heartbeat thread's step when the application stopped polling: drop the partitions."""


# group_protocol -> its driver: the one table a new group protocol is added to
DRIVERS: dict[str, Callable[[dict[str, Any], GroupConfig, GroupParts], GroupDriver]] = {
    "classic": ClassicDriver,
    "consumer": ConsumerProtocolDriver,
}


def build_group_driver(cfg: dict[str, Any], parts: GroupParts) -> GroupDriver:
    """The driver of ``cfg["group_protocol"]`` for the group ``cfg["group_id"]``."""
    group = GroupConfig(cfg["group_id"], cfg["group_instance_id"], cfg["session_timeout_ms"],
                        cfg["max_poll_interval_ms"], cfg["heartbeat_interval_ms"], cfg["retry_backoff_ms"],
                        cfg["request_timeout_ms"])
    return DRIVERS[cfg["group_protocol"]](cfg, group, parts)
