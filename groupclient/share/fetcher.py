"""ShareFetch and ShareAcknowledge: a share consumer's requests to the leaders of its partitions
(the Java client's ``ShareConsumeRequestManager``).

One share session per leader (session.py) and one request at a time on it.  A fetch goes to a
leader only while the consumer has no records left to hand out (records acquired wait under a lock
that runs; acquiring more than the application takes would hold them from other members), and
carries the acknowledgements waiting for that leader.  Acknowledgements for a leader no fetch is
going to go alone, in a ShareAcknowledge (a commit sends every one that way).

Threads: a request's answer may be read by either thread (the heartbeat thread polls the network
too), so its callback only queues it; the application thread handles it (:meth:`handle_answers`):
records into the buffer, the outcome of each acknowledgement, the session's next epoch.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..consumer.records import Deserializer
from ..error_codes import ErrorCode, error_name
from ..errors import (
    AcknowledgementFailedError, BrokerError, GroupClientError, InvalidRecordStateError, NodeNotReadyError,
)
from ..network.client import NetworkClient
from ..network.future import RequestFuture
from ..protocol.apis import ApiKey
from ..protocol.error_table import Action, action_for, error_for
from ..protocol.share_group import (
    AcknowledgeType, ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareAcquireMode, ShareFetchRequest,
    ShareFetchResponse,
)
from ..structs import TopicPartition
from .in_flight import Batch, acknowledgement_batches
from .acquired import acquired_records
from .records import ShareRecord
from .session import SessionRequest, ShareSession, TopicIdPartition

log = logging.getLogger("groupclient.share")

# a buffered record is handed out only while its lock has at least this long left
LOCK_MARGIN_MS = 2000

Acks = dict[TopicPartition, tuple[TopicIdPartition, dict[int, int]]]  # per partition: its id, offset -> type


@dataclass(frozen=True)
class ShareFetchConfig:
    group_id: str
    member_id: str
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    max_records: int
    acquire_mode: int  # ShareAcquireMode
    check_crcs: bool
    key_deserializer: Callable[[str], Deserializer]
    value_deserializer: Callable[[str], Deserializer]
    retry_backoff_ms: int = 100  # before asking a broker again after an error answer


@dataclass(frozen=True)
class AckOutcome:
    """How the broker took one partition's acknowledgements: ``error`` None when it took them."""

    partition: TopicPartition
    offsets: frozenset[int]
    renewed: bool
    error: GroupClientError | None
    ticket: int


@dataclass
class Chunk:
    """Records of one partition acquired by one answer, not all handed out yet."""

    partition: TopicPartition
    node: int
    records: list[ShareRecord[Any, Any]]
    taken: int = 0
    expires_at: int | None = None  # when the broker's locks on them run out (monotonic ms)
    # not decoded yet: the answer's records and acquired ranges, and the partition's id (decoded
    # when a poll takes from it, so that the next fetch goes before this one's records are built)
    raw: tuple[bytes, list[Any], TopicIdPartition] | None = None
    acquired: int = 0  # while ``raw``: how many offsets were acquired

    def left(self) -> int:
        return self.acquired if self.raw is not None else len(self.records) - self.taken


@dataclass
class _Sent:
    """A request on its way: its session, what it carried, and its ticket (a commit waits for
    its tickets' outcomes)."""

    node: int
    request: SessionRequest
    acks: Acks
    ticket: int
    fetching: bool  # a ShareFetch that acquires records (else one that only acknowledges or forgets)
    ack_only: bool = False  # a ShareAcknowledge
    # when it went (monotonic ms): the broker locks what it acquires after this, so a lock runs
    # out no sooner than this plus the lock's length, however late the application takes the answer
    sent_at: int = 0


@dataclass
class FetchProblems:
    """What the answers showed that the consumer acts on: partitions whose leader to look up again,
    and errors to raise once from ``poll()``."""

    refresh_metadata: bool = False
    errors: list[BaseException] = field(default_factory=list)


