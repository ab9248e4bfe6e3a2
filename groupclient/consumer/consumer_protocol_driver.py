"""The consumer group protocol's driver (KIP-848): the broker assigns; no join, no assignors, no
leader.  The heartbeat thread keeps the member in the group, and the target assignments its
answers bring are reconciled on the application thread, between the application's records
(:class:`~groupclient.consumer.reconciler.Reconciler`).  Application thread only."""

from __future__ import annotations

import logging
from typing import Any

from ..clock import Timer
from ..member.consumer_heartbeat_fields import Subscribed
from ..member.consumer_member import ConsumerGroupMember
from ..member.coordinator_lookup import CoordinatorLookup
from ..member.types import GroupConfig
from ..protocol.consumer_group_heartbeat import new_member_id
from .assigned import AssignedPartitions
from ..protocol.re2j import compile_re2j
from .broker_regex import broker_regex
from .commits import OffsetCommitter
from .driver_base import DriverBase, GroupParts
from .reconciler import Reconciler
from .subscription import TopicPattern

log = logging.getLogger("groupclient.consumer")


class ConsumerProtocolDriver(DriverBase):
    """A consumer-protocol group's member as ``poll()`` drives it."""

    member: ConsumerGroupMember

    def __init__(self, cfg: dict[str, Any], group: GroupConfig, parts: GroupParts) -> None:
        member = ConsumerGroupMember(
            parts.client, parts.clock, group,
            CoordinatorLookup(parts.client, group.group_id, group.retry_backoff_ms, parts.rng),
            AssignedPartitions(parts.subscription, parts.drop_fetched, group.group_id), new_member_id(parts.rng),
            server_assignor=cfg["group_remote_assignor"], rack_id=cfg["client_rack"], rng=parts.rng)
        committer = OffsetCommitter(member, parts.subscription, cfg["enable_auto_commit"],
                                    cfg["auto_commit_interval_ms"], on_commit=parts.on_commit,
                                    on_done=parts.commit_observer)
        super().__init__(member, committer, parts)
        self.reconciler = Reconciler(member, committer, parts.subscription, parts.client, parts.listener_calls,
                                     parts.events, parts.drop_fetched)

    # -- the subscription ----------------------------------------------------------------------
    def compile_pattern(self, pattern: str) -> TopicPattern:
        """The broker evaluates a pattern, with RE2/J: one it cannot is refused now
        (ConfigurationError), and what this client matches with it (the topics it asks metadata
        of) is matched as the broker matches."""
        return compile_re2j(broker_regex(pattern))

    def subscribed(self, topics: list[str], pattern: str | None, changed: bool) -> None:
        regex = broker_regex(pattern) if pattern is not None else None
        subscribed = Subscribed(() if regex is not None else tuple(sorted(topics)), regex)
        self.member.subscribe(subscribed, f"subscribed to {regex or sorted(topics)}")

    def unsubscribed(self) -> None:
        self.member.subscribe(None, "unsubscribed")

    def enforce_rebalance(self, reason: str) -> None:
        # as Java's: the broker decides every assignment under the consumer protocol
        log.warning("enforce_rebalance() does nothing under group_protocol='consumer': the broker "
                    "assigns the partitions and rebalances when the group changes")

    # -- poll() ------------------------------------------------------------------------------
    def first_assignment_in_place(self) -> bool:
        return self.member.is_stable()

    def _subscribed_step(self, timer: Timer, now: int, applications_poll: bool) -> bool:
        """The coordinator, heartbeats, reconciling the target and auto-commit.  Partitions owned
        stay fetchable throughout: always True."""
        member, committer = self.member, self.committer
        if member.coordinator_unknown() and not member.ensure_coordinator_ready(timer):
            self.reconciler.reconcile(Timer(self.clock, 0))  # the listener still hears of losses
            return True
        self.start_heartbeat_thread()
        member.send_heartbeat_if_due(self.clock.monotonic_ms())
        member.ask_session_timeout(self.clock.monotonic_ms())
        self.reconciler.reconcile(timer)
        committer.maybe_auto_commit(self.clock.monotonic_ms())
        member.send_heartbeat_if_due(self.clock.monotonic_ms())
        return True
