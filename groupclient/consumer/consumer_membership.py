"""The consumer's part of group membership (the Java client's ConsumerCoordinator): subscriptions
as JoinGroup metadata, the leader's assignment, on_join_prepare / on_join_complete with the
rebalance listener, and offset commits and fetches."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse
from kafka.structs import OffsetAndMetadata, TopicPartition

from ..assignors.base import ClusterView, PartitionAssignor, RebalanceProtocol, common_protocol, validate_assignment
from ..clock import Timer
from ..errors import (
    CommitFailedError, FatalGroupError, KafkaTimeoutError, ProtocolError, RebalanceInProgressError, RetriableError,
)
from ..member.membership import GroupMembership
from ..member.types import Generation, JoinedMember
from ..network.future import RequestFuture
from ..network.transport import Transport
from ..protocol.apis import ApiKey
from ..protocol.consumer_protocol import (
    Assignment, Subscription, decode_assignment, decode_subscription, encode_assignment, encode_subscription,
)
from ..protocol.error_table import Action, action_for, error_for
from ..error_codes import error_name
from .listener import ListenerCalls
from .rebalance_events import RebalanceRecorder
from .subscription import SubscriptionState

log = logging.getLogger("groupclient.consumer")

T = TypeVar("T")
CommitCallback = Callable[[dict[TopicPartition, OffsetAndMetadata], Exception | None], Any]


class ConsumerMembership:
    def __init__(self, subscription: SubscriptionState, assignors: list[PartitionAssignor],
                 listener_calls: ListenerCalls, enable_auto_commit: bool, auto_commit_interval_ms: int,
                 client_rack: str | None = None) -> None:
        self.subscription = subscription
        self.assignors = assignors
        # EAGER: give every partition up before each rebalance; COOPERATIVE: only those that move
        self.protocol = common_protocol(assignors)
        self.client_rack = client_rack
        self.listener_calls = listener_calls
        self.enable_auto_commit = enable_auto_commit
        self.auto_commit_interval_ms = auto_commit_interval_ms
        self.membership: GroupMembership  # set by the consumer right after construction
        self.drop_fetched: Callable[[], None] = lambda: None  # the consumer's fetch buffer
        self.next_auto_commit_ms = 0
        # the commit sent before a rebalance; the join waits for it across polls (Java's
        # onJoinPrepare), so a short poll() is never held by a slow commit
        self._prepare_commit: RequestFuture[None] | None = None
        self.in_flight_commits: set[RequestFuture[None]] = set()
        self.assigned_snapshot: dict[str, int] | None = None  # leader: partition counts it assigned with
        # what the last JoinGroup said this member owns: a cooperative leader holds back those
        # it moves elsewhere until this member rejoins without them
        self._claimed: set[TopicPartition] = set()
        # interceptors' on_commit; successful commits wait here for the application thread
        self.on_commit: Callable[[dict[TopicPartition, OffsetAndMetadata]], None] | None = None
        self._succeeded_commits: deque[dict[TopicPartition, OffsetAndMetadata]] = deque()
        self.events = RebalanceRecorder()
        listener_calls.observer = self.events.listener_called
        self.completed_commits: deque[tuple[CommitCallback, dict[TopicPartition, OffsetAndMetadata], Exception | None]] = deque()

    @property
    def client(self) -> Transport:
        return self.membership.client

    # -- hooks for GroupMembership ---------------------------------------------------------
    def protocols(self) -> list[tuple[str, bytes]]:
        topics = set(self.subscription.topics)
        # what this member owns now: nothing under EAGER (on_join_prepare gave it all up)
        owned = sorted(self.subscription.assigned())
        self._claimed = set(owned)
        generation = self.membership.current_generation().generation_id
        result = []
        for assignor in self.assignors:
            sub = Subscription(sorted(topics), assignor.subscription_user_data(topics), owned, generation,
                               rack_id=self.client_rack)
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
        metadata = self.client.metadata
        counts = {t: len(p) for t in group_topics if (p := metadata.partitions_for_topic(t))}
        missing = group_topics - set(counts)
        if missing:
            # assign what is known; once metadata has the rest the leader rejoins (see poll)
            log.info("group %s: no metadata yet for %s; assigning without them", self.membership.config.group_id,
                     sorted(missing))
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
        metadata = self.client.metadata
        self.assigned_snapshot = {t: len(p) if (p := metadata.partitions_for_topic(t)) else -1 for t in group_topics}

    def on_join_prepare(self, generation: Generation, timer: Timer) -> bool:
        clock = self.membership.clock
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
        if self.enable_auto_commit and generation.generation_id >= 0:
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
        self.subscription.set_group_assignment(set())
        self.drop_fetched()
        if owned and lost:
            # lost: others may own them already, so the listener must not commit for them
            self.listener_calls.call("on_partitions_lost", owned)
        else:
            # before every eager join, also with nothing owned (the first join), as kafka-python does
            self.listener_calls.call("on_partitions_revoked", owned)
        if dropped - owned:
            self.listener_calls.call("on_partitions_lost", dropped - owned)
        return True

    def owns_partitions(self) -> bool:
        return bool(self.subscription.assigned())

    def on_ownership_lost(self, reason: str) -> None:
        lost = self.subscription.mark_lost()
        self.drop_fetched()
        if lost:
            log.warning("group %s: partitions %s are lost: %s", self.membership.config.group_id,
                        sorted(f"{tp.topic}-{tp.partition}" for tp in lost), reason)

    def _commit_before_rebalance(self, timer: Timer) -> bool:
        """Commit what the application was given before giving partitions up; True once done
        (or failed: the partitions are given up either way), False while it is still on its way."""
        future = self._prepare_commit
        if future is None:
            offsets = self.subscription.consumed_offsets()
            if not offsets:
                return True
            if not self.membership.ensure_coordinator_ready(timer):
                return False
            future = self._prepare_commit = self._send_commit(offsets)
        self.client.poll_until(future, timer)
        if not future.is_done():
            return False
        self._prepare_commit = None
        if future.failed():
            log.warning("group %s: auto-commit before rebalance failed: %s", self.membership.config.group_id,
                        future.exception)
        return True

    def ownership_epoch(self) -> int:
        return self.subscription.losses()

    def on_join_complete(self, generation: Generation, assignment_bytes: bytes, epoch: int) -> bool:
        try:
            assignment = decode_assignment(assignment_bytes)
        except Exception as exc:
            raise ProtocolError(f"the group leader's assignment for generation {generation.generation_id} "
                                f"cannot be read ({exc!r}); rejoining") from exc
        partitions = set(assignment.partitions)
        unexpected = {tp for tp in partitions if tp.topic not in self.subscription.topics}
        if unexpected:
            self.membership.request_rejoin(f"the assignment has partitions this member did not subscribe to: "
                                           f"{sorted(unexpected)}")
        # taken away while rejoining (the lease ran out): the listener hears before the new ones
        lost = self.subscription.take_lost()
        if lost:
            self.listener_calls.call("on_partitions_lost", lost)
        owned = self.subscription.assigned()
        revoked = owned - partitions
        if revoked:
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
            self.membership.request_rejoin("the partitions were lost while the assignment was applied")
            return False
        if revoked:
            self.drop_fetched()
        assignor = next((a for a in self.assignors if a.name == generation.protocol_name), None)
        if assignor is not None:
            try:
                assignor.on_assignment(assignment, generation.generation_id)
            except Exception as exc:
                log.error("assignor %r failed in on_assignment: %r", assignor.name, exc)
        log.info("group %s generation %d: assigned %s", self.membership.config.group_id,
                 generation.generation_id, sorted(f"{tp.topic}-{tp.partition}" for tp in partitions))
        if self.protocol is RebalanceProtocol.COOPERATIVE:
            self.listener_calls.call("on_partitions_assigned", partitions - owned)
            handed_back = revoked | (self._claimed - partitions)
            if handed_back:
                # also when they were dropped already (lost lease): the leader held them back for
                # this member's claim, and only a rejoin without them frees them
                self.membership.request_rejoin(f"{len(handed_back)} partitions were revoked in a cooperative "
                                               "rebalance; rejoining so that they are handed on")
        else:
            self.listener_calls.call("on_partitions_assigned", partitions)
        now = self.membership.clock.monotonic_ms()
        self.next_auto_commit_ms = now + self.auto_commit_interval_ms
        reason, join_started, sync_sent = self.membership.rebalance_timing()
        self.events.emit(self.events.complete(
            self.membership.config.group_id, generation.member_id, generation.generation_id, reason,
            generation.protocol_name or "", self.protocol.value, partitions, join_started, sync_sent, now))
        return True

    def _commit_revoked(self, generation: Generation, revoked: set[TopicPartition]) -> None:
        if not self.enable_auto_commit:
            return
        offsets = {tp: om for tp, om in self.subscription.consumed_offsets().items() if tp in revoked}
        if not offsets:
            return
        try:
            self.commit_sync(offsets, Timer(self.membership.clock, self.membership.config.request_timeout_ms))
        except Exception as exc:  # the partitions are given up either way
            log.warning("group %s generation %d: commit of revoked partitions failed: %s",
                        self.membership.config.group_id, generation.generation_id, exc)

    def metadata_changed_since_assignment(self) -> bool:
        """The leader assigned with partition counts that no longer hold (new topic, more partitions)."""
        if self.assigned_snapshot is None:
            return False
        metadata = self.client.metadata
        for topic, count in self.assigned_snapshot.items():
            now = metadata.partitions_for_topic(topic)
            if (len(now) if now else -1) != count:
                return True
        return False

    # -- commits -------------------------------------------------------------------------
    def _send_commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> RequestFuture[None]:
        generation = self.membership.generation_if_stable()
        if generation is None:
            if self.subscription.is_group_subscribed():
                if self.membership.rebalance_in_progress():
                    # a cooperative member keeps consuming while the group rebalances (Java's answer)
                    return RequestFuture.failed_with(RebalanceInProgressError(
                        "the member is rebalancing: commit again once poll() has completed the rebalance"))
                return RequestFuture.failed_with(CommitFailedError(
                    "the member is not in the group; its partitions may have moved"))
            generation = Generation()  # manual assignment: a "simple" commit
        cfg = self.membership.config
        by_topic: dict[str, list[Any]] = {}
        for tp, om in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                partition_index=tp.partition, committed_offset=om.offset,
                committed_leader_epoch=om.leader_epoch if om.leader_epoch is not None else -1,
                committed_metadata=om.metadata or ""))

        def build(version: int) -> Any:
            return OffsetCommitRequest(
                version=version, group_id=cfg.group_id, generation_id_or_member_epoch=generation.generation_id,
                member_id=generation.member_id, group_instance_id=cfg.group_instance_id, retention_time_ms=-1,
                topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=p) for t, p in by_topic.items()])

        future = self.membership.send_to_coordinator(OffsetCommitRequest, OffsetCommitResponse, build)
        committed: RequestFuture[None] = future.compose(lambda r, f: self._handle_commit(r, f, generation))
        if self.on_commit is not None:
            # told on the application thread, by invoke_completed_commit_callbacks
            committed.add_callback(lambda _: self._succeeded_commits.append(offsets))
        return committed

    def _handle_commit(self, response: Any, future: RequestFuture[None], sent: Generation) -> None:
        for topic in response.topics:
            for p in topic.partitions:
                code = p.error_code
                if not code:
                    continue
                action = action_for(code, ApiKey.OFFSET_COMMIT)
                name = error_name(code)
                if action is Action.REDISCOVER:
                    self.membership.mark_coordinator_dead(f"OffsetCommit answered {name}")
                elif action is Action.REJOIN:
                    self.membership.request_rejoin("OffsetCommit: the group is rebalancing")
                    return future.failure(RebalanceInProgressError(
                        "the group is rebalancing: commit again after the member has rejoined"))
                elif action in (Action.RESET_MEMBER, Action.RESET_GENERATION):
                    self.membership.reset_generation_if(sent, f"OffsetCommit answered {name}",
                                                        keep_member_id=action is Action.RESET_GENERATION)
                    return future.failure(CommitFailedError(
                        f"commit failed ({name}): the group rebalanced and the partitions may belong to "
                        "another member now; they will be consumed again from the last committed offset"))
                error = error_for(code, ApiKey.OFFSET_COMMIT, "OffsetCommit")
                if isinstance(error, FatalGroupError):
                    self.membership.set_fatal(error)
                return future.failure(error)
        future.success(None)

    def commit_sync(self, offsets: dict[TopicPartition, OffsetAndMetadata], timer: Timer) -> None:
        if not offsets:
            return
        self._until_done(lambda: self._send_commit(offsets), timer, f"commit of {len(offsets)} offsets")

    def _until_done(self, send: Callable[[], RequestFuture[T]], timer: Timer, what: str) -> T:
        """Send to the coordinator and retry retriable failures, with backoff, until the timer ends."""
        while True:
            if not self.membership.ensure_coordinator_ready(timer):
                raise KafkaTimeoutError(f"{what}: no group coordinator found in time")
            future = send()
            self.client.poll_until(future, timer)
            if future.succeeded():
                return future.value
            if future.is_done():
                exc = future.exception
                assert exc is not None
                if not isinstance(exc, RetriableError):
                    raise exc
            if timer.expired():
                raise KafkaTimeoutError(f"{what} did not finish in time")
            self.client.sleep(self.membership.config.retry_backoff_ms, timer)

    def commit_async(self, offsets: dict[TopicPartition, OffsetAndMetadata], callback: CommitCallback | None) -> RequestFuture[None]:
        future = self._send_commit(offsets) if offsets else RequestFuture.succeeded_with(None)

        def done(result: Any) -> None:
            error = result if isinstance(result, Exception) else None
            if callback is not None:
                # user callbacks run from poll() on the application thread, never here
                self.completed_commits.append((callback, offsets, error))
            elif error is not None:
                log.warning("group %s: async commit failed: %s", self.membership.config.group_id, error)

        self.in_flight_commits.add(future)
        future.add_both(lambda _: self.in_flight_commits.discard(future))
        future.add_both(done)
        return future

    def invoke_completed_commit_callbacks(self) -> None:
        """On the application thread: interceptors' on_commit, then commit_async callbacks."""
        while self._succeeded_commits and self.on_commit is not None:
            self.on_commit(self._succeeded_commits.popleft())
        while self.completed_commits:
            callback, offsets, error = self.completed_commits.popleft()
            callback(offsets, error)

    def maybe_auto_commit(self, now: int) -> None:
        if not self.enable_auto_commit or now < self.next_auto_commit_ms:
            return
        if self.subscription.is_group_subscribed() and self.membership.generation_if_stable() is None:
            return  # rebalancing (a cooperative member consumes meanwhile): commit once it is done
        self.next_auto_commit_ms = now + self.auto_commit_interval_ms
        offsets = self.subscription.consumed_offsets()
        if offsets and not self.membership.coordinator_unknown():
            self.commit_async(offsets, None)

    # -- committed offsets -----------------------------------------------------------------
    def fetch_committed(self, partitions: set[TopicPartition], timer: Timer) -> dict[TopicPartition, OffsetAndMetadata | None]:
        cfg = self.membership.config
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        def build(version: int) -> Any:
            if version >= 8:
                G = OffsetFetchRequest.OffsetFetchRequestGroup
                return OffsetFetchRequest(version=version, require_stable=True, groups=[G(
                    group_id=cfg.group_id, topics=[G.OffsetFetchRequestTopics(name=t, partition_indexes=p)
                                                   for t, p in by_topic.items()])])
            return OffsetFetchRequest(version=version, group_id=cfg.group_id, require_stable=True, topics=[
                OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=p) for t, p in by_topic.items()])

        def send() -> RequestFuture[dict[TopicPartition, OffsetAndMetadata | None]]:
            future = self.membership.send_to_coordinator(OffsetFetchRequest, OffsetFetchResponse, build)
            return future.compose(self._handle_offset_fetch)

        return self._until_done(send, timer, "fetching committed offsets")

    def _handle_offset_fetch(self, response: Any, future: RequestFuture[dict[TopicPartition, OffsetAndMetadata | None]]) -> None:
        if response.version >= 8:
            group = response.groups[0]
            error, topics = group.error_code, group.topics
        else:
            error, topics = response.error_code, response.topics
        if error:
            if action_for(error, ApiKey.OFFSET_FETCH) is Action.REDISCOVER:
                self.membership.mark_coordinator_dead(f"OffsetFetch answered {error_name(error)}")
            return future.failure(error_for(error, ApiKey.OFFSET_FETCH, "OffsetFetch"))
        result: dict[TopicPartition, OffsetAndMetadata | None] = {}
        for t in topics:
            for p in t.partitions:
                if p.error_code:
                    return future.failure(error_for(p.error_code, ApiKey.OFFSET_FETCH, "OffsetFetch"))
                tp = TopicPartition(t.name, p.partition_index)
                result[tp] = (OffsetAndMetadata(p.committed_offset, p.metadata or "", p.committed_leader_epoch)
                              if p.committed_offset >= 0 else None)
        future.success(result)
