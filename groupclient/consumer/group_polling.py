"""GroupConsumer's group step of ``poll()``: metadata, the member's lease, coordinator and join,
auto-commit, heartbeats; and consuming without a group.  A mixin of :class:`GroupConsumer`, kept
apart so the facade's file stays about the API; runs on the application thread only."""

from __future__ import annotations

import dataclasses
import logging

from ..structs import TopicPartition

from ..clock import Timer
from ..protocol.apis import ApiKey
from ..protocol.error_table import error_for
from .parts import ConsumerParts
from .subscription import SubscriptionType
from .topic_metadata import topic_metadata_known, wait_for_topic_metadata

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
            elif self._group is not None:
                self._group.committer.invoke_completed_commit_callbacks()
            self._client.poll_until(None, timer, wakeup=False)
            return subscribed and self._first_assignment_in_place()

    def _first_assignment_in_place(self) -> bool:
        if self._group is None or not self._subscription.is_group_subscribed():
            return topic_metadata_known(self._client, self._subscription)
        return self._group.first_assignment_in_place()

    def _poll_group(self, timer: Timer) -> bool:
        """Metadata, group membership, auto-commit; True when partitions can be fetched."""
        self._group_polled_at = self._clock.monotonic_ms()
        self._client.maybe_update_metadata()
        self._raise_metadata_errors()
        if self._group is not None:
            return self._group.poll_step(timer, self._polls_are_the_applications)
        if self._subscription.is_group_subscribed():
            return self._assign_all_partitions(timer)
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
        if not wait_for_topic_metadata(self._client, self._subscription, self._clock, timer):
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
