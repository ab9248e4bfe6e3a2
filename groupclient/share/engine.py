"""What a ShareConsumer's calls do between the application and the network, on the application
thread: one step of the group and the sessions (:meth:`ShareEngine.step`), the acknowledgements
the application made going out, and their outcomes coming back to the callback and to
``commit_sync``.  The facade (consumer.py) holds the API, its checks and the thread-ownership lock.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from ..clock import Clock, Timer
from ..errors import GroupClientError
from ..member.share_member import ShareGroupMember
from ..network.client import NetworkClient
from ..protocol.share_group import AcknowledgeType, ShareAcquireMode
from ..structs import TopicPartition
from .fetcher import AckOutcome, ShareFetcher
from .in_flight import InFlight
from .session import TopicIdPartition
from .settings import AcknowledgementCommitCallback

log = logging.getLogger("groupclient.share")

POLL_SLICE_MS = 100  # the longest a wait sleeps before looking at the group again
# An application back in poll() within QUICK_GAP_MS of its last records keeps up with the fetches:
# its fetches ask for FETCH_AHEAD_POLLS polls' records (batch_optimized mode; record_limit asks for
# exactly a poll's), and its acknowledgements wait for the next fetch, ACK_LINGER_MS at most.  At
# that pace what is buffered is handed out in well under a second, far within a record's lock.
QUICK_GAP_MS = 50
FETCH_AHEAD_POLLS = 4
ACK_LINGER_MS = 200


@dataclass
class ShareMetrics:
    """Counters of one consumer (``ShareConsumer.metrics()``)."""

    records_consumed: int = 0
    polls: int = 0
    acknowledgements_sent: int = 0
    acknowledgement_errors: int = 0
    commits: int = 0
    by_type: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, float]:
        """The counters by their names (Java's share consumer metrics where it has one)."""
        return {"records-consumed-total": self.records_consumed, "poll-total": self.polls,
                "acknowledgements-send-total": self.acknowledgements_sent,
                "acknowledgements-error-total": self.acknowledgement_errors, "commit-total": self.commits,
                **{f"acknowledgements-{name.lower()}-total": n for name, n in sorted(self.by_type.items())}}


class ShareEngine:
    """The application thread's side of one share consumer."""

    def __init__(self, client: NetworkClient, clock: Clock, member: ShareGroupMember, fetcher: ShareFetcher,
                 in_flight: InFlight, callback: AcknowledgementCommitCallback | None) -> None:
        self.client = client
        self.clock = clock
        self.member = member
        self.fetcher = fetcher
        self.in_flight = in_flight
        self.callback = callback
        self.metrics = ShareMetrics()
        self.tips: dict[TopicPartition, TopicIdPartition] = {}  # every partition assigned so far, by name
        self._tickets = 0
        self._results: dict[int, dict[TopicPartition, GroupClientError | None]] = {}  # commit_sync's, by ticket
        self._waiting: set[int] = set()
        self._for_callback: list[AckOutcome] = []
        self._errors: list[BaseException] = []  # raised by poll(), one per call
        self.in_callback = False
        self.poll_records = 500  # what a poll takes at most (max_poll_records): how far ahead to fetch
        self._handed_at: int | None = None  # when the last poll handed records out
        # wanted()'s last answer, and the (assignment, metadata) versions it was found for
        self._wanted: tuple[tuple[int, int], dict[int, dict[TopicPartition, TopicIdPartition]]] | None = None
        # the application came back to poll() within QUICK_GAP_MS of its last records (and the
        # acquire mode lets a fetch ask for more than a poll's worth)
        self.quick = False

    def poll_started(self, now: int) -> None:
        """The application called poll(): whether it keeps up with the fetches."""
        self.quick = (self._handed_at is not None and now - self._handed_at < QUICK_GAP_MS
                      and self.fetcher.config.acquire_mode == ShareAcquireMode.BATCH_OPTIMIZED)

    def handed_out(self, now: int) -> None:
        """A poll returned records to the application."""
        self._handed_at = now

    # -- the group and the sessions -----------------------------------------------------------
    def wanted(self) -> dict[int, dict[TopicPartition, TopicIdPartition]]:
        """The assigned partitions whose topic and leader are known, by leader; asks for metadata
        about the rest.  The same answer, not to be changed, while neither has moved on."""
        version, assignment = self.member.assignment()
        snapshot = self.client.metadata.snapshot
        if self._wanted is not None and self._wanted[0] == (version, snapshot.version):
            return self._wanted[1]
        names = {topic_id: name for name, topic_id in snapshot.topic_ids.items()}
        by_node: dict[int, dict[TopicPartition, TopicIdPartition]] = {}
        missing = False
        for topic_id, partitions in assignment.items():
            name = names.get(topic_id)
            if name is None:
                missing = True
                continue
            for partition in partitions:
                leader = snapshot.leader_for(name, partition)
                if leader is None or leader < 0:
                    missing = True
                    continue
                tp = TopicPartition(name, partition)
                self.tips[tp] = (topic_id, partition)
                by_node.setdefault(leader, {})[tp] = (topic_id, partition)
        if missing:
            self.client.metadata.request_update()
        else:
            self._wanted = ((version, snapshot.version), by_node)
        return by_node

    def step(self, fetch: bool) -> None:
        """One turn: find the coordinator, refresh metadata, take the answers that came, and send
        what can go: fetches (``fetch``: the application wants records) and acknowledgements."""
        m = self.member
        if m.coordinator_unknown() and not m.coordinator.lookup_wait_ms():
            m.coordinator.lookup()
        self.client.maybe_update_metadata()
        self.take_answers()
        quick = fetch and self.quick
        if fetch and not self.in_flight.renewing():
            buffered = self.fetcher.buffered()
            if quick:
                # an application that keeps up with the fetches: each asks for several polls'
                # records and goes while fewer than that wait, carrying the acknowledgements
                # made meanwhile (a ShareAcknowledge of its own would hold the session up: Kafka
                # writes the share state before it answers)
                self.fetcher.fetch_records = FETCH_AHEAD_POLLS * self.poll_records
                if buffered < FETCH_AHEAD_POLLS * self.poll_records:
                    self.fetcher.fetch(self.wanted())
            else:
                # a fetch goes when fewer records wait than a poll takes, or, with acknowledgements
                # to carry, fewer than two polls' worth: so that acknowledgements ride on fetches
                # while the records acquired ahead stay within two polls
                self.fetcher.fetch_records = self.poll_records
                if buffered < self.poll_records:
                    self.fetcher.fetch(self.wanted())
                elif buffered < 2 * self.poll_records and self.fetcher.pending:
                    self.fetcher.fetch(self.wanted(), acks_only=True)
        # a quick application's acknowledgements wait for the next fetch, ACK_LINGER_MS at most;
        # anyone else's (and a commit's) go now
        self.fetcher.send_acks(self.clock.monotonic_ms() - ACK_LINGER_MS if quick else None)

    def take_answers(self) -> None:
        """The answers that came, and what requests that could not go decided meanwhile."""
        f = self.fetcher
        f.handle_answers()
        for tp, node, offset in f.undeliverable:
            self.in_flight.undeliverable(tp, node, offset)
        f.undeliverable.clear()
        if f.problems.refresh_metadata:
            f.problems.refresh_metadata = False
            self.client.metadata.request_update()
        self._errors += f.problems.errors
        f.problems.errors.clear()
        for outcome in f.outcomes:
            self.metrics.acknowledgements_sent += len(outcome.offsets)
            if outcome.error is not None:
                self.metrics.acknowledgement_errors += len(outcome.offsets)
            if outcome.renewed:
                self.in_flight.renew_answered(outcome.partition, outcome.offsets, outcome.error is None)
            if outcome.ticket in self._waiting:
                self._results.setdefault(outcome.ticket, {})[outcome.partition] = outcome.error
            if self.callback is not None:
                self._for_callback.append(outcome)
        f.outcomes.clear()

    def take_error(self) -> BaseException | None:
        """What poll() raises now: the group's refusal (every time: the member cannot go on),
        else the next error the answers brought (once each)."""
        fatal = self.member.fatal_error
        if fatal is not None:
            return fatal
        error = self.member.take_error()
        if error is not None:
            return error
        return self._errors.pop(0) if self._errors else None

    # -- acknowledgements going out ----------------------------------------------------------------
    def send_acknowledged(self, wait: bool = False) -> tuple[int, set[TopicPartition]] | None:
        """Queue what the application acknowledged (to the brokers its records came from): the
        ticket that commit_sync waits on and the partitions it covers, or None when there was
        nothing."""
        taken = self.in_flight.take()
        self.in_flight.forget_settled()
        if not taken:
            return None
        self._tickets += 1
        ticket = self._tickets
        by_node: dict[int, dict[TopicPartition, tuple[TopicIdPartition, dict[int, int]]]] = {}
        for (tp, node), offsets in taken.items():
            by_node.setdefault(node, {})[tp] = (self.tips[tp], offsets)
            for kind, n in collections.Counter(offsets.values()).items():
                name = AcknowledgeType(kind).name
                self.metrics.by_type[name] = self.metrics.by_type.get(name, 0) + n
        for node, acks in by_node.items():
            self.fetcher.queue_acks(node, acks, ticket)
        if wait:
            self._waiting.add(ticket)
            self._results[ticket] = {}
        return ticket, {tp for tp, _ in taken}

    def wait_for(self, ticket: int, partitions: set[TopicPartition], timer: Timer,
                 wake: Callable[[], None]) -> dict[TopicPartition, GroupClientError | None] | None:
        """Wait until each of ``partitions`` has an outcome for ``ticket``; None if the timer ran
        out first."""
        try:
            while True:
                wake()
                self.step(fetch=False)
                results = self._results.get(ticket, {})
                if partitions <= set(results):
                    return dict(results)
                if timer.expired():
                    return None
                self.client.poll_until(None, Timer(self.clock, min(timer.remaining_ms(), POLL_SLICE_MS)), wakeup=False)
        finally:
            self._waiting.discard(ticket)
            self._results.pop(ticket, None)

    def run_callbacks(self) -> None:
        """Tell the callback each outcome (application thread; what it raises is logged).  While
        it runs, the consumer's calls raise IllegalStateError (``in_callback``), as Java's do."""
        outcomes, self._for_callback = self._for_callback, []
        callback = self.callback
        if callback is None:
            return
        self.in_callback = True
        try:
            for outcome in outcomes:
                try:
                    callback({outcome.partition: set(outcome.offsets)}, outcome.error)
                except Exception:  # the application's own bug: logged, as Java does
                    log.exception("the acknowledgement commit callback raised")
        finally:
            self.in_callback = False

