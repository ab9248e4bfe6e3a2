"""Lag in time (``groups describe|watch --lag-seconds``): how long ago the last record a group
consumed was written, from that record's own timestamp.

A partition's time lag is 0 when its records lag is 0 (or less); otherwise it is now minus the
timestamp of the record at committed offset - 1, the last one the group consumed (what the
consumer's ``groupclient.consumer.time_lag`` metric measures).  When that record cannot be read
(compacted away, deleted by retention, a transaction marker, or a commit at offset 0), the first
record at or after the committed offset stands in: the oldest one still waiting.  Unknown (None)
when no timestamp can be read, and for a partition with no committed offset or no log end offset
(its records lag is unknown too).  Timestamps are the records' own, CreateTime or LogAppendTime
as their batch says; one ahead of this machine's clock counts as now (a time lag of 0).

The records are read with one Fetch per partition leader (all its partitions in one request),
decoded by the consumer's own decoder.  Partitions an answer did not settle (a leader that moved,
a batch larger than the answer's limit, an offset below the log start) are fetched again, a few
rounds at most, within the caller's timer; whatever fails is unknown, never an error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse

from ..clock import Timer
from ..consumer.records import decode_records, next_offset
from ..errors import NetworkError
from ..protocol.apis import ApiKey
from ..protocol.error_table import Action, action_for
from ..structs import TopicPartition
from .client import AdminConnection, AdminError
from .model import PartitionLag

READ_UNCOMMITTED = 0
# per partition: the first round's limit covers the usual batches (producers batch 16 KiB by
# default); a partition whose batch was larger is asked again with room for a whole batch of
# Kafka's default max.message.bytes (1 MiB and its overhead)
FIRST_PARTITION_BYTES = 64 * 1024
LATER_PARTITION_BYTES = 1024 * 1024 + 1024
RESPONSE_MAX_BYTES = 16 * 1024 * 1024  # the rest of a larger answer comes empty: asked again
FETCH_ROUNDS = 3


LogStarts = Callable[[list[TopicPartition]], dict[TopicPartition, int]]  # partitions -> their log start offsets


def time_lags(conn: AdminConnection, lags: Iterable[PartitionLag], timer: Timer,
              log_starts: LogStarts) -> dict[TopicPartition, float | None]:
    """Each partition's time lag in seconds (None: unknown), within ``timer``.  ``log_starts``
    gives partitions' log start offsets (ListOffsets EARLIEST), for those whose records
    before the committed offset are gone."""
    found: dict[TopicPartition, float | None] = {}
    committed: dict[TopicPartition, int] = {}
    pending: dict[TopicPartition, int] = {}  # the offset to fetch each unsettled partition from
    for p in lags:
        tp = TopicPartition(p.topic, p.partition)
        lag = p.lag
        found[tp] = 0.0 if lag is not None and lag <= 0 else None  # the rest: unknown until read
        if lag is not None and lag > 0 and p.committed is not None:
            committed[tp] = p.committed
            pending[tp] = max(p.committed - 1, 0)  # offset 0: nothing consumed yet, the first waits
    limit = FIRST_PARTITION_BYTES
    refresh = False
    for _ in range(FETCH_ROUNDS):
        if not pending or timer.expired():
            break
        if refresh:
            try:
                conn.refresh_metadata(timer, {tp.topic for tp in pending})
            except AdminError:
                break
        by_leader: dict[int, dict[TopicPartition, int]] = {}
        for tp, offset in sorted(pending.items()):
            leader = conn.leader_for(tp.topic, tp.partition)
            if leader is not None and leader >= 0:
                by_leader.setdefault(leader, {})[tp] = offset
        refresh = sum(len(asked) for asked in by_leader.values()) < len(pending)  # leaders not known
        below_start: list[TopicPartition] = []
        for leader, asked in sorted(by_leader.items()):
            try:
                response = conn.request(leader, FetchRequest, FetchResponse, partial(_fetch, asked=asked, limit=limit),
                                        timer)
            except (AdminError, NetworkError):
                refresh = True
                continue  # asked again next round, if the timer allows
            now_ms = conn.clock.wall_ms()
            for tp, outcome in _read(response, asked, committed).items():
                if isinstance(outcome, FetchAgain):
                    pending[tp] = outcome.offset
                    refresh = refresh or outcome.refresh
                    if outcome.below_start:
                        below_start.append(tp)
                else:
                    # never below 0, as the consumer's gauge: a timestamp ahead of this clock
                    # (a producer's clock running ahead) is a record just written
                    found[tp] = None if outcome is None else max(0.0, (now_ms - outcome) / 1000)
                    del pending[tp]
        if below_start:
            _from_log_start(pending, committed, below_start, log_starts)
        limit = LATER_PARTITION_BYTES
    return found


def _from_log_start(pending: dict[TopicPartition, int], committed: dict[TopicPartition, int],
                    below_start: list[TopicPartition], log_starts: LogStarts) -> None:
    """The records before the committed offset are gone (retention, DeleteRecords): the first
    record still there is the oldest waiting, fetched next round."""
    try:
        starts = log_starts(below_start)
    except (AdminError, NetworkError):
        starts = {}  # the committed offset is tried instead
    for tp in below_start:
        start = max(committed[tp], starts.get(tp, -1))
        if start > pending[tp]:
            pending[tp] = start
        else:
            del pending[tp]  # out of range above (a truncated log): unknown


class FetchAgain:
    """What a Fetch answer did not settle: fetch the partition again from ``offset`` (after a
    metadata refresh, with ``refresh``; from its log start offset, with ``below_start``)."""

    def __init__(self, offset: int, refresh: bool = False, below_start: bool = False) -> None:
        self.offset = offset
        self.refresh = refresh
        self.below_start = below_start


def _fetch(version: int, asked: dict[TopicPartition, int], limit: int) -> Any:
    by_topic: dict[str, list[Any]] = {}
    for tp, offset in asked.items():
        by_topic.setdefault(tp.topic, []).append(FetchRequest.FetchTopic.FetchPartition(
            partition=tp.partition, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
            log_start_offset=-1, partition_max_bytes=limit))
    # max_wait 0: what is there now, no long poll (the records looked for are old ones)
    return FetchRequest(
        version=version, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=RESPONSE_MAX_BYTES,
        isolation_level=READ_UNCOMMITTED, session_id=0, session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=t, partitions=p) for t, p in by_topic.items()],
        forgotten_topics_data=[], rack_id="")


def _read(response: Any, asked: dict[TopicPartition, int],
          committed: dict[TopicPartition, int]) -> dict[TopicPartition, int | None | FetchAgain]:
    """Per partition asked: the timestamp found, None (no timestamp to be had), or where to
    fetch it again."""
    outcomes: dict[TopicPartition, int | None | FetchAgain] = {}
    for t in response.responses:
        for p in t.partitions:
            tp = TopicPartition(t.topic, p.partition_index)
            offset = asked.get(tp)
            if offset is None:
                continue
            action = action_for(p.error_code, ApiKey.FETCH)
            if action is Action.NONE:
                if offset >= p.high_watermark:
                    outcomes[tp] = None  # nothing there any more (the log was truncated)
                else:
                    outcomes[tp] = first_timestamp(bytes(p.records or b""), offset, committed[tp], tp)
            elif action is Action.RESET_OFFSET:
                # out of range: below the log start (Kafka's answer does not say where it is)
                outcomes[tp] = FetchAgain(offset, below_start=True)
            elif action in (Action.REFRESH_METADATA, Action.RETRY):
                outcomes[tp] = FetchAgain(offset, refresh=action is Action.REFRESH_METADATA)
            else:
                outcomes[tp] = None
    for tp, offset in asked.items():
        outcomes.setdefault(tp, FetchAgain(offset))  # left out of the answer: asked again
    return outcomes


def first_timestamp(data: bytes, fetch_offset: int, committed: int, tp: TopicPartition) -> int | None | FetchAgain:
    """The timestamp of the record at ``committed`` - 1 in ``data`` (a Fetch answer's records
    from ``fetch_offset``), else of the first record after it; None when that one has none;
    :class:`FetchAgain` when ``data`` holds no whole batch with a record from ``fetch_offset`` on."""
    try:
        for record in decode_records(data, fetch_offset, tp.topic, tp.partition, None, None, True):
            # a message of the first format (v0) has no timestamp: None there, not an int
            stamp: int | None = record.timestamp
            if stamp is not None and stamp >= 0:
                return stamp
            if record.offset >= committed:
                return None  # neither the last consumed record nor the first waiting has one
            # the last consumed record has no timestamp: the first one waiting stands in
    except Exception:  # a broker's bytes (a bad CRC, a codec not installed, garbage): an unknown
        return None  # time lag for this partition, not a failed command
    # no record in the answer: only transaction markers (fetched again past them), or a batch
    # larger than the answer's limit (fetched again with a larger one)
    return FetchAgain(next_offset(data, fetch_offset))


__all__ = ["FetchAgain", "first_timestamp", "time_lags"]
