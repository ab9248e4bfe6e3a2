"""GroupConsumer's positions: where each assigned partition is read from, and pausing.
A mixin of :class:`GroupConsumer`; every public method takes the consumer's ownership."""

from __future__ import annotations

from ..structs import TopicPartition

from ..attempts import Attempts, partition_name
from ..clock import Timer
from ..errors import CallTimeoutError, ConfigurationError, KafkaTimeoutError
from .parts import ConsumerParts
from .queries import check_partition


class PositionControl(ConsumerParts):
    """Positions, seeks and pauses of GroupConsumer."""

    def _positions_known_in_time(self, timer: Timer) -> bool:
        """Inside poll(), running out of time while looking up positions is not an error: the
        next poll goes on from where this one stopped."""
        try:
            self._update_fetch_positions(timer)
        except KafkaTimeoutError:
            return False
        return True

    def _update_fetch_positions(self, timer: Timer) -> None:
        missing = self._subscription.missing_positions()
        if missing:
            if self._group is not None:
                committed = self._group.committer.fetch_committed(missing, timer)
                for tp in missing:
                    found = committed.get(tp)
                    if found is not None:
                        self._subscription.seek_to_committed(tp, found.offset, found.leader_epoch)
                    else:
                        self._subscription.reset_if_missing(tp)
            else:
                for tp in missing:
                    self._subscription.reset_if_missing(tp)
        self._fetcher.reset_positions(timer)

    # -- positions -----------------------------------------------------------------------
    def position(self, partition: TopicPartition, timeout_ms: float | None = None) -> int:
        """The offset of the next record to fetch; looked up (committed offset, else
        auto_offset_reset) within ``timeout_ms`` (default_api_timeout_ms when None, where
        kafka-python waits forever), then CallTimeoutError."""
        partition = check_partition(partition)
        operation = f"position of {partition_name(*partition)}"
        with self._ownership.acquired():
            self._ensure_open()
            timer = self._default_timer(timeout_ms)
            attempts = Attempts(operation, timer, [partition_name(*partition)])
            # position() raises UnassignedPartitionError for a partition not (or no longer) owned
            while (offset := self._subscription.position(partition)) is None:
                attempts.tried()
                try:
                    self._update_fetch_positions(timer)
                except CallTimeoutError as exc:  # the look-up it made ran out: say it of position()
                    raise exc.renamed(operation) from None
                if self._subscription.position(partition) is None:
                    if timer.expired():
                        raise attempts.timed_out()
                    self._client.poll_until(None, Timer(self._clock, min(timer.remaining_ms(), 100)))
            return offset

    def highwater(self, partition: TopicPartition) -> int | None:
        """The partition's high watermark (the offset after its last record) as the last fetch
        answer gave it: None before the first, and for a partition no longer assigned.  Asks
        nothing of the cluster (end_offsets() does)."""
        partition = check_partition(partition)
        with self._ownership.acquired():
            return self._subscription.high_watermark(partition)

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Read the assigned ``partition`` from ``offset`` at the next poll(); records fetched
        before are dropped.  An offset past the end is reset by auto_offset_reset.  Skips a
        record a deserializer failed on: ``seek(e.partition, e.offset + 1)``."""
        partition = check_partition(partition)
        with self._ownership.acquired():
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
                raise ConfigurationError(f"offset must be a non-negative integer, not {offset!r}")
            # one step under the subscription lock: a partition the heartbeat thread has just
            # taken away is no error (there is nothing to seek); one never assigned is
            self._subscription.seek(partition, offset)
            self._iterator = None  # records fetched before the seek are not the ones to return

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        """Read the partitions (all assigned ones if none is given) from their first offset,
        looked up at the next poll().  UnassignedPartitionError for one not assigned."""
        self._seek_to("earliest", partitions)

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        """Read the partitions (all assigned ones if none is given) from their end: only records
        written from now on.  UnassignedPartitionError for one not assigned."""
        self._seek_to("latest", partitions)

    def _seek_to(self, where: str, partitions: tuple[TopicPartition, ...]) -> None:
        wanted = [check_partition(tp) for tp in partitions]
        with self._ownership.acquired():
            self._subscription.request_resets(wanted, where)
            self._iterator = None

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop fetching the assigned partitions (poll() returns none of their records) until
        resume(); the member stays in the group and keeps them.  A rebalance that moves a
        partition away forgets its pause."""
        with self._ownership.acquired():
            for tp in partitions:
                self._subscription.pause(tp)

    def resume(self, *partitions: TopicPartition) -> None:
        """Fetch the paused partitions again."""
        with self._ownership.acquired():
            for tp in partitions:
                self._subscription.resume(tp)

    def paused(self) -> set[TopicPartition]:
        """The assigned partitions that are paused."""
        with self._ownership.acquired():
            return self._subscription.paused()
