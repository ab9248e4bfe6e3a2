"""What the consumer adds to a join (the Java client's ConsumerCoordinator overrides): its
subscription as JoinGroup metadata, the leader's assignment, giving partitions up before a join
and taking the new ones after it, with the rebalance listener.

Everything here runs on the application thread, inside ``poll()`` (called by
:class:`~groupclient.member.join.GroupJoin`); the listener, the assignor and the rebalance events
never run anywhere else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..structs import TopicPartition

from ..assignors.base import ClusterView, PartitionAssignor, RebalanceProtocol, validate_assignment
from ..clock import Timer
from ..errors import ProtocolError
from ..member.group_member import GroupMember
from ..member.types import Generation, JoinedMember
from ..network.future import RequestFuture
from ..protocol.consumer_protocol import (
    Assignment, Subscription, decode_assignment, decode_subscription, encode_assignment, encode_subscription,
)
from .commits import OffsetCommitter
from .listener import ListenerCalls
from .rebalance_events import RebalanceRecorder
from .subscription import SubscriptionState

log = logging.getLogger("groupclient.consumer")


class ConsumerGroupHooks:
    """The consumer's :class:`~groupclient.member.types.RebalanceHooks` (application thread only)."""

    def __init__(self, member: GroupMember, committer: OffsetCommitter, subscription: SubscriptionState,
                 assignors: list[PartitionAssignor], protocol: RebalanceProtocol, listener_calls: ListenerCalls,
                 events: RebalanceRecorder, drop_fetched: Callable[[], None], client_rack: str | None = None) -> None:
        self.member = member
        self.client = member.client
        self.committer = committer
        self.subscription = subscription
        self.assignors = assignors
        # EAGER: give every partition up before each rebalance; COOPERATIVE: only those that move
        self.protocol = protocol
        self.listener_calls = listener_calls
        self.events = events
        self.drop_fetched = drop_fetched  # the consumer's fetch buffer
        self.client_rack = client_rack
        # the commit sent before a rebalance; the join waits for it across polls (Java's
        # onJoinPrepare), so a short poll() is never held by a slow commit
        self._prepare_commit: RequestFuture[None] | None = None
        self.assigned_snapshot: dict[str, int] | None = None  # leader: partition counts it assigned with
        # what the last JoinGroup said this member owns: a cooperative leader holds back those
        # it moves elsewhere until this member rejoins without them
        self._claimed: set[TopicPartition] = set()

    @property
    def group_id(self) -> str:
        return self.member.config.group_id

    # -- the JoinGroup ---------------------------------------------------------------------
    def protocols(self, generation: Generation) -> list[tuple[str, bytes]]:
        topics = set(self.subscription.topics)
        # what this member owns now: nothing under EAGER (on_join_prepare gave it all up)
        owned = sorted(self.subscription.assigned())
        self._claimed = set(owned)
        result = []
        for assignor in self.assignors:
            sub = Subscription(sorted(topics), assignor.subscription_user_data(topics), owned,
                               generation.generation_id, rack_id=self.client_rack)
            result.append((assignor.name, encode_subscription(sub)))
        return result

    def _assignor(self, name: str) -> PartitionAssignor:
        for assignor in self.assignors:
            if assignor.name == name:
                return assignor
        raise ValueError(f"the coordinator chose protocol {name!r}, which this member did not offer")

    def perform_assignment(self, leader_id: str, protocol: str, members: list[JoinedMember]) -> dict[str, bytes]:
        assignor = self._assignor(protocol)
        subscriptions = {}
        for m in members:
            sub = decode_subscription(m.metadata)
            subscriptions[m.member_id] = Subscription(sub.topics, sub.user_data, sub.owned_partitions,
                                                      sub.generation_id, m.group_instance_id, sub.rack_id)
        group_topics = {t for s in subscriptions.values() for t in s.topics}
        self.subscription.group_topics = group_topics
        metadata = self.client.metadata.snapshot  # one view: counts and racks of the same answer
        counts = {t: len(p) for t in group_topics if (p := metadata.partitions_for_topic(t))}
        missing = group_topics - set(counts)
        if missing:
            # assign what is known; once metadata has the rest the leader rejoins (see poll)
            log.info("group %s: no metadata yet for %s; assigning without them", self.group_id, sorted(missing))
            self.client.set_topics(self.subscription.topics | group_topics)
            self.client.metadata.request_update()
        racks: dict[str, list[frozenset[str]]] = {}
        if any(sub.rack_id for sub in subscriptions.values()):
            racks = {t: r for t in counts if (r := metadata.partition_racks(t)) is not None}
        cluster = ClusterView(counts, racks)
        assignments = assignor.assign(cluster, subscriptions)
        validate_assignment(assignor, cluster, subscriptions, assignments, self.protocol)
        self.assigned_snapshot = {t: counts.get(t, -1) for t in group_topics}
        return {m: encode_assignment(assignments.get(m, Assignment([]))) for m in subscriptions}

    def watch_group(self, protocol: str, members: list[JoinedMember]) -> None:
        """A static leader told to skip the assignment still watches the group's topics, so that
        a partition count change still triggers a rebalance."""
        group_topics = {t for m in members for t in decode_subscription(m.metadata).topics}
        self.subscription.group_topics = group_topics
        self.client.set_topics(self.subscription.topics | group_topics)
        metadata = self.client.metadata.snapshot
        self.assigned_snapshot = {t: len(p) if (p := metadata.partitions_for_topic(t)) else -1 for t in group_topics}

    def metadata_changed_since_assignment(self) -> bool:
        """The leader assigned with partition counts that no longer hold (new topic, more partitions)."""
        if self.assigned_snapshot is None:
            return False
        metadata = self.client.metadata.snapshot
        for topic, count in self.assigned_snapshot.items():
            now = metadata.partitions_for_topic(topic)
            if (len(now) if now else -1) != count:
                return True
        return False

    # -- before the join -----------------------------------------------------------------------
    def on_join_prepare(self, generation: Generation, timer: Timer) -> bool:
        clock = self.member.clock
        started = clock.monotonic_ms()
        self.events.preparing(started)
        try:
            return self._prepare_join(generation, timer)
        finally:
            self.events.prepared(started, clock.monotonic_ms())

    def _prepare_join(self, generation: Generation, timer: Timer) -> bool:
        """Before a JoinGroup (Java's onJoinPrepare): commit what the application was given, then
        give partitions up: all of them under EAGER; under COOPERATIVE only those of topics no
        longer subscribed, unless the generation was lost, when all of them are lost."""
        # what this join gives up is fenced before the commit, so that the commit covers all
        # that was handed out of it (groupclient.aio hands records out while the listener runs)
        owned_before = self.subscription.assigned()
        if self.protocol is RebalanceProtocol.COOPERATIVE and generation.generation_id >= 0:
            self.subscription.fence({tp for tp in owned_before if tp.topic not in self.subscription.topics})
        else:
            self.subscription.fence(owned_before)
        if self.committer.enable_auto_commit and generation.generation_id >= 0:
            if not self._commit_before_rebalance(timer):
                return False
        dropped = self.subscription.take_lost()  # already given up (poll timeout, lost lease)
        lost = bool(dropped) or generation.generation_id < 0
        owned = self.subscription.assigned()
        if self.protocol is RebalanceProtocol.COOPERATIVE and not lost:
            # cooperative members keep their partitions while rejoining (KIP-429), except those
            # of topics they stopped subscribing to
            gone = {tp for tp in owned if tp.topic not in self.subscription.topics}
            if gone:
                self.listener_calls.call("on_partitions_revoked", gone)
                # not "set owned - gone": the heartbeat thread may have dropped everything since
                self.subscription.drop_partitions(gone)
                self.drop_fetched()
            return True
        # the listener first, as Java's onJoinPrepare: the partitions are still owned while it runs,
        # so it can ask their positions and commit what was consumed of them
        if owned and lost:
            # lost: others may own them already, so the listener must not commit for them
            self.listener_calls.call("on_partitions_lost", owned)
        else:
            # before every eager join, also with nothing owned (the first join), as kafka-python does
            self.listener_calls.call("on_partitions_revoked", owned)
        self.subscription.set_group_assignment(set())
        self.drop_fetched()
        if dropped - owned:
            self.listener_calls.call("on_partitions_lost", dropped - owned)
        return True

    def tell_losses(self) -> None:
        """The listener's ``on_partitions_lost`` for what the heartbeat thread gave up (the lease
        ran out, poll() was late) and no one has told it of yet; on the application thread."""
        lost = self.subscription.take_lost()
        if lost:
            self.listener_calls.call("on_partitions_lost", lost)

    def _commit_before_rebalance(self, timer: Timer) -> bool:
        """Commit what the application was given before giving partitions up; True once done
        (or failed: the partitions are given up either way), False while it is still on its way."""
        future = self._prepare_commit
        if future is None:
            offsets = self.subscription.consumed_offsets()
            if not offsets:
                return True
            if not self.member.ensure_coordinator_ready(timer):
                return False
            future = self._prepare_commit = self.committer.send_commit(offsets)
        self.client.poll_until(future, timer)
        if not future.is_done():
            return False
        self._prepare_commit = None
        if future.failed():
            log.warning("group %s: auto-commit before rebalance failed: %s", self.group_id, future.exception)
        return True

    # -- after the join -------------------------------------------------------------------------
    def on_join_complete(self, generation: Generation, assignment_bytes: bytes, epoch: int) -> bool:
        try:
            assignment = decode_assignment(assignment_bytes)
        except Exception as exc:
            raise ProtocolError(f"the group leader's assignment for generation {generation.generation_id} "
                                f"cannot be read ({exc!r}); rejoining") from exc
        partitions = set(assignment.partitions)
        unexpected = {tp for tp in partitions if tp.topic not in self.subscription.topics}
        if unexpected:
            self.member.request_rejoin(f"the assignment has partitions this member did not subscribe to: "
                                       f"{sorted(unexpected)}")
        # taken away while rejoining (the lease ran out): the listener hears before the new ones
        self.tell_losses()
        owned = self.subscription.assigned()
        revoked = owned - partitions
        if revoked:
            self.subscription.fence(revoked)
            # COOPERATIVE: the new generation gives these to nobody yet, so what the application
            # was given of them since the commit before the join (it went on consuming) is
            # committed now, and the listener may still commit for them; they are dropped right
            # after and handed on in a follow-up rebalance
            self._commit_revoked(generation, revoked)
            self.listener_calls.call("on_partitions_revoked", revoked)
        if not self.subscription.apply_group_assignment(partitions, epoch):
            # the heartbeat thread dropped the partitions while this assignment was being applied
            # (a fenced generation, a lost lease): it may be void, so it is not used; the
            # listener hears of the loss and the member joins again (on_ownership_lost, which
            # did the drop, also dropped what was fetched)
            self.member.request_rejoin("the partitions were lost while the assignment was applied")
            return False
        if revoked:
            self.drop_fetched()
        assignor = next((a for a in self.assignors if a.name == generation.protocol_name), None)
        if assignor is not None:
            try:
                assignor.on_assignment(assignment, generation.generation_id)
            except Exception as exc:
                log.error("assignor %r failed in on_assignment: %r", assignor.name, exc)
        log.info("group %s generation %d: assigned %s", self.group_id, generation.generation_id,
                 sorted(f"{tp.topic}-{tp.partition}" for tp in partitions))
        if self.protocol is RebalanceProtocol.COOPERATIVE:
            self.listener_calls.call("on_partitions_assigned", partitions - owned)
            handed_back = revoked | (self._claimed - partitions)
            if handed_back:
                # also when they were dropped already (lost lease): the leader held them back for
                # this member's claim, and only a rejoin without them frees them
                self.member.request_rejoin(f"{len(handed_back)} partitions were revoked in a cooperative "
                                           "rebalance; rejoining so that they are handed on")
        else:
            self.listener_calls.call("on_partitions_assigned", partitions)
        now = self.member.clock.monotonic_ms()
        self.committer.restart_auto_commit_timer(now)
        reason, join_started, sync_sent = self.member.rebalance_timing()
        self.events.emit(self.events.complete(
            self.group_id, generation.member_id, generation.generation_id, reason,
            generation.protocol_name or "", self.protocol.value, partitions, join_started, sync_sent, now,
            self.member.clock.wall_ms()))
        return True

    def _commit_revoked(self, generation: Generation, revoked: set[TopicPartition]) -> None:
        if not self.committer.enable_auto_commit:
            return
        offsets = {tp: om for tp, om in self.subscription.consumed_offsets().items() if tp in revoked}
        if not offsets:
            return
        try:
            self.committer.commit_sync(offsets, Timer(self.member.clock, self.member.config.request_timeout_ms))
        except Exception as exc:  # the partitions are given up either way
            log.warning("group %s generation %d: commit of revoked partitions failed: %s",
                        self.group_id, generation.generation_id, exc)
