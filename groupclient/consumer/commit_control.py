"""GroupConsumer's commits: ``commit()``, ``commit_async()`` and ``committed()``.  A mixin of
:class:`GroupConsumer`, kept apart so the facade's file stays about subscribing, polling and
closing; every method takes the consumer's ownership like the rest, and the work is the group
driver's :class:`~groupclient.consumer.commits.OffsetCommitter`'s."""

from __future__ import annotations

from typing import Any

from kafka.future import Future as KafkaFuture

from ..clock import Timer
from ..errors import CommitFailedError, ConfigurationError, IllegalStateError
from ..structs import OffsetAndMetadata, TopicPartition
from .commits import CommitCallback, OffsetCommitter
from .parts import ConsumerParts
from .queries import check_partition


class CommitControl(ConsumerParts):
    """Commits of GroupConsumer (a group_id is needed: IllegalStateError otherwise)."""

    def _committer(self) -> OffsetCommitter:
        if self._group is None:
            raise IllegalStateError("committing offsets needs a group_id")
        return self._group.committer

    def commit(self, offsets: dict[TopicPartition, OffsetAndMetadata] | None = None,
               timeout_ms: float | None = None) -> None:
        """Commit ``offsets`` (default: what was returned to the application) and wait for the
        answer, retrying what can be retried within ``timeout_ms`` (default_api_timeout_ms when
        None, where kafka-python waits forever; ``float("inf")``: until it is done); then
        CallTimeoutError, which names each partition's last error."""
        with self._ownership.acquired():
            self._ensure_open()
            group = self._committer()
            timer = self._default_timer(timeout_ms)
            if offsets is None:
                self._check_still_member()
                offsets = self._subscription.consumed_offsets()
            else:
                offsets = _as_offsets(offsets)
            group.commit_sync(offsets, timer)
            group.invoke_completed_commit_callbacks()

    def _check_still_member(self) -> None:
        """A commit of "what was consumed" after the partitions were taken away outside a
        rebalance (poll timeout, lost lease) cannot succeed: say so, as Kafka does."""
        if self._subscription.is_group_subscribed() and self._subscription.has_lost():
            raise CommitFailedError(
                "the consumer is no longer part of the group: poll() was not called within "
                "max_poll_interval_ms, or the coordinator could not be reached within the session "
                "timeout; its partitions may belong to another member now and will be consumed again "
                "from the last committed offset")

    def commit_async(self, offsets: dict[TopicPartition, OffsetAndMetadata] | None = None,
                     callback: CommitCallback | None = None) -> KafkaFuture:
        """Send a commit and return kafka-python's ``kafka.future.Future`` for it (``is_done`` an
        attribute, ``add_callback``...).  The future is completed, and ``callback(offsets,
        error_or_None)`` called, on this thread, by a later ``poll()``, ``commit()`` or ``close()``
        (as Java runs commit callbacks): no user code runs on the heartbeat thread."""
        with self._ownership.acquired():
            self._ensure_open()
            group = self._committer()
            offsets = self._subscription.consumed_offsets() if offsets is None else _as_offsets(offsets)
            future = group.commit_async(offsets, callback or self.config["default_offset_commit_callback"])
            # send it now; a pending wakeup() is for the next blocking call, not for this one
            self._client.poll_until(None, Timer(self._clock, 0), wakeup=False)
            return future

    def committed(self, partition: TopicPartition, metadata: bool = False,
                  timeout_ms: float | None = None) -> int | OffsetAndMetadata | None:
        """The group's committed offset; waits at most ``timeout_ms`` (None:
        default_api_timeout_ms), then CallTimeoutError."""
        partition = check_partition(partition)
        with self._ownership.acquired():
            self._ensure_open()
            group = self._committer()
            found = group.fetch_committed({partition}, self._default_timer(timeout_ms)).get(partition)
            if found is None:
                return None
            return found if metadata else found.offset



def _as_offsets(offsets: dict[TopicPartition, Any]) -> dict[TopicPartition, OffsetAndMetadata]:
    result = {}
    for tp, value in offsets.items():
        if isinstance(value, OffsetAndMetadata):
            result[TopicPartition(*tp)] = value
        elif isinstance(value, int):
            result[TopicPartition(*tp)] = OffsetAndMetadata(value, "", -1)
        else:
            raise ConfigurationError(f"offsets must map TopicPartition to OffsetAndMetadata or int, got {value!r}")
    return result


