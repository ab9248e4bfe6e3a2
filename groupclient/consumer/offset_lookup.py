"""The consumer's offset look-ups: ListOffsets to each partition's leader, for
``beginning_offsets``, ``end_offsets``, ``offsets_for_times`` and the resets that
``auto_offset_reset`` asks for.  A mixin of :class:`~groupclient.consumer.fetcher.Fetcher`,
whose client, subscription and settings it uses; kept apart so the fetcher's file stays about
fetching records."""

from __future__ import annotations

import logging
from typing import Any

import kafka.errors as kafka_errors
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse

from ..attempts import Attempts, counted, partition_name
from ..clock import Timer
from ..errors import ConfigurationError
from ..network.future import RequestFuture
from ..network.transport import Transport
from ..protocol.apis import ApiKey
from ..protocol.error_table import Action, action_for, error_for
from ..structs import OffsetAndTimestamp, TopicPartition
from .subscription import SubscriptionState

log = logging.getLogger("groupclient.consumer")

EARLIEST, LATEST = -2, -1


class NoOffsetForPartitionError(ConfigurationError, kafka_errors.NoOffsetForPartitionError):
    """auto_offset_reset='none' and a partition has no committed offset."""


class OffsetLookups:
    """ListOffsets for the consumer (the Fetcher's ``client``, ``subscription`` and ``config``)."""

    client: Transport
    subscription: SubscriptionState
    config: Any  # FetchConfig: its isolation_level

    def _note_failure(self, exc: BaseException) -> None:
        raise NotImplementedError

    # -- offsets by time (resets, beginning/end offsets) ------------------------------------
    def list_offsets(self, timestamps: dict[TopicPartition, int], timer: Timer) -> dict[TopicPartition, int]:
        """ListOffsets to each partition's leader (-2 earliest, -1 latest, else a timestamp):
        the offsets found (-1 where a timestamp is past the last record)."""
        return {tp: found.offset for tp, found in self.list_offsets_by_time(timestamps, timer).items()}

    def list_offsets_by_time(self, timestamps: dict[TopicPartition, int], timer: Timer,
                             operation: str = "") -> dict[TopicPartition, OffsetAndTimestamp]:
        """As :meth:`list_offsets`, with the timestamp and leader epoch of each answer.  Leader
        moves and unknown partitions are retried until the timer ends, then a CallTimeoutError
        (``operation`` names the call) says what each partition last got; any other error code
        (topic authorization...) is raised at once."""
        found: dict[TopicPartition, OffsetAndTimestamp] = {}
        pending = dict(timestamps)
        attempts = Attempts(operation or f"offset look-up of {counted(len(pending), 'partition')}", timer,
                            [partition_name(tp.topic, tp.partition) for tp in sorted(pending)])
        while pending:
            by_node: dict[int, dict[TopicPartition, int]] = {}
            leaders = self.client.metadata.snapshot
            attempts.tried()
            for tp, ts in pending.items():
                leader = leaders.leader_for(tp.topic, tp.partition)
                if leader is None:
                    attempts.waiting("no leader known", [partition_name(tp.topic, tp.partition)])
                    self.client.metadata.request_update()
                else:
                    by_node.setdefault(leader, {})[tp] = ts
            futures = []
            for node, wanted in by_node.items():
                if self.client.ready(node):
                    futures.append(self._send_list_offsets(node, wanted, attempts).add_callback(found.update))
                else:
                    attempts.waiting(f"leader {node} not connected", [partition_name(*tp) for tp in wanted])
            for f in futures:
                self.client.poll_until(f, timer)
                if f.failed():
                    assert f.exception is not None
                    if not f.retriable():
                        raise f.exception
            pending = {tp: ts for tp, ts in pending.items() if tp not in found}
            if pending and timer.expired():
                raise attempts.timed_out(partition_name(*tp) for tp in sorted(pending))
            if pending:  # a leader moved or is unknown: new metadata first, a moment at most
                metadata_future = self.client.maybe_update_metadata()
                self.client.poll_until(metadata_future, Timer(self.client.clock, min(timer.remaining_ms(), 100)))
        return found

    def _send_list_offsets(self, node: int, wanted: dict[TopicPartition, int],
                           attempts: Attempts) -> RequestFuture[dict[TopicPartition, OffsetAndTimestamp]]:
        by_topic: dict[str, list[Any]] = {}
        for tp, ts in wanted.items():
            by_topic.setdefault(tp.topic, []).append(ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                partition_index=tp.partition, current_leader_epoch=-1, timestamp=ts, max_num_offsets=1))

        def build(version: int) -> Any:
            return ListOffsetsRequest(version=version, replica_id=-1, isolation_level=self.config.isolation_level,
                                      topics=[ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=p)
                                              for t, p in by_topic.items()])

        def handle(response: Any, future: RequestFuture[dict[TopicPartition, OffsetAndTimestamp]]) -> None:
            result = {}
            for t in response.topics:
                for p in t.partitions:
                    if p.error_code:
                        attempts.failed(p.error_code, [partition_name(t.name, p.partition_index)])
                        action = action_for(p.error_code, ApiKey.LIST_OFFSETS)
                        if action is Action.REFRESH_METADATA:
                            self.client.metadata.request_update()
                        elif action is not Action.RETRY:
                            return future.failure(error_for(p.error_code, ApiKey.LIST_OFFSETS,
                                                            f"ListOffsets for {t.name}-{p.partition_index}"))
                        continue
                    if response.version >= 1:
                        offset, timestamp = p.offset, p.timestamp
                    else:
                        offset, timestamp = (p.old_style_offsets or [-1])[0], -1
                    epoch = getattr(p, "leader_epoch", -1)
                    result[TopicPartition(t.name, p.partition_index)] = OffsetAndTimestamp(offset, timestamp, epoch)
            future.success(result)

        def failed(error: BaseException) -> None:
            attempts.failed(error, [partition_name(*tp) for tp in wanted])
            self._note_failure(error)

        sent = self.client.send(node, ListOffsetsRequest, ListOffsetsResponse, build)
        return sent.compose(handle).add_errback(failed)

    def reset_positions(self, timer: Timer) -> None:
        resets = self.subscription.resets_needed()
        if not resets:
            return
        bad = [tp for tp, strategy in resets.items() if strategy not in ("earliest", "latest")]
        if bad:
            raise NoOffsetForPartitionError(f"no committed offset for {sorted(bad)} and auto_offset_reset='none'")
        offsets = self.list_offsets({tp: EARLIEST if s == "earliest" else LATEST for tp, s in resets.items()}, timer)
        for tp, offset in offsets.items():
            # skipped if the partition was taken away, seeked or reset another way meanwhile
            if self.subscription.complete_reset(tp, resets[tp], offset):
                log.info("resetting %s to %s offset %d", tp, resets[tp], offset)
