"""ShareFetch (78): a share group member acquires records within its share session, acknowledging
earlier ones on the way (``share_acks.py``), as Kafka's broker answers it.

- The session (``share_group/service.py``): epoch 0 opens one (acknowledgements then are
  INVALID_REQUEST), -1 closes it after its acknowledgements and fetches nothing, any other epoch
  must be the session's.  Session errors are top-level, with nothing else done.
- Acknowledgements are applied first, so records released here may come back in this answer.
- Every partition of the session is fetched, sharing ``MaxRecords`` (whole log batches in
  batch_optimized mode; exactly in record_limit mode) and ``MaxBytes``; when nothing is acquired
  the request waits up to ``MaxWaitMs`` for records to arrive, or for a lock to run out.  A renewing request (v2,
  ``IsRenewAck``) only acknowledges, and must ask for nothing.
- A partition is answered with the log batches that hold its acquired records and the ranges
  acquired; the first answer of a session names every partition asked for, later ones only those
  with records, an error, or new to the session.
"""

from __future__ import annotations

import uuid
from typing import Any

from ...error_codes import ErrorCode
from ...protocol.share_group import CLOSE_SESSION_EPOCH, OPEN_SESSION_EPOCH, ShareAcquireMode, ShareFetchResponse
from ..share_group.partition import Acquired
from ..share_group.service import SessionError, ShareSession, reset_duration_ms
from ..storage.topic_log import PartitionLog
from .context import Handler, RequestContext
from .share_acks import Outcome, acknowledge, valid_member

Topic = ShareFetchResponse.ShareFetchableTopicResponse
Partition = Topic.PartitionData
NO_LEADER = Partition.LeaderIdAndEpoch(leader_id=0, leader_epoch=0)  # what Kafka leaves in an answer
Key = tuple[uuid.UUID, int]


class _Fetched:
    """One partition's part of the answer."""

    def __init__(self) -> None:
        self.error: Outcome = (ErrorCode.NONE, None)
        self.acked: Outcome | None = None
        self.records = b""
        self.acquired: list[Acquired] = []


def _response(req: Any, error: ErrorCode, parts: dict[Key, _Fetched], lock_ms: int) -> Any:
    by_topic: dict[uuid.UUID, list[Any]] = {}
    for (topic_id, index), part in parts.items():
        acked = part.acked or (ErrorCode.NONE, None)
        by_topic.setdefault(topic_id, []).append(Partition(
            partition_index=index, error_code=int(part.error[0]), error_message=part.error[1],
            acknowledge_error_code=int(acked[0]), acknowledge_error_message=acked[1], current_leader=NO_LEADER,
            records=part.records, acquired_records=[
                Partition.AcquiredRecords(first_offset=a.first, last_offset=a.last, delivery_count=a.deliveries)
                for a in part.acquired]))
    return ShareFetchResponse(
        version=req.version, throttle_time_ms=0, error_code=int(error), error_message=None,
        acquisition_lock_timeout_ms=lock_ms, node_endpoints=[],
        responses=[Topic(topic_id=topic_id, partitions=partitions) for topic_id, partitions in by_topic.items()])


def error_response(req: Any, error: ErrorCode) -> Any:
    return _response(req, error, {}, 0)


def _requested(req: Any) -> list[Key]:
    return [(t.topic_id, p.partition_index) for t in req.topics for p in t.partitions]