class ShareFetcher:
    """The share sessions of one consumer, and the records and outcomes their answers brought."""

    def __init__(self, client: NetworkClient, config: ShareFetchConfig) -> None:
        self.client = client
        self.config = config
        self.sessions: dict[int, ShareSession] = {}
        self._answers: collections.deque[tuple[_Sent, Any, BaseException | None]] = collections.deque()
        self._answers_lock = threading.Lock()  # appended on either thread, drained by the application's
        self.buffer: collections.deque[Chunk] = collections.deque()
        self.outcomes: list[AckOutcome] = []
        self.pending: dict[int, Acks] = {}  # per node: acknowledgements not sent yet
        self._pending_since: dict[int, int] = {}  # per node: when its oldest pending ones were made
        self.fetch_records = config.max_records  # what a fetch asks for (ShareFetch's MaxRecords)
        self._pending_ticket: dict[int, int] = {}  # per node: the newest ticket among its pending ones
        self.acquisition_lock_timeout_ms: int | None = None
        self.problems = FetchProblems()
        self._turn = -1  # record_limit: the leader whose turn it is to acquire
        self.expired_unused = 0  # records dropped from the buffer because their locks ran out
        # acquired records that could not be deserialized: (partition, node, offset), acknowledged
        # by offset (in_flight.py)
        self.undeliverable: list[tuple[TopicPartition, int, int]] = []

    # -- what is buffered ---------------------------------------------------------------------
    def buffered(self) -> int:
        return sum(c.left() for c in self.buffer)

    def take_records(self, limit: int) -> list[Chunk]:
        """Up to ``limit`` buffered records, as chunks of one partition each (in fetch order).
        Records whose locks ran out while they waited here are dropped, not handed out: the broker
        has given them back to the group (:data:`LOCK_MARGIN_MS` before the end, so that the
        application has some time to acknowledge them)."""
        out: list[Chunk] = []
        now = self._now()
        while self.buffer and limit > 0:
            chunk = self.buffer[0]
            if chunk.expires_at is not None and now >= chunk.expires_at - LOCK_MARGIN_MS:
                self.buffer.popleft()
                self.expired_unused += chunk.left()
                log.warning("%d record(s) of %s-%d waited for poll() until their acquisition lock ran out; "
                            "the broker delivers them again", chunk.left(), chunk.partition.topic,
                            chunk.partition.partition)
                continue
            if chunk.raw is not None:
                self._decode(chunk)
                if not chunk.records:  # only gaps, or nothing readable
                    self.buffer.popleft()
                    continue
            part = chunk.records[chunk.taken:chunk.taken + limit]
            chunk.taken += len(part)
            limit -= len(part)
            out.append(Chunk(chunk.partition, chunk.node, part))
            if chunk.taken >= len(chunk.records):
                self.buffer.popleft()
        return out

    def drop_buffer(self) -> dict[TopicPartition, tuple[int, TopicIdPartition | None, list[int]]]:
        """Give up what is buffered (unsubscribe, close): per partition its node, id (if known
        here) and the offsets acquired and not handed out, to release."""
        left: dict[TopicPartition, tuple[int, TopicIdPartition | None, list[int]]] = {}
        for c in self.buffer:
            if c.raw is not None:
                offsets = [o for r in c.raw[1] for o in range(r.first_offset, r.last_offset + 1)]
            else:
                offsets = [r.offset for r in c.records[c.taken:]]
            if offsets:
                node, tip, before = left.get(c.partition, (c.node, c.raw[2] if c.raw else None, []))
                left[c.partition] = (node, tip or (c.raw[2] if c.raw else None), before + offsets)
        self.buffer.clear()
        return left

    def in_flight(self) -> bool:
        return any(s.in_flight for s in self.sessions.values())

    # -- acknowledgements ---------------------------------------------------------------------
    def queue_acks(self, node: int, acks: Acks, ticket: int) -> None:
        """Acknowledgements to send to ``node`` with its next request."""
        self._pending_since.setdefault(node, self._now())
        pending = self.pending.setdefault(node, {})
        for tp, (tip, offsets) in acks.items():
            if tp in pending:
                pending[tp][1].update(offsets)
            else:
                pending[tp] = (tip, dict(offsets))
        self._pending_ticket[node] = max(ticket, self._pending_ticket.get(node, 0))

    def send_acks(self, made_before: int | None = None) -> None:
        """Send every node's pending acknowledgements that can go now, in a ShareAcknowledge (with
        ``made_before``: only where the oldest were made then or before); those of a node with a
        request on its way wait for its answer."""
        for node in list(self.pending):
            session = self.sessions.get(node)
            if session is not None and (session.in_flight or not self.client.ready(node)):
                continue  # after its answer, or once connected (a dropped connection fails the acks then)
            if made_before is not None and self._pending_since.get(node, made_before) > made_before:
                continue  # to ride on the next fetch
            acks = self._take_pending(node)
            ticket = self._pending_ticket.pop(node, 0)
            if session is None:
                self._fail_acks(acks, ticket, AcknowledgementFailedError(
                    ErrorCode.SHARE_SESSION_NOT_FOUND, f"no share session with broker {node}"))
                continue
            request = session.acknowledge(_batches(acks))
            if request is None:
                self._fail_acks(acks, ticket, AcknowledgementFailedError(
                    ErrorCode.SHARE_SESSION_NOT_FOUND, f"the share session with broker {node} ended: the records "
                    "were released to the group"))
                continue
            self._send(_Sent(node, request, acks, ticket, fetching=False, ack_only=True))

    def _take_pending(self, node: int) -> Acks:
        self._pending_since.pop(node, None)
        return self.pending.pop(node, {})

    def _fail_acks(self, acks: Acks, ticket: int, error: GroupClientError) -> None:
        for tp, (_, offsets) in acks.items():
            self.outcomes.append(AckOutcome(tp, frozenset(offsets), _renews(offsets), error, ticket))

    # -- fetching -----------------------------------------------------------------------------
    def fetch(self, wanted: dict[int, dict[TopicPartition, TopicIdPartition]], acks_only: bool = False) -> None:
        """Send a ShareFetch to each node in ``wanted`` (its partitions) with no request on its
        way, carrying its pending acknowledgements (``acks_only``: only to the nodes that have
        some); and one that only forgets, to a node whose session still holds partitions no
        longer wanted."""
        nodes = sorted(n for n in wanted if not acks_only or n in self.pending)
        if self.config.acquire_mode == ShareAcquireMode.RECORD_LIMIT and nodes:
            # at most max_records records in all, as Java's: one leader acquires at a time, in turn
            self._turn = (self._turn + 1) % len(nodes)
            nodes = nodes[self._turn:self._turn + 1]
        now = self._now()
        for node in nodes:
            session = self.sessions.get(node)
            if session is None or not session.backing_off(now):
                self._fetch_from(node, wanted[node])
        for node, session in self.sessions.items():
            if node not in wanted and session.is_open and session.partitions and not session.in_flight:
                self._fetch_from(node, {})

    def _fetch_from(self, node: int, parts: dict[TopicPartition, TopicIdPartition]) -> None:
        session = self.sessions.get(node)
        if session is None:
            session = self.sessions[node] = ShareSession(node)
        if session.in_flight or not self.client.ready(node):
            return
        acks = self._take_pending(node)
        ticket = self._pending_ticket.pop(node, 0)
        if acks and not session.is_open:
            # a new session's first fetch cannot carry them: the records were released with the old
            self._fail_acks(acks, ticket, AcknowledgementFailedError(
                ErrorCode.SHARE_SESSION_NOT_FOUND, f"the share session with broker {node} ended before these "
                "acknowledgements could be sent: its records went back to the group"))
            acks = {}
        request = session.fetch(parts, _batches(acks))
        self._send(_Sent(node, request, acks, ticket, fetching=bool(parts) and not request.renews))

    def close_sessions(self, acks_by_node: dict[int, tuple[Acks, int]]) -> list[Any]:
        """Close every open session (epoch -1), acknowledging ``acks_by_node`` on the way: the
        futures of the ShareAcknowledges sent."""
        futures = []
        for node, session in self.sessions.items():
            acks, ticket = acks_by_node.get(node, ({}, 0))
            if not session.is_open or session.in_flight:
                if acks:
                    self._fail_acks(acks, ticket, AcknowledgementFailedError(
                        ErrorCode.SHARE_SESSION_NOT_FOUND, f"no open share session with broker {node}"))
                continue
            session.close()
            request = session.acknowledge(_batches(acks))
            if request is not None:
                futures.append(self._send(_Sent(node, request, acks, ticket, fetching=False, ack_only=True)))
        return futures

    def _send(self, sent: _Sent) -> Any:
        sent.sent_at = self._now()
        c = self.config
        r = sent.request
        session = self.sessions[sent.node]
        api = ApiKey.SHARE_ACKNOWLEDGE if sent.ack_only else ApiKey.SHARE_FETCH
        version = self.client.version_for(sent.node, api)
        if r.renews and version is not None and version < 2:
            # RENEW is ShareFetch/ShareAcknowledge v2 (Kafka 4.2): the acknowledgements fail here
            self._fail_acks(sent.acks, sent.ticket, AcknowledgementFailedError(
                ErrorCode.UNSUPPORTED_VERSION, f"broker {sent.node} has {api_label(api)} v{version}, and RENEW "
                "needs v2 (Kafka 4.2 or later)"))
            return RequestFuture.failed_with(NodeNotReadyError("not sent"))
        session.in_flight = True
        if sent.ack_only:
            def build(version: int) -> Any:
                return ShareAcknowledgeRequest(
                    version=version, group_id=c.group_id, member_id=c.member_id, share_session_epoch=r.epoch,
                    is_renew_ack=r.renews, topics=r.acknowledge_topics())
            future = self.client.send(sent.node, ShareAcknowledgeRequest, ShareAcknowledgeResponse, build)
        else:
            fetching, asked = sent.fetching, self.fetch_records

            def build(version: int) -> Any:
                return ShareFetchRequest(
                    version=version, group_id=c.group_id, member_id=c.member_id, share_session_epoch=r.epoch,
                    max_wait_ms=c.max_wait_ms if fetching else 0, min_bytes=c.min_bytes if fetching else 0,
                    max_bytes=c.max_bytes if fetching else 0, max_records=asked if fetching else 0,
                    batch_size=c.max_records if fetching else 0, share_acquire_mode=c.acquire_mode,
                    is_renew_ack=r.renews, topics=r.fetch_topics(),
                    forgotten_topics_data=r.forgotten_topics())
            future = self.client.send(sent.node, ShareFetchRequest, ShareFetchResponse, build)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s to broker %d: epoch %d, adds %d, forgets %d, acknowledges %s%s",
                      "ShareAcknowledge" if sent.ack_only else "ShareFetch", sent.node, r.epoch, len(r.added),
                      len(r.forgotten), {f"{tp.topic}-{tp.partition}": len(a[1]) for tp, a in sent.acks.items()},
                      "" if sent.ack_only or sent.fetching else " (no records asked)")
        future.add_callback(lambda response: self._queue(sent, response, None))
        future.add_errback(lambda exc: self._queue(sent, None, exc))
        return future

    def _queue(self, sent: _Sent, response: Any, error: BaseException | None) -> None:
        """Either thread: keep the answer for the application thread."""
        with self._answers_lock:
            self._answers.append((sent, response, error))
        self.client.interrupt()

    # -- answers (application thread) ---------------------------------------------------------
    def handle_answers(self) -> int:
        """Take the answers that came: records into the buffer, outcomes of acknowledgements,
        sessions' epochs.  The number of answers taken.  An answer that cannot be handled (a bug
        of groupclient's) is raised after the others are taken."""
        with self._answers_lock:
            answers = list(self._answers)
            self._answers.clear()
        failure: BaseException | None = None
        for sent, response, error in answers:
            session = self.sessions[sent.node]
            session.in_flight = False
            try:
                if error is not None:
                    self._take_failure(session, sent, error)
                else:
                    self._take_answer(session, sent, response)
            except Exception as exc:  # the rest of the answers are still taken
                log.exception("handling an answer of broker %d failed", sent.node)
                failure = failure or exc
        if failure is not None:
            raise failure
        return len(answers)

    def _take_failure(self, session: ShareSession, sent: _Sent, error: BaseException) -> None:
        """The request got no answer: a request never sent (the node not ready) changes nothing;
        else the broker ended the session with the connection."""
        if isinstance(error, NodeNotReadyError):
            self._fail_acks(sent.acks, sent.ticket, _failed_ack(error, sent.node))
            return
        session.failed()
        session.back_off(self._now() + self.config.retry_backoff_ms)
        self._fail_acks(sent.acks, sent.ticket, _failed_ack(error, sent.node))
        if isinstance(error, BrokerError) and error.code == ErrorCode.UNSUPPORTED_VERSION:
            self.problems.errors.append(error)
        else:
            log.info("share session with broker %d: request failed (%s); a new session follows", sent.node, error)

    def _now(self) -> int:
        return self.client.clock.monotonic_ms()

    def _take_answer(self, session: ShareSession, sent: _Sent, response: Any) -> None:
        code = response.error_code
        if log.isEnabledFor(logging.DEBUG):
            log.debug("broker %d answered epoch %d: %s; %s", sent.node, sent.request.epoch, error_name(code), [
                (p.partition_index, error_name(p.error_code), error_name(getattr(p, "acknowledge_error_code", 0)),
                 [(a.first_offset, a.last_offset, a.delivery_count) for a in getattr(p, "acquired_records", [])])
                for t in response.responses for p in t.partitions])
        fetch = isinstance(response, ShareFetchResponse)
        api = ApiKey.SHARE_FETCH if fetch else ApiKey.SHARE_ACKNOWLEDGE
        if not session.answered(code):
            message = f" ({response.error_message})" if response.error_message else ""
            error = _ack_error(code, f"{api_label(api)} to broker {sent.node}: {error_name(code)}{message}")
            self._fail_acks(sent.acks, sent.ticket, error)
            self._act(action_for(code, api), error)
            session.back_off(self._now() + self.config.retry_backoff_ms)
            return
        lock_ms = getattr(response, "acquisition_lock_timeout_ms", None)
        if lock_ms is not None and lock_ms > 0:
            self.acquisition_lock_timeout_ms = int(lock_ms)
        answered: set[TopicPartition] = set()
        # the partitions an answer may name: the session's, and those the request acknowledged
        named = {tip: tp for tp, (tip, _) in sent.acks.items()}
        named.update((tip, tp) for tp, tip in session.partitions.items())
        troubled = False
        for topic in response.responses:
            for p in topic.partitions:
                tp = named.get((topic.topic_id, p.partition_index))
                if tp is None:
                    continue
                answered.add(tp)
                ack_code = p.acknowledge_error_code if fetch else p.error_code
                if tp in sent.acks:
                    ack_message = p.acknowledge_error_message if fetch else p.error_message
                    offsets = sent.acks[tp][1]
                    outcome = None if ack_code == 0 else _ack_error(
                        ack_code, f"acknowledging {tp.topic}-{tp.partition} at broker {sent.node}"
                        + (f": {ack_message}" if ack_message else ""))
                    self.outcomes.append(AckOutcome(tp, frozenset(offsets), _renews(offsets), outcome, sent.ticket))
                    if action_for(ack_code, ApiKey.SHARE_ACKNOWLEDGE) is Action.REFRESH_METADATA:
                        self.problems.refresh_metadata = True
                if fetch and p.error_code:
                    troubled = True
                    self._act(action_for(p.error_code, api), error_for(
                        p.error_code, api, f"ShareFetch of {tp.topic}-{tp.partition}"
                        + (f": {p.error_message}" if p.error_message else "")))
                elif fetch and p.acquired_records:
                    self._take_records(sent, tp, (topic.topic_id, p.partition_index), p)
        if troubled:  # not again at once: the same answer would come
            session.back_off(self._now() + self.config.retry_backoff_ms)
        missing = {tp: v for tp, v in sent.acks.items() if tp not in answered}
        if missing:  # an answer is owed for every partition acknowledged; none came
            self._fail_acks(missing, sent.ticket, InvalidRecordStateError(
                ErrorCode.INVALID_RECORD_STATE, f"broker {sent.node} did not answer for these acknowledgements"))

    def _act(self, action: Action, error: BaseException) -> None:
        """What an error answer's action asks of the consumer (RETRY: nothing more)."""
        if action is Action.REFRESH_METADATA:
            self.problems.refresh_metadata = True
        elif action is not Action.RETRY and action is not Action.NONE:
            self.problems.errors.append(error)

    def _take_records(self, sent: _Sent, tp: TopicPartition, tip: TopicIdPartition, p: Any) -> None:
        """Buffer the records acquired, to be decoded when a poll takes them."""
        lock = self.acquisition_lock_timeout_ms
        acquired = sum(r.last_offset - r.first_offset + 1 for r in p.acquired_records)
        self.buffer.append(Chunk(tp, sent.node, [], expires_at=None if lock is None else sent.sent_at + lock,
                                 raw=(p.records or b"", list(p.acquired_records), tip), acquired=acquired))

    def _decode(self, chunk: Chunk) -> None:
        """The records of a buffered answer, built; its gaps and unreadable batches acknowledged."""
        assert chunk.raw is not None
        data, ranges, tip = chunk.raw
        chunk.raw = None
        c = self.config
        tp = chunk.partition
        got = acquired_records(data, ranges, tp, c.key_deserializer(tp.topic), c.value_deserializer(tp.topic),
                               c.check_crcs)
        chunk.records = got.records
        self.undeliverable += [(tp, chunk.node, offset) for offset in got.undeliverable]
        self.problems.errors += got.errors
        acks = {o: int(AcknowledgeType.GAP) for o in got.gaps}
        acks.update((o, int(AcknowledgeType.REJECT)) for o in got.rejected)
        if acks:
            self.queue_acks(chunk.node, {chunk.partition: (tip, acks)}, 0)


def api_label(api: ApiKey) -> str:
    return "ShareFetch" if api is ApiKey.SHARE_FETCH else "ShareAcknowledge"


def _renews(offsets: dict[int, int]) -> bool:
    return AcknowledgeType.RENEW in offsets.values()  # compared in C, not a Python step per offset


def _batches(acks: Acks) -> dict[TopicPartition, tuple[TopicIdPartition, list[Batch]]]:
    return {tp: (tip, acknowledgement_batches(offsets)) for tp, (tip, offsets) in acks.items()}


def _ack_error(code: int, what: str) -> GroupClientError:
    if code == ErrorCode.INVALID_RECORD_STATE:
        return InvalidRecordStateError(code, what)
    return AcknowledgementFailedError(code, what)


def _failed_ack(error: BaseException, node: int) -> GroupClientError:
    return AcknowledgementFailedError(
        ErrorCode.NETWORK_EXCEPTION, f"the request to broker {node} failed ({error}): its share session ended, and "
        "the records it held went back to the group")
