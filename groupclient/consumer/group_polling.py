"""GroupConsumer's group step of ``poll()``: metadata, the member's lease, coordinator and join,
auto-commit, heartbeats; and consuming without a group.  A mixin of :class:`GroupConsumer`, kept
apart so the facade's file stays about the API; runs on the application thread only."""

from __future__ import annotations

import dataclasses
import logging

from ..structs import TopicPartition

from ..assignors.base import RebalanceProtocol
from ..clock import Timer
from ..member.consumer_member import ConsumerGroupMember
from ..member.heartbeat_thread import HeartbeatThread
from ..protocol.apis import ApiKey
from ..protocol.error_table import error_for
from .commits import OffsetCommitter
from .parts import ConsumerParts
from .reconciler import Reconciler
from .subscription import SubscriptionType

log = logging.getLogger("groupclient.consumer")


class GroupPolling(ConsumerParts):
    # False for groupclient.aio's consumer: its thread polls (fetches, and keeps the group between
    # them, :meth:`_keep_group`) whether or not the application asks for records, so only
    # ``AnyThreadAccess.note_application_poll`` (getmany()/getone()) starts max_poll_interval_ms again
    _polls_are_the_applications: bool = True
    _group_polled_at: int | None = None  # when _poll_group last ran (monotonic ms): a fetch's poll counts

    def _serve_asyncio(self) -> None:
        """groupclient.aio's consumer, told so on its thread before it first polls: its polls
        are the consumer thread's (see above), and its records are made as aiokafka's are
        (deserializers called with None for a missing key or value, headers a tuple)."""
        self._polls_are_the_applications = False
        self._fetcher.config = dataclasses.replace(self._fetcher.config, aiokafka_records=True)

    def _keep_group(self, wait_ms: int) -> bool:
        """groupclient.aio: one turn of the consumer thread between the application's calls:
        what ``poll()`` does for the group (metadata, coordinator, joins and rebalances with their
        listener calls, auto-commit), positions looked up and fetches sent (no record is drained),
        then a wait for network events of up to ``wait_ms`` that another thread's send or
        ``NetworkClient.interrupt()`` ends at once.  The group step is left out when a poll (a
        fetch's) made it less than ``wait_ms`` ago: between two fetches of a busy consumer the
        turn only reads the network.  Raises what the next ``poll()`` would raise (a listener's
        error, a fatal group error).  True once the subscription's first assignment is in place:
        the member is stable, or, without a group, the partitions are known."""
        with self._ownership.acquired():
            self._ensure_open()
            timer = Timer(self._clock, wait_ms)
            subscribed = self._subscription.type is not SubscriptionType.NONE
            polled_at = self._group_polled_at
            if subscribed and (polled_at is None or self._clock.monotonic_ms() - polled_at >= wait_ms):
                self._raise_pending()
                ready = self._poll_group(timer)
                self._raise_pending()
                if ready and self._positions_known_in_time(timer):
                    self._fetcher.send_fetches()
            elif self._committer is not None:
                self._committer.invoke_completed_commit_callbacks()
            self._client.poll_until(None, timer, wakeup=False)
            return subscribed and self._first_assignment_in_place()

    def _first_assignment_in_place(self) -> bool:
        member = self._member
        if member is None or not self._subscription.is_group_subscribed():
            return self._topic_metadata_known()
        return member.is_stable() and (self._join is None or not self._join.needed_or_pending())

    def _poll_group(self, timer: Timer) -> bool:
        """Metadata, group membership, auto-commit; True when partitions can be fetched."""
        self._group_polled_at = self._clock.monotonic_ms()
        self._client.maybe_update_metadata()
        self._raise_metadata_errors()
        committer, hooks, member, join = self._committer, self._hooks, self._member, self._join
        if committer is not None:
            committer.invoke_completed_commit_callbacks()
        if member is None and self._subscription.is_group_subscribed():
            return self._assign_all_partitions(timer)
        if isinstance(member, ConsumerGroupMember) and committer is not None and self._reconciler is not None:
            if self._subscription.is_group_subscribed():
                return self._poll_consumer_group(member, committer, self._reconciler, timer)
            committer.maybe_auto_commit(self._clock.monotonic_ms())
            return True
        if (committer is None or hooks is None or member is None or join is None
                or not self._subscription.is_group_subscribed()):
            if committer is not None:
                committer.maybe_auto_commit(self._clock.monotonic_ms())
            return True
        now = self._clock.monotonic_ms()
        # every turn of the poll loop counts as polling (Java's pollHeartbeat), so one long
        # poll() on an idle topic never looks like an application that stopped polling
        if self._polls_are_the_applications:
            member.poll_heartbeat(now)
        # a member that was frozen past its lease lets go before it hands out another record
        member.check_lease(now)
        metadata = self._client.metadata.snapshot
        if self._subscription.pattern is not None and metadata.version:
            if self._subscription.match_pattern(metadata.topics()):
                member.request_rejoin(f"the pattern now matches {sorted(self._subscription.topics)}")
        if not self._wait_for_topic_metadata(timer):
            return False
        if hooks.metadata_changed_since_assignment():
            hooks.assigned_snapshot = None
            member.request_rejoin("partition metadata changed since the last assignment")
        if member.coordinator_unknown() and not member.ensure_coordinator_ready(timer):
            # Java's ConsumerCoordinator.poll looks the coordinator up on every poll; meanwhile a
            # stable member goes on fetching what it owns (its lease, checked above, says until when)
            return member.is_stable() and not join.needed_or_pending()
        # started before the first join, as Java does: a member waiting for its assignment
        # heartbeats too, and reads answers while the application is away
        self._start_heartbeat_thread()
        if join.needed_or_pending():
            if not self._polls_are_the_applications and member.poll_timed_out(now):
                # left for not polling in time (groupclient.aio): it joins again when the
                # application asks for records, not on the consumer thread's own
                return False
            if hooks.protocol is RebalanceProtocol.COOPERATIVE and self._subscription.assigned():
                # KIP-429: a cooperative member goes on consuming what it owns while the group
                # rebalances; the join advances a step per turn of the poll loop
                join.join_group_if_needed(Timer(self._clock, 0))
            elif not join.join_group_if_needed(timer):
                return False
        committer.maybe_auto_commit(self._clock.monotonic_ms())
        member.send_heartbeat_if_due(self._clock.monotonic_ms())
        return True

    def _poll_consumer_group(self, member: ConsumerGroupMember, committer: OffsetCommitter, reconciler: Reconciler,
                             timer: Timer) -> bool:
        """The consumer protocol's step (KIP-848): no join to wait for; the heartbeat thread keeps
        the member in the group, and the target assignments its answers bring are reconciled here,
        between the application's records.  Partitions owned stay fetchable throughout."""
        now = self._clock.monotonic_ms()
        if self._polls_are_the_applications:
            member.poll_heartbeat(now)  # restarts the poll timer; a member that left for not polling rejoins
        member.check_lease(now)
        if member.coordinator_unknown() and not member.ensure_coordinator_ready(timer):
            reconciler.reconcile(Timer(self._clock, 0))  # the listener still hears of losses
            return True
        self._start_heartbeat_thread()
        member.send_heartbeat_if_due(self._clock.monotonic_ms())
        member.ask_session_timeout(self._clock.monotonic_ms())
        reconciler.reconcile(timer)
        committer.maybe_auto_commit(self._clock.monotonic_ms())
        member.send_heartbeat_if_due(self._clock.monotonic_ms())
        return True

    def _raise_metadata_errors(self) -> None:
        """A Metadata answer refused a topic this consumer uses (authorization, an invalid name,
        an unknown code): raised once per answer, as Java's poll() does; the consumer goes on."""
        errors = self._client.metadata.take_errors()
        used = self._subscription.topics | {tp.topic for tp in self._subscription.assigned()}
        for topic, code in sorted(errors.items()):
            if topic in used:
                raise error_for(code, ApiKey.METADATA, f"Metadata for topic {topic}")

    def _assign_all_partitions(self, timer: Timer) -> bool:
        """Without a group_id a subscription is every partition of the topics (kafka-python's
        group-less consumption), following the metadata as topics and partitions come and go."""
        if not self._wait_for_topic_metadata(timer):
            return False
        metadata = self._client.metadata.snapshot
        if self._subscription.pattern is not None:
            self._subscription.match_pattern(metadata.topics())
        wanted = {TopicPartition(topic, p) for topic in self._subscription.topics
                  for p in (metadata.partitions_for_topic(topic) or ())}
        if wanted != self._subscription.assigned():
            log.info("consuming without a group: %s", sorted(f"{tp.topic}-{tp.partition}" for tp in wanted))
            self._subscription.set_group_assignment(wanted)
        return True

    def _wait_for_topic_metadata(self, timer: Timer) -> bool:
        """Before the first join, know the partitions of the subscribed topics (bounded by timer)."""
        while True:
            if self._topic_metadata_known():
                return True
            future = self._client.maybe_update_metadata()
            self._client.poll_until(future, Timer(self._clock, min(timer.remaining_ms(), 100)))
            if timer.expired():
                return False

    def _topic_metadata_known(self) -> bool:
        metadata = self._client.metadata.snapshot
        known = metadata.topics() | set(metadata.unavailable)
        return bool(metadata.version) and (self._subscription.pattern is not None or self._subscription.topics <= known)

    def _start_heartbeat_thread(self) -> None:
        if self._heartbeat_thread is None and self._member is not None:
            self._heartbeat_thread = HeartbeatThread(self._member, self._on_poll_timeout)
            self._heartbeat_thread.start()

    def _on_poll_timeout(self) -> None:
        # runs on the heartbeat thread: drop the partitions before LeaveGroup goes out, so that no
        # other member can be assigned a partition this one still claims
        assert self._member is not None
        self._member.ownership.on_ownership_lost("poll() was not called within max_poll_interval_ms")

