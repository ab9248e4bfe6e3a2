"""The consumer operations that are safe from any thread while another thread owns the consumer.

Each is one step under the subscription's lock (or a read of the metadata snapshot), so it needs
no ownership: ``groupclient.aio`` calls them from the event loop while the consumer's own thread
is inside ``poll()``, and the records that poll drains are handed out only if
:meth:`SubscriptionState.take_delivery` still finds their partition the same.
"""

from __future__ import annotations

from collections.abc import Callable

from ..network.client import NetworkClient
from ..structs import TopicPartition
from ..errors import ConfigurationError
from .fetcher import Fetcher
from .queries import check_partition
from .subscription import DeliveryTag, SubscriptionState


class AnyThreadAccess:
    """Assigning, seeks, pauses and reads of a consumer's partitions, callable from any thread."""

    def __init__(self, subscription: SubscriptionState, fetcher: Fetcher, client: NetworkClient,
                 note_poll: Callable[[], None] = lambda: None) -> None:
        self._subscription = subscription
        self._fetcher = fetcher
        self._client = client
        self._note_poll = note_poll

    def note_application_poll(self) -> None:
        """The application asked for records: max_poll_interval_ms starts again (the member's
        lock; a member that left for not polling joins again)."""
        self._note_poll()

    def wake(self) -> None:
        """End the owner thread's wait for network events at once (it has work waiting)."""
        self._client.interrupt()

    def hold(self, partitions: set[TopicPartition]) -> None:
        """Fetch none of these (the caller buffers plenty of their records) until the next hold()."""
        self._subscription.hold(partitions)

    def delivered(self, partition: TopicPartition) -> int | None:
        """The offset of the next record to hand out of ``partition`` (None while unknown)."""
        return self._subscription.delivered(check_partition(partition))

    def assign(self, partitions: set[TopicPartition]) -> None:
        """As GroupConsumer.assign() of a non-empty set (IllegalStateError after subscribe())."""
        self._subscription.assign_from_user(partitions)
        self._fetcher.drop_buffered(partitions)
        self._client.set_topics({tp.topic for tp in partitions})

    def assignment(self) -> set[TopicPartition]:
        """The partitions owned now."""
        return self._subscription.assigned()

    def is_group_subscribed(self) -> bool:
        """Subscribed to topics or a pattern (the group assigns)."""
        return self._subscription.is_group_subscribed()

    def subscribed_topics(self) -> set[str]:
        """The topics subscribed to (a pattern's matches so far)."""
        return set(self._subscription.topics)

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """As GroupConsumer.seek(): records drained before it are not handed out after it."""
        partition = check_partition(partition)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ConfigurationError(f"offset must be a non-negative integer, not {offset!r}")
        self._subscription.seek(partition, offset)

    def pause(self, partitions: tuple[TopicPartition, ...]) -> None:
        """Stop handing out and fetching these partitions until resume()."""
        for tp in partitions:
            self._subscription.pause(check_partition(tp))

    def resume(self, partitions: tuple[TopicPartition, ...]) -> None:
        """Fetch the paused partitions again."""
        for tp in partitions:
            self._subscription.resume(check_partition(tp))

    def paused(self) -> set[TopicPartition]:
        """The assigned partitions that are paused."""
        return self._subscription.paused()

    def highwater(self, partition: TopicPartition) -> int | None:
        """The high watermark the last fetch answer gave; None before one and for a partition just
        lost; UnassignedPartitionError for one never assigned."""
        return self._subscription.high_watermark(check_partition(partition))

    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        """The last stable offset the last fetch answer gave (None as for highwater)."""
        return self._subscription.last_stable_offset(check_partition(partition))

    def last_fetch_ms(self, partition: TopicPartition) -> int | None:
        """Wall-clock milliseconds of the last fetch answer for the partition."""
        return self._subscription.last_fetch_ms(check_partition(partition))

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """The topic's partitions as the metadata known now has them; None if it has none."""
        found = self._client.metadata.partitions_for_topic(topic)
        return None if found is None else set(found)

    def take_delivery(self, tp: TopicPartition, tag: DeliveryTag, first: int, last: int, epoch: int | None) -> bool:
        """Records drained with ``tag`` go to the application now, if still its to have."""
        return self._subscription.take_delivery(tp, tag, first, last, epoch)
