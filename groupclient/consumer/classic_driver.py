"""The classic group protocol's driver: JoinGroup and SyncGroup, the client-side assignor, the
listener around each rebalance (eager, or cooperative as KIP-429), heartbeats of the classic kind.
The join sequence itself is :class:`~groupclient.member.join.GroupJoin`, the consumer's part of it
:class:`~groupclient.consumer.group_hooks.ConsumerGroupHooks`; this drives them from ``poll()``.
Application thread only."""

from __future__ import annotations

from typing import Any

from ..assignors.base import RebalanceProtocol, common_protocol
from ..assignors.registry import resolve_assignors
from ..clock import Timer
from ..member.coordinator_lookup import CoordinatorLookup
from ..member.group_member import GroupMember
from ..member.join import GroupJoin
from ..member.types import GroupConfig
from .assigned import AssignedPartitions
from .commits import OffsetCommitter
from .driver_base import DriverBase, GroupParts
from .group_hooks import ConsumerGroupHooks
from .subscription import TopicPattern, python_pattern
from .topic_metadata import wait_for_topic_metadata


class ClassicDriver(DriverBase):
    """A classic group's member as ``poll()`` drives it."""

    member: GroupMember

    def __init__(self, cfg: dict[str, Any], group: GroupConfig, parts: GroupParts) -> None:
        assignors = resolve_assignors(cfg["partition_assignment_strategy"])
        protocol = common_protocol(assignors)
        member = GroupMember(
            parts.client, parts.clock, group,
            CoordinatorLookup(parts.client, group.group_id, group.retry_backoff_ms, parts.rng),
            AssignedPartitions(parts.subscription, parts.drop_fetched, group.group_id),
            keeps_partitions_while_rejoining=protocol is RebalanceProtocol.COOPERATIVE)
        committer = OffsetCommitter(member, parts.subscription, cfg["enable_auto_commit"],
                                    cfg["auto_commit_interval_ms"], on_commit=parts.on_commit,
                                    on_done=parts.commit_observer)
        super().__init__(member, committer, parts)
        self.hooks = ConsumerGroupHooks(member, committer, parts.subscription, assignors, protocol,
                                        parts.listener_calls, parts.events, parts.drop_fetched, cfg["client_rack"])
        self.join = GroupJoin(member, self.hooks)

    # -- the subscription ----------------------------------------------------------------------
    def compile_pattern(self, pattern: str) -> TopicPattern:
        """This client matches the pattern itself, with Python's ``re``, as kafka-python does."""
        return python_pattern(pattern)

    def subscribed(self, topics: list[str], pattern: str | None, changed: bool) -> None:
        if changed:
            # also while a JoinGroup is under way: that join carries the old subscription
            self.member.request_rejoin(f"subscription changed to {sorted(self.subscription.topics)}")

    def unsubscribed(self) -> None:
        """Nothing more: leaving the group was enough."""

    def enforce_rebalance(self, reason: str) -> None:
        self.member.request_rejoin(reason)

    # -- poll() ------------------------------------------------------------------------------
    def first_assignment_in_place(self) -> bool:
        return self.member.is_stable() and not self.join.needed_or_pending()

    def _subscribed_step(self, timer: Timer, now: int, applications_poll: bool) -> bool:
        """Pattern matches, the coordinator, the join and heartbeats."""
        member, join, hooks, committer = self.member, self.join, self.hooks, self.committer
        # what the heartbeat thread gave up (the lease ran out) is told first, whatever follows:
        # the join below may spend the whole poll waiting for a coordinator that is known but
        # unreachable, and the application may need to stop work on those partitions now
        hooks.tell_losses()
        metadata = self.client.metadata.snapshot
        if self.subscription.pattern is not None and metadata.version:
            if self.subscription.match_pattern(metadata.topics()):
                member.request_rejoin(f"the pattern now matches {sorted(self.subscription.topics)}")
        if not wait_for_topic_metadata(self.client, self.subscription, self.clock, timer):
            return False
        if hooks.metadata_changed_since_assignment():
            hooks.assigned_snapshot = None
            member.request_rejoin("partition metadata changed since the last assignment")
        if member.coordinator_unknown() and not member.ensure_coordinator_ready(timer):
            # Java's ConsumerCoordinator.poll looks the coordinator up on every poll; meanwhile a
            # stable member goes on fetching what it owns (its lease says until when)
            return member.is_stable() and not join.needed_or_pending()
        self.start_heartbeat_thread()
        if join.needed_or_pending():
            if not applications_poll and member.poll_timed_out(now):
                # left for not polling in time (groupclient.aio): it joins again when the
                # application asks for records, not on the consumer thread's own
                return False
            if hooks.protocol is RebalanceProtocol.COOPERATIVE and self.subscription.assigned():
                # KIP-429: a cooperative member goes on consuming what it owns while the group
                # rebalances; the join advances a step per turn of the poll loop
                join.join_group_if_needed(Timer(self.clock, 0))
            elif not join.join_group_if_needed(timer):
                return False
        committer.maybe_auto_commit(self.clock.monotonic_ms())
        member.send_heartbeat_if_due(self.clock.monotonic_ms())
        return True