async def handle(ctx: RequestContext, req: Any) -> Any:
    if not valid_member(req):
        return error_response(req, ErrorCode.INVALID_REQUEST)
    renewing = req.version >= 2 and bool(req.is_renew_ack)
    asks = (req.max_bytes, req.min_bytes, req.max_records, req.max_wait_ms)
    acks = any(p.acknowledgement_batches for t in req.topics for p in t.partitions)
    if (renewing and any(asks)) or (acks and req.share_session_epoch == OPEN_SESSION_EPOCH):
        return error_response(req, ErrorCode.INVALID_REQUEST)
    shares = ctx.core.share_groups
    forgotten = [(t.topic_id, p) for t in req.forgotten_topics_data for p in t.partitions]
    try:
        session = shares.fetch_session(ctx.node.node_id, req.group_id, req.member_id, req.share_session_epoch,
                                       _requested(req), forgotten)
    except SessionError as refused:
        return error_response(req, refused.error)
    shares.used_on(ctx.node.node_id, req.group_id, req.member_id, ctx.connection)
    lock_ms = shares.partition_settings(req.group_id).record_lock_duration_ms
    parts: dict[Key, _Fetched] = {}
    for key, outcome in acknowledge(ctx, req.group_id, req.member_id, req.topics, req.version, renewing).items():
        parts.setdefault(key, _Fetched()).acked = outcome
    if req.share_session_epoch == CLOSE_SESSION_EPOCH:
        shares.close_session(ctx.node.node_id, req.group_id, req.member_id)
        return _response(req, ErrorCode.NONE, parts, lock_ms)
    if renewing:
        return _response(req, ErrorCode.NONE, parts, lock_ms)
    deadline = ctx.now + max(req.max_wait_ms, 0)
    while True:
        got = _fetch(ctx, req, session)
        waiting = [k for k in session.partitions if k not in got or not got[k].acquired]
        done = any(part.acquired or part.error[0] for part in got.values())  # Kafka answers an error at once
        if done or ctx.now >= deadline or not waiting or req.max_records <= 0:
            break
        names = [(ctx.core.topics.name_of(t), p) for t, p in waiting]
        # records come from the log, or back from a holder whose lock runs out
        locks = [p.next_lock_deadline() for p in (shares.known_partition(req.group_id, *k) for k in waiting) if p]
        wake = min([deadline, *(d for d in locks if d is not None and d > ctx.now)])
        await ctx.core.wait_for_append([(n, p) for n, p in names if n is not None], max(wake - ctx.now, 0))
        if ctx.now >= deadline:
            got = _fetch(ctx, req, session)
            break
    first = req.share_session_epoch == OPEN_SESSION_EPOCH
    for key, part in got.items():
        if first or part.acquired or part.error[0] or key in session.fresh:
            fetched = parts.setdefault(key, _Fetched())
            fetched.error, fetched.records, fetched.acquired = part.error, part.records, part.acquired
    session.fresh.clear()
    return _response(req, ErrorCode.NONE, parts, lock_ms)


def _fetch(ctx: RequestContext, req: Any, session: ShareSession) -> dict[Key, _Fetched]:
    """Acquire from every partition of the session, in its order, sharing the request's budget."""
    budget = req.max_records if req.version >= 1 else 500
    per_partition_bytes = max(1, req.max_bytes // max(1, len(session.partitions)))
    # an acquire mode Kafka 4.4 does not know is taken as batch_optimized, as it takes it
    mode = ShareAcquireMode.RECORD_LIMIT if req.version >= 2 and req.share_acquire_mode == ShareAcquireMode.RECORD_LIMIT \
        else ShareAcquireMode.BATCH_OPTIMIZED
    out: dict[Key, _Fetched] = {}
    for key in session.partitions:
        part = out[key] = _Fetched()
        name = ctx.core.topics.name_of(key[0])
        if name is None:
            part.error = (ErrorCode.UNKNOWN_TOPIC_ID, None)
            continue
        error, log = ctx.led_partition(name, key[1])
        if log is None:
            part.error = (error, None)
            continue
        share_partition = ctx.core.share_groups.share_partition(
            req.group_id, key[0], key[1], lambda reset: _start_offset(ctx, log, reset))
        if share_partition is None:
            part.error = (ErrorCode.OFFSET_NOT_AVAILABLE, None)
            continue
        if budget <= 0:
            continue
        share_partition.move_start(log.log_start_offset)
        batches = [(b.base_offset, b.last_offset, b.data)
                   for b in log.batches_from(share_partition.fetch_offset(ctx.now), per_partition_bytes)]
        part.acquired = share_partition.acquire(req.member_id, [(b, e) for b, e, _ in batches], budget,
                                                max(req.batch_size, 1), mode, ctx.now)
        ctx.core.share_groups.persist(req.group_id, *key)  # what ran out or moved on the way
        budget -= sum(a.last - a.first + 1 for a in part.acquired)
        part.records = _holding(batches, part.acquired)
    return out


def _start_offset(ctx: RequestContext, log: PartitionLog, reset: str) -> int | None:
    """Where a group's share-partition starts: its share.auto.offset.reset."""
    if reset == "earliest":
        return log.log_start_offset
    back_ms = reset_duration_ms(reset)
    if back_ms is None:
        return log.high_watermark  # latest
    found = log.offset_for_timestamp(ctx.wall_ms - back_ms)
    return found[0] if found is not None else log.high_watermark


def _holding(batches: list[tuple[int, int, bytes]], acquired: list[Acquired]) -> bytes:
    """The batches from the one holding the first acquired record to the one holding the last."""
    if not acquired:
        return b""
    first, last = acquired[0].first, acquired[-1].last
    return b"".join(data for base, end, data in batches if end >= first and base <= last)


HANDLER = Handler(handle, error_response)
