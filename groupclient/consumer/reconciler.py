"""The consumer's part of a consumer-protocol group (KIP-848), on the application thread: taking a
target assignment the broker sent (Java's ``ConsumerMembershipManager.maybeReconcile``).

Each ``poll()`` calls :meth:`Reconciler.reconcile`.  For a new target: resolve its topic ids to
names (what the metadata does not know yet waits for a refresh, the rest goes ahead), commit what
was delivered (enable_auto_commit), give up what the target no longer has
(``on_partitions_revoked`` with exactly those), take the new ones (``on_partitions_assigned``
with exactly those, also when there are none, as Java does), and tell the member, which
acknowledges with a heartbeat at once.  Partitions the heartbeat thread dropped (fenced, poll
timeout, the lease) are told to the listener first, as lost.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from ..clock import Timer
from ..member.consumer_heartbeat_fields import Target, TopicIdPartitions
from ..member.consumer_member import ConsumerGroupMember
from ..network.client import NetworkClient
from ..structs import TopicPartition
from .commits import OffsetCommitter
from .listener import ListenerCalls
from .rebalance_events import RebalanceRecorder
from .subscription import SubscriptionState

log = logging.getLogger("groupclient.consumer")


class Reconciler:
    """Application thread only."""

    def __init__(self, member: ConsumerGroupMember, committer: OffsetCommitter, subscription: SubscriptionState,
                 client: NetworkClient, listener_calls: ListenerCalls, events: RebalanceRecorder,
                 drop_fetched: Callable[[], None]) -> None:
        self.member = member
        self.committer = committer
        self.subscription = subscription
        self.client = client
        self.listener_calls = listener_calls
        self.events = events
        self.drop_fetched = drop_fetched
        # the names of topics once assigned: a topic deleted since is still given up by name
        self._names: dict[uuid.UUID, str] = {}
        # a target reconciled only in part (topic ids the metadata did not name): not again, with
        # its commit and listener calls, on every poll until the metadata names them
        self._partial: tuple[int, frozenset[TopicPartition]] | None = None

    @property
    def group_id(self) -> str:
        return self.member.config.group_id

    def reconcile(self, timer: Timer) -> None:
        """Tell the listener of partitions lost, then reconcile the member's target, if any."""
        self.member.drop_decided_loss()  # one the heartbeat thread decided is dropped before anything
        lost = self.subscription.take_lost()
        if lost:
            self.listener_calls.call("on_partitions_lost", lost)
        target = self.member.target_to_reconcile()
        if target is None:
            return
        assigned, unresolved = self._resolve(target)
        if unresolved:
            self.client.metadata.request_update()
            if (target.version, frozenset(assigned)) == self._partial:
                return  # what can be named is reconciled already: wait for the metadata
            log.info("group %s: the metadata does not name topic ids %s yet; reconciling the rest",
                     self.group_id, sorted(str(t) for t in unresolved))
            self._partial = (target.version, frozenset(assigned))
        started = self.member.clock.monotonic_ms()
        self.events.preparing(self.member.rebalance_timing()[1])  # the event counts from the target's arrival
        epoch = self.subscription.losses()
        owned = self.subscription.assigned()
        revoked, added = owned - assigned, assigned - owned
        self.subscription.fence(revoked)  # before the commit: it covers all that was handed out
        self._commit_before(timer)
        if revoked:
            self.listener_calls.call("on_partitions_revoked", revoked)
            self.subscription.drop_partitions(revoked)
            self.drop_fetched()
        self.events.prepared(started, self.member.clock.monotonic_ms())
        if not self.subscription.apply_group_assignment(assigned, epoch):
            # fenced, or the lease ran out, while reconciling: what was dropped is lost (the next
            # poll tells the listener) and the member has joined again
            log.info("group %s: the partitions were lost while reconciling epoch %d", self.group_id, target.epoch)
            return
        self.listener_calls.call("on_partitions_assigned", added)
        owned_ids: dict[uuid.UUID, frozenset[int]] = {}
        ids = {name: tid for tid, name in self._names.items()}
        for tp in assigned:
            tid = ids[tp.topic]
            owned_ids[tid] = owned_ids.get(tid, frozenset()) | {tp.partition}
        self.member.on_reconciled(target, owned_ids)
        self.committer.restart_auto_commit_timer(self.member.clock.monotonic_ms())
        log.info("group %s epoch %d: assigned %s", self.group_id, target.epoch,
                 sorted(f"{tp.topic}-{tp.partition}" for tp in assigned))
        if not unresolved:
            self._emit(target, assigned, started)
        # the acknowledgement goes now, not at the next interval
        self.member.send_heartbeat_if_due(self.member.clock.monotonic_ms())

    def _resolve(self, target: Target) -> tuple[set[TopicPartition], set[uuid.UUID]]:
        """The target's partitions by name, and the topic ids the metadata does not name yet."""
        metadata = self.client.metadata.snapshot
        assigned: set[TopicPartition] = set()
        unresolved: set[uuid.UUID] = set()
        partitions: TopicIdPartitions = target.partitions
        for topic_id, indexes in partitions.items():
            name = metadata.topic_for_id(topic_id) or self._names.get(topic_id)
            if name is None:
                unresolved.add(topic_id)
                continue
            self._names[topic_id] = name
            assigned |= {TopicPartition(name, p) for p in indexes}
        return assigned, unresolved

    def _commit_before(self, timer: Timer) -> None:
        """Commit what was delivered before the assignment changes (Java commits before every
        reconciliation); a failure is logged: the partitions move either way."""
        if not self.committer.enable_auto_commit:
            return
        offsets = self.subscription.consumed_offsets()
        if not offsets:
            return
        budget = max(0, min(timer.remaining_ms(), self.member.config.rebalance_timeout_ms))
        try:
            self.committer.commit_sync(offsets, Timer(self.member.clock, max(budget, self.member.config.request_timeout_ms)))
        except Exception as exc:
            log.warning("group %s: the commit before reconciling failed: %s", self.group_id, exc)

    def _emit(self, target: Target, assigned: set[TopicPartition], reconciling_since: int) -> None:
        reason, arrived, _ = self.member.rebalance_timing()
        now = self.member.clock.monotonic_ms()
        self.events.emit(self.events.complete(
            self.group_id, self.member.snapshot().member_id, target.epoch, reason, self.member.server_assignor or "broker default",
            "consumer", assigned, arrived, reconciling_since, now, self.member.clock.wall_ms()))
