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

from ..assignors.base import PartitionAssignor, RebalanceProtocol, validate_assignment
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
from ..protocol.errors import error_name
from .listener import ListenerCalls
from .subscription import SubscriptionState

log = logging.getLogger("groupclient.consumer")

T = TypeVar("T")
CommitCallback = Callable[[dict[TopicPartition, OffsetAndMetadata], Exception | None], Any]


class ConsumerMembership:
    def __init__(self, subscription: SubscriptionState, assignors: list[PartitionAssignor],
                 listener_calls: ListenerCalls, enable_auto_commit: bool, auto_commit_interval_ms: int) -> None:
        self.subscription = subscription
        self.assignors = assignors
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
        self.completed_commits: deque[tuple[CommitCallback, dict[TopicPartition, OffsetAndMetadata], Exception | None]] = deque()

    @property
    def client(self) -> Transport:
        return self.membership.client

    # -- hooks for GroupMembership ---------------------------------------------------------
    def protocols(self) -> list[tuple[str, bytes]]:
        topics = set(self.subscription.topics)
        owned = sorted(self.subscription.assigned())
        generation = self.membership.current_generation().generation_id
        result = []
        for assignor in self.assignors:
            cooperative = assignor.rebalance_protocol is RebalanceProtocol.COOPERATIVE
            sub = Subscription(sorted(topics), assignor.user_data(topics), owned if cooperative else [], generation)
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
                                                      sub.generation_id, m.group_instance_id)
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
        assignments = assignor.assign(counts, subscriptions)
        validate_assignment(assignor, counts, subscriptions, assignments)
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
        if self.enable_auto_commit and generation.generation_id >= 0:
            if not self._commit_before_rebalance(timer):
                return False
        dropped = self.subscription.take_lost()  # already given up (poll timeout, lost lease)
        lost = bool(dropped) or generation.generation_id < 0
        owned = self.subscription.assigned() | dropped
        protocol = self._protocol_in_use(generation)
        if protocol is RebalanceProtocol.COOPERATIVE and not lost:
            return True  # cooperative members keep their partitions while rejoining (KIP-429)
        self.subscription.set_group_assignment(set())
        self.drop_fetched()
        if owned:
            # lost: others may own them already, so the listener must not commit for them
            self.listener_calls.call("on_partitions_lost" if lost else "on_partitions_revoked", owned)
        return True

    def on_ownership_lost(self, reason: str) -> None:
        lost = self.subscription.mark_lost()
        self.drop_fetched()
        if lost:
            log.warning("group %s: partitions %s are lost: %s", self.membership.config.group_id,
                        sorted(f"{tp.topic}-{tp.partition}" for tp in lost), reason)

    def _protocol_in_use(self, generation: Generation) -> RebalanceProtocol:
        if generation.protocol_name:
            try:
                return self._assignor(generation.protocol_name).rebalance_protocol
            except ValueError:
                pass
        return RebalanceProtocol.EAGER

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

    def on_join_complete(self, generation: Generation, assignment_bytes: bytes) -> None:
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
        owned = self.subscription.assigned()
        protocol = self._protocol_in_use(generation)
        self.subscription.set_group_assignment(partitions)
        try:
            self._assignor(generation.protocol_name or "").on_assignment(assignment, generation.generation_id)
        except ValueError:
            pass
        log.info("group %s generation %d: assigned %s", self.membership.config.group_id,
                 generation.generation_id, sorted(f"{tp.topic}-{tp.partition}" for tp in partitions))
        if protocol is RebalanceProtocol.COOPERATIVE:
            revoked = owned - partitions
            if revoked:
                self.listener_calls.call("on_partitions_revoked", revoked)
                # partitions given up cooperatively are handed out in a follow-up rebalance
                self.membership.request_rejoin("partitions were revoked in a cooperative rebalance")
            self.listener_calls.call("on_partitions_assigned", partitions - owned)
        else:
            self.listener_calls.call("on_partitions_assigned", partitions)
        self.next_auto_commit_ms = self.membership.clock.monotonic_ms() + self.auto_commit_interval_ms

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
                return RequestFuture.failed_with(CommitFailedError(
                    "the member is rebalancing or not in the group; its partitions may have moved"))
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
        return future.compose(lambda r, f: self._handle_commit(r, f, generation))

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
        while self.completed_commits:
            callback, offsets, error = self.completed_commits.popleft()
            callback(offsets, error)

    def maybe_auto_commit(self, now: int) -> None:
        if not self.enable_auto_commit or now < self.next_auto_commit_ms:
            return
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
