"""Offsets: commits (sync, async, automatic) and committed offsets (the Java client's
ConsumerCoordinator commit paths).

Commit answers may be read by either thread; what they carry to the application (commit_async
callbacks, interceptors' ``on_commit``) waits in queues here until the application thread runs
it, from ``poll()``, ``commit()`` or ``close()`` (:meth:`OffsetCommitter.invoke_completed_commit_callbacks`).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from kafka.future import Future as KafkaFuture
from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse
from ..structs import OffsetAndMetadata, TopicPartition

from ..attempts import Attempts, counted, partition_name
from ..clock import Timer
from ..error_codes import ErrorCode, error_name
from ..errors import CommitFailedError, ProtocolError, RebalanceInProgressError, RetriableError
from ..member.membership import Membership
from ..member.types import CommitIdentity
from ..network.future import RequestFuture
from ..protocol.apis import ApiKey
from ..protocol.error_table import Action, action_for, error_for
from .subscription import SubscriptionState

log = logging.getLogger("groupclient.consumer")

T = TypeVar("T")
CommitCallback = Callable[[dict[TopicPartition, OffsetAndMetadata], Exception | None], Any]
CommittedOffsets = dict[TopicPartition, OffsetAndMetadata | None]
LAST_BY_NAME = 9  # the newest OffsetCommit/OffsetFetch version that names topics; v10 names them by id


def _topic_named(topic: Any, version: int, names: dict[uuid.UUID, str]) -> str:
    """The name of a topic of an OffsetCommit or OffsetFetch answer: v10 answers by topic id (as
    sent: ``names`` maps them back), older versions by name."""
    if version > LAST_BY_NAME:
        return names.get(topic.topic_id, str(topic.topic_id))
    return str(topic.name)


def _listed(partitions: list[TopicPartition], most: int = 5) -> str:
    """Partition names for a message: the first ``most``, then how many more."""
    names = [partition_name(tp.topic, tp.partition) for tp in partitions[:most]]
    more = len(partitions) - len(names)
    return ", ".join(names) + (f" and {more} more" if more else "")


@dataclass(frozen=True)
class _CompletedCommit:
    callback: CommitCallback | None
    offsets: dict[TopicPartition, OffsetAndMetadata]
    error: Exception | None
    future: KafkaFuture


class OffsetCommitter:
    """The group's committed offsets, for the consumer: committing them and reading them back."""

    def __init__(self, member: Membership, subscription: SubscriptionState, enable_auto_commit: bool,
                 auto_commit_interval_ms: int,
                 on_commit: Callable[[dict[TopicPartition, OffsetAndMetadata]], None] | None = None,
                 on_done: Callable[[float, BaseException | None], None] | None = None) -> None:
        self.member = member
        self.client = member.client
        self.subscription = subscription
        self.enable_auto_commit = enable_auto_commit
        self.auto_commit_interval_ms = auto_commit_interval_ms
        # interceptors' on_commit; successful commits wait here for the application thread
        self.on_commit = on_commit
        # OpenTelemetry: each commit's seconds and error, on the thread completing it (records a
        # histogram only: no application code)
        self._on_done = on_done
        self._succeeded_commits: deque[dict[TopicPartition, OffsetAndMetadata]] = deque()
        self.next_auto_commit_ms = 0
        # async commits not answered yet, in sending order (close() waits for them in turn);
        # either thread removes one when its answer comes, so the list has a lock of its own
        self._in_flight_lock = threading.Lock()
        self._in_flight: list[RequestFuture[None]] = []
        # finished async commits whose callback and future wait for the application thread
        self.completed_commits: deque[_CompletedCommit] = deque()

    # -- commits -------------------------------------------------------------------------
    def send_commit(self, offsets: dict[TopicPartition, OffsetAndMetadata],
                    attempts: Attempts | None = None) -> RequestFuture[None]:
        """Send an OffsetCommit; ``attempts`` (a blocking commit's) hears each partition's error."""
        future = self._send_commit(offsets, attempts)
        if self._on_done is not None:
            on_done, started = self._on_done, time.perf_counter()
            future.add_both(lambda result: on_done(time.perf_counter() - started,
                                                   result if isinstance(result, BaseException) else None))
        return future

    def _send_commit(self, offsets: dict[TopicPartition, OffsetAndMetadata],
                     attempts: Attempts | None) -> RequestFuture[None]:
        identity = self.member.commit_identity()
        if identity is None:
            if self.subscription.is_group_subscribed():
                if self.member.rebalance_in_progress():
                    # a cooperative member keeps consuming while the group rebalances (Java's answer)
                    return RequestFuture.failed_with(RebalanceInProgressError(
                        "the member is rebalancing: commit again once poll() has completed the rebalance"))
                return RequestFuture.failed_with(CommitFailedError(
                    "the member is not in the group; its partitions may have moved"))
            identity = CommitIdentity()  # manual assignment: a "simple" commit
        cfg = self.member.config
        by_topic: dict[str, list[Any]] = {}
        for tp, om in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                partition_index=tp.partition, committed_offset=om.offset,
                committed_leader_epoch=om.leader_epoch if om.leader_epoch is not None else -1,
                committed_metadata=om.metadata or ""))
        ids = self._topic_ids(by_topic)

        def build(version: int) -> Any:
            return OffsetCommitRequest(
                version=version if ids is not None else min(version, LAST_BY_NAME),
                group_id=cfg.group_id, generation_id_or_member_epoch=identity.generation_id_or_member_epoch,
                member_id=identity.member_id, group_instance_id=cfg.group_instance_id, retention_time_ms=-1,
                topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
                    name=t, topic_id=ids[t] if ids is not None else None, partitions=p) for t, p in by_topic.items()])

        future = self.member.send_to_coordinator(OffsetCommitRequest, OffsetCommitResponse, build)
        names = {topic_id: name for name, topic_id in (ids or {}).items()}
        committed: RequestFuture[None] = future.compose(
            lambda r, f: self._handle_commit(r, f, identity, attempts, names, offsets))
        committed.add_errback(self.member.note_failure)  # fatal ones are kept for every poll()
        if self.on_commit is not None:
            # told on the application thread, by invoke_completed_commit_callbacks
            committed.add_callback(lambda _: self._succeeded_commits.append(offsets))
        return committed

    def _topic_ids(self, topics: Collection[str]) -> dict[str, uuid.UUID] | None:
        """Each topic's id, when the metadata knows every one: a request then names topics by id
        (OffsetCommit/OffsetFetch v10), else by name (v9 at most), as Java's
        ``forTopicIdsOrNames``/``forTopicNames``."""
        known = self.client.metadata.snapshot.topic_ids
        ids = {t: known.get(t) for t in topics}
        return None if None in ids.values() else cast("dict[str, uuid.UUID]", ids)

    def _handle_commit(self, response: Any, future: RequestFuture[None], sent: CommitIdentity,
                       attempts: Attempts | None, names: dict[uuid.UUID, str],
                       offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        failed = {TopicPartition(_topic_named(t, response.version, names), p.partition_index): p.error_code
                  for t in response.topics for p in t.partitions if p.error_code}
        if attempts is not None:  # every partition's own error, before the first fails the commit
            for tp, code in failed.items():
                attempts.failed(code, [partition_name(tp.topic, tp.partition)])
        if not failed:
            return future.success(None)
        why = {tp: error_name(code) for tp, code in failed.items()}
        tp, code = next(iter(failed.items()))
        action = action_for(code, ApiKey.OFFSET_COMMIT)
        name = error_name(code)
        if code == ErrorCode.UNKNOWN_TOPIC_ID:
            # the topic was deleted or re-created since the metadata named it: learn its new id
            # before the commit is tried again
            self.client.metadata.request_update()
        if action is Action.REDISCOVER:
            self.member.mark_coordinator_dead(f"OffsetCommit answered {name}")
        elif action is Action.REJOIN:
            self.member.request_rejoin("OffsetCommit: the group is rebalancing")
            return future.failure(RebalanceInProgressError(
                "the group is rebalancing: commit again after the member has rejoined", why))
        elif action in (Action.RESET_MEMBER, Action.RESET_GENERATION):
            self.member.fenced_if_still(sent, f"OffsetCommit answered {name}",
                                        keep_member_id=action is Action.RESET_GENERATION)
            return future.failure(CommitFailedError(
                f"commit failed ({name}): the group rebalanced and the partitions may belong to "
                "another member now; they will be consumed again from the last committed offset", why))
        elif code == ErrorCode.STALE_MEMBER_EPOCH and (refused := self._refused_as_stale(offsets, sent)):
            return future.failure(refused)
        return future.failure(error_for(code, ApiKey.OFFSET_COMMIT, f"OffsetCommit ({partition_name(*tp)})"))

    def _refused_as_stale(self, offsets: dict[TopicPartition, OffsetAndMetadata],
                          sent: CommitIdentity) -> CommitFailedError | None:
        """A commit answered STALE_MEMBER_EPOCH that names a partition this member no longer has:
        it raced the partition's revocation (an async commit sent before the partition was given
        up, answered after the broker moved the member's epoch on).  Kafka 4.3+ (KIP-1251) takes
        a commit at an older epoch only when every partition in it was assigned to the member by
        then, so the whole commit was refused, and it must not be sent again at the new epoch
        (the exact epoch is taken without an ownership check: it could overwrite the new owner's
        commits).  None when every partition is still the member's: sent again at the new epoch."""
        if not self.subscription.is_group_subscribed():
            return None
        gone = sorted(tp for tp in offsets if not self.subscription.is_assigned(tp))
        if not gone:
            return None
        epoch = sent.generation_id_or_member_epoch
        why = {tp: (f"STALE_MEMBER_EPOCH: given up by this member after the commit was sent at epoch {epoch}"
                    if tp in gone else
                    f"STALE_MEMBER_EPOCH: refused with the rest of the commit (sent at epoch {epoch}); "
                    "still this member's, commit it again")
               for tp in sorted(offsets)}
        kept = len(offsets) - len(gone)
        return CommitFailedError(
            f"commit refused (STALE_MEMBER_EPOCH): it was sent at member epoch {epoch}, and "
            f"{_listed(gone)} {'was' if len(gone) == 1 else 'were'} revoked from this member before the broker "
            "read it, so the broker refused the whole commit (KIP-1251); whoever owns them now commits them"
            + (f"; the other {counted(kept, 'partition')} are still this member's: commit them again" if kept else ""),
            why)

    def commit_sync(self, offsets: dict[TopicPartition, OffsetAndMetadata], timer: Timer,
                    warn_waiting: str | None = None) -> None:
        """Commit and wait, retrying what can be retried until the timer ends.  With
        ``warn_waiting`` (who waits, e.g. "close()"), waiting for a coordinator that is gone is
        said once at WARNING."""
        if not offsets:
            return
        attempts = Attempts(f"commit of {counted(len(offsets), 'offset')}", timer,
                            [partition_name(tp.topic, tp.partition) for tp in sorted(offsets)])
        self._until_done(lambda: self.send_commit(offsets, attempts), attempts, warn_waiting)

    def _until_done(self, send: Callable[[], RequestFuture[T]], attempts: Attempts,
                    warn_waiting: str | None = None) -> T:
        """Send to the coordinator and retry retriable failures, with backoff, until the timer
        ends; then a CallTimeoutError that says what each try got."""
        timer = attempts.timer
        while True:
            if warn_waiting is not None and self.member.coordinator_unknown():
                log.warning("%s: the group coordinator is unavailable; waiting up to %d ms for it (the %s)",
                            warn_waiting, timer.remaining_ms(), attempts.operation)
                warn_waiting = None
            if not self.member.ensure_coordinator_ready(timer):
                problem = self.member.coordinator_problem() or "no FindCoordinator answer"
                attempts.failed(f"no group coordinator ({problem})", attempts.subjects or [""])
                raise attempts.timed_out()
            attempts.tried()
            future = send()
            self.client.poll_until(future, timer)
            if future.succeeded():
                return future.value
            if future.is_done():
                exc = future.exception
                assert exc is not None
                if not isinstance(exc, RetriableError):
                    raise exc
                attempts.failed(exc)
            self.client.sleep(self.member.config.retry_backoff_ms, timer)
            if timer.expired():  # no try is sent with no time left for its answer
                raise attempts.timed_out()

    def commit_async(self, offsets: dict[TopicPartition, OffsetAndMetadata],
                     callback: CommitCallback | None) -> KafkaFuture:
        """Send a commit; the future returned (kafka-python's) and ``callback`` are completed on
        the application thread, by :meth:`invoke_completed_commit_callbacks` from a later
        ``poll()``, ``commit()`` or ``close()``, as Java and kafka-python run commit callbacks:
        whichever thread reads the answer, no user code runs there."""
        answer = KafkaFuture()
        future = self.send_commit(offsets) if offsets else RequestFuture.succeeded_with(None)

        def done(result: Any) -> None:
            with self._in_flight_lock:
                self._in_flight.remove(future)
            error = result if isinstance(result, Exception) else None
            if callback is None and error is not None:
                log.warning("group %s: async commit failed: %s", self.member.config.group_id, error)
            self.completed_commits.append(_CompletedCommit(callback, offsets, error, answer))

        with self._in_flight_lock:
            self._in_flight.append(future)
        future.add_both(done)
        return answer

    def in_flight_commits(self) -> list[RequestFuture[None]]:
        """The async commits not answered yet, oldest first."""
        with self._in_flight_lock:
            return list(self._in_flight)

    def invoke_completed_commit_callbacks(self) -> None:
        """On the application thread: interceptors' on_commit, then each finished async commit's
        callback and future, in the order the commits finished."""
        while self._succeeded_commits and self.on_commit is not None:
            self.on_commit(self._succeeded_commits.popleft())
        while self.completed_commits:
            done = self.completed_commits.popleft()
            if done.error is None:
                done.future.success(None)
            else:
                done.future.failure(done.error)
            if done.callback is not None:
                done.callback(done.offsets, done.error)

    def restart_auto_commit_timer(self, now: int) -> None:
        """A new assignment: the next auto-commit is a whole interval away."""
        self.next_auto_commit_ms = now + self.auto_commit_interval_ms

    def maybe_auto_commit(self, now: int) -> None:
        if not self.enable_auto_commit or now < self.next_auto_commit_ms:
            return
        if self.subscription.is_group_subscribed() and self.member.commit_identity() is None:
            return  # rebalancing (a cooperative member consumes meanwhile): commit once it is done
        self.next_auto_commit_ms = now + self.auto_commit_interval_ms
        offsets = self.subscription.consumed_offsets()
        if offsets and not self.member.coordinator_unknown():
            self.commit_async(offsets, None)

    # -- committed offsets -----------------------------------------------------------------
    def fetch_committed(self, partitions: set[TopicPartition], timer: Timer) -> CommittedOffsets:
        cfg = self.member.config
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)

        ids = self._topic_ids(by_topic)

        def build(version: int) -> Any:
            if ids is None:
                version = min(version, LAST_BY_NAME)
            if version >= 8:
                G = OffsetFetchRequest.OffsetFetchRequestGroup
                # v9 (KIP-848): a member with an epoch names itself, and the broker checks the epoch
                member = self.member.offset_fetch_identity()
                return OffsetFetchRequest(version=version, require_stable=True, groups=[G(
                    group_id=cfg.group_id, member_id=member.member_id if member else None,
                    member_epoch=member.generation_id_or_member_epoch if member else -1,
                    topics=[G.OffsetFetchRequestTopics(name=t, topic_id=ids[t] if ids is not None else None,
                                                       partition_indexes=p) for t, p in by_topic.items()])])
            return OffsetFetchRequest(version=version, group_id=cfg.group_id, require_stable=True, topics=[
                OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=p) for t, p in by_topic.items()])

        subjects = [partition_name(tp.topic, tp.partition) for tp in sorted(partitions)]
        attempts = Attempts(f"committed offsets of {counted(len(subjects), 'partition')}", timer, subjects)
        names = {topic_id: name for name, topic_id in (ids or {}).items()}

        def send() -> RequestFuture[CommittedOffsets]:
            future = self.member.send_to_coordinator(OffsetFetchRequest, OffsetFetchResponse, build)
            return future.compose(lambda r, f: self._handle_offset_fetch(r, f, attempts, names)).add_errback(
                self.member.note_failure)

        return self._until_done(send, attempts)

    def _handle_offset_fetch(self, response: Any, future: RequestFuture[CommittedOffsets],
                             attempts: Attempts, names: dict[uuid.UUID, str]) -> None:
        if response.version >= 8:
            if len(response.groups or ()) != 1:
                raise ProtocolError(f"an OffsetFetch answer for one group has {len(response.groups or ())} groups")
            group = response.groups[0]
            error, topics = group.error_code, group.topics
        else:
            error, topics = response.error_code, response.topics

        for t in topics or ():
            for p in t.partitions:
                if p.error_code:
                    name = _topic_named(t, response.version, names)
                    attempts.failed(p.error_code, [partition_name(name, p.partition_index)])
        codes = [error, *(p.error_code for t in topics or () for p in t.partitions)]
        code = next((c for c in codes if c), 0)
        if code:
            # the group's code, else the first partition's: the same table for both (Java's)
            if action_for(code, ApiKey.OFFSET_FETCH) is Action.REDISCOVER:
                self.member.mark_coordinator_dead(f"OffsetFetch answered {error_name(code)}")
            if code == ErrorCode.UNKNOWN_TOPIC_ID:  # deleted or re-created: ask again with its new id
                self.client.metadata.request_update()
            return future.failure(error_for(code, ApiKey.OFFSET_FETCH, "OffsetFetch"))
        result: CommittedOffsets = {}
        for t in topics:
            for p in t.partitions:
                tp = TopicPartition(_topic_named(t, response.version, names), p.partition_index)
                result[tp] = (OffsetAndMetadata(p.committed_offset, p.metadata or "", p.committed_leader_epoch)
                              if p.committed_offset >= 0 else None)
        future.success(result)
