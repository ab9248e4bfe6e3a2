"""What the consumer is subscribed to, what it owns, and where it is in each partition.

Shared by the application thread and the heartbeat thread, so guarded by one lock that is only
held for bookkeeping (never around I/O or user callbacks).
"""

from __future__ import annotations

import enum
import itertools
import re
import threading
from dataclasses import dataclass, field
from typing import Protocol

from ..structs import OffsetAndMetadata, TopicPartition

from ..errors import ConfigurationError, IllegalStateError, UnassignedPartitionError


class TopicPattern(Protocol):
    """A compiled topic pattern: Python's ``re`` (the classic protocol, no group) or RE2/J's
    (the consumer protocol, protocol/re2j.py); a topic is subscribed when its whole name matches."""

    def fullmatch(self, text: str) -> object: ...


def python_pattern(pattern: str) -> TopicPattern:
    """``pattern`` compiled with Python's ``re``, or ConfigurationError."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigurationError(f"bad topic pattern {pattern!r}: {exc}") from None


class SubscriptionType(enum.Enum):
    NONE = "none"
    TOPICS = "topics"
    PATTERN = "pattern"
    USER_ASSIGNED = "user-assigned"


# every PartitionState gets its own number: a partition lost and assigned again is a new one
_INCARNATIONS = itertools.count(1)

# (incarnation, voids) of a partition when records were drained from the fetcher: records handed
# out later (groupclient.aio buffers them) are still the partition's next ones only while it is
# the same (see SubscriptionState.take_delivery)
DeliveryTag = tuple[int, int]


@dataclass
class PartitionState:
    position: int | None = None  # next offset to fetch; None until known
    # the next offset the application has not been given: what a commit without offsets covers.
    # Behind ``position`` while an iterator still holds records that were fetched but not yielded.
    delivered: int | None = None
    leader_epoch: int | None = None
    # the leader epoch of the last record given to the application, committed with ``delivered``
    # as kafka-python and Java do (KIP-320)
    delivered_epoch: int | None = None
    paused: bool = False
    # not fetched nor drained for now, without the application's pause: groupclient.aio holds a
    # partition whose records it already buffers plenty of
    held: bool = False
    reset_requested: str | None = None  # "earliest" / "latest" when the position must be reset
    high_watermark: int | None = None
    last_stable_offset: int | None = None
    last_fetch_ms: int | None = None  # when the last fetch answer for the partition came
    incarnation: int = field(default_factory=lambda: next(_INCARNATIONS))
    # the application's seeks, offset resets and fences (a revocation under way): each voids the
    # records drained before it
    voids: int = 0


class SubscriptionState:
    def __init__(self, default_reset: str, read_committed: bool = False) -> None:
        """``read_committed``: lag is counted to the last stable offset, as the Java client counts
        it under that isolation level (records past it cannot be read yet)."""
        self._lock = threading.Lock()
        self.default_reset = default_reset
        self.read_committed = read_committed
        self.type = SubscriptionType.NONE
        self.topics: set[str] = set()
        self.pattern: TopicPattern | None = None
        self.group_topics: set[str] = set()  # the union of all members' topics, known to the leader
        self._assignment: dict[TopicPartition, PartitionState] = {}
        # partitions the heartbeat thread took away (lost lease, fenced generation, poll
        # timeout), until the listener hears of it
        self._lost: set[TopicPartition] = set()
        self._losses = 0  # how many times mark_lost ran: an assignment read before one is void
        self._last_loss = 0  # the last of the member's numbered losses applied (mark_lost)
        self.listener: object | None = None

    # -- subscribing ---------------------------------------------------------------------
    def subscribe(self, topics: set[str] | None, pattern: TopicPattern | None) -> None:
        with self._lock:
            if self.type is SubscriptionType.USER_ASSIGNED:
                raise IllegalStateError("subscribe() after assign(): call unsubscribe() first")
            if pattern is not None:
                self.type, self.pattern, self.topics = SubscriptionType.PATTERN, pattern, set()
            else:
                self.type, self.pattern, self.topics = SubscriptionType.TOPICS, None, set(topics or ())

    def match_pattern(self, available: set[str]) -> bool:
        """Update the topics of a pattern subscription; True if they changed."""
        with self._lock:
            if self.pattern is None:
                return False
            matched = {t for t in available if self.pattern.fullmatch(t) and not t.startswith("__")}
            changed = matched != self.topics
            self.topics = matched
            return changed

    def assign_from_user(self, partitions: set[TopicPartition]) -> None:
        with self._lock:
            if self.type in (SubscriptionType.TOPICS, SubscriptionType.PATTERN):
                raise IllegalStateError("assign() after subscribe(): call unsubscribe() first")
            self.type = SubscriptionType.USER_ASSIGNED
            self._assignment = {tp: self._assignment.get(tp, PartitionState()) for tp in partitions}
            self.topics = {tp.topic for tp in partitions}

    def unsubscribe(self) -> None:
        with self._lock:
            self.type, self.topics, self.pattern = SubscriptionType.NONE, set(), None
            self._assignment = {}
            self.listener = None

    def is_group_subscribed(self) -> bool:
        return self.type in (SubscriptionType.TOPICS, SubscriptionType.PATTERN)

    # -- assignment ----------------------------------------------------------------------
    def assigned(self) -> set[TopicPartition]:
        with self._lock:
            return set(self._assignment)

    def set_group_assignment(self, partitions: set[TopicPartition]) -> None:
        with self._lock:
            self._assignment = {tp: self._assignment.get(tp, PartitionState()) for tp in partitions}

    def losses(self) -> int:
        with self._lock:
            return self._losses

    def apply_group_assignment(self, partitions: set[TopicPartition], losses: int) -> bool:
        """Own ``partitions`` (a new generation's assignment), unless the heartbeat thread has
        dropped the partitions since ``losses`` was read: that assignment may be void already,
        and what was dropped must not come back but through a new join.  Whether it applied."""
        with self._lock:
            if self._losses != losses:
                return False
            self._assignment = {tp: self._assignment.get(tp, PartitionState()) for tp in partitions}
            return True

    def drop_partitions(self, partitions: set[TopicPartition]) -> None:
        """Give these up (revoked); the rest stay as they are, whatever happened meanwhile."""
        with self._lock:
            for tp in partitions:
                self._assignment.pop(tp, None)

    def mark_lost(self, loss: int | None = None) -> set[TopicPartition] | None:
        """Drop the assignment at once (from either thread: lost lease, fenced generation, poll
        timeout).  ``loss`` numbers the member's decision to drop (a consumer-protocol member's):
        each is applied once, by whichever thread comes first, and None is returned to the other
        (without a number, always applied)."""
        with self._lock:
            if loss is not None:
                if loss <= self._last_loss:
                    return None
                self._last_loss = loss
            lost = set(self._assignment)
            self._assignment = {}
            self._lost |= lost
            self._losses += 1
            return lost

    def take_lost(self) -> set[TopicPartition]:
        with self._lock:
            lost, self._lost = self._lost, set()
            return lost

    def is_assigned(self, tp: TopicPartition) -> bool:
        with self._lock:
            return tp in self._assignment

    # -- positions ---------------------------------------------------------------------
    # The heartbeat thread may take every partition away (mark_lost) between any two calls the
    # application thread makes, so each step of poll() that acts on what it looked up is one
    # method here, deciding under the lock (as Java's SubscriptionState.maybeSeekUnvalidated).
    def _state(self, tp: TopicPartition) -> PartitionState:
        state = self._assignment.get(tp)
        if state is None:
            if tp in self._lost:
                raise UnassignedPartitionError(
                    f"{tp} is no longer assigned to this consumer: it was lost (its session, generation "
                    "or poll interval ended); on_partitions_lost follows from the next poll()")
            raise UnassignedPartitionError(f"{tp} is not assigned to this consumer")
        return state

    def _state_unless_lost(self, tp: TopicPartition) -> PartitionState | None:
        """For the application's seek() and pause(): a partition the heartbeat thread has just
        taken away (and the listener not yet heard of) is no error, there is nothing to do;
        one that was never assigned is."""
        if tp in self._lost and tp not in self._assignment:
            return None
        return self._state(tp)

    def _still_without_position(self, tp: TopicPartition) -> PartitionState | None:
        """The state of a partition still assigned with neither a position nor a pending reset
        (what missing_positions() found), else None."""
        state = self._assignment.get(tp)
        if state is None or state.position is not None or state.reset_requested is not None:
            return None
        return state

    def position(self, tp: TopicPartition) -> int | None:
        with self._lock:
            return self._state(tp).position

    def position_if_assigned(self, tp: TopicPartition) -> int | None:
        """The position, or None if unknown or no longer assigned."""
        with self._lock:
            state = self._assignment.get(tp)
            return None if state is None else state.position

    def seek(self, tp: TopicPartition, offset: int, leader_epoch: int | None = None) -> None:
        """The application's seek()."""
        with self._lock:
            state = self._state_unless_lost(tp)
            if state is not None:
                _seek(state, offset, leader_epoch)
                state.voids += 1

    def seek_to_committed(self, tp: TopicPartition, offset: int, leader_epoch: int | None) -> bool:
        """Start from the committed offset, unless the partition was taken away or given a
        position (or a reset) since it was found without one; whether it did."""
        with self._lock:
            state = self._still_without_position(tp)
            if state is not None:
                _seek(state, offset, leader_epoch)
            return state is not None

    def complete_reset(self, tp: TopicPartition, strategy: str, offset: int) -> bool:
        """Apply the offset a reset looked up, if the partition still awaits that very reset
        (not taken away, not seeked, not reset another way meanwhile); whether it did."""
        with self._lock:
            state = self._assignment.get(tp)
            if state is None or state.reset_requested != strategy:
                return False
            _seek(state, offset, None)
            return True

    def advance(self, tp: TopicPartition, expected: int, new_position: int, delivered: bool = True,
                epoch: int | None = None) -> DeliveryTag | None:
        """Move the position if nobody seeked meanwhile; None if the records are stale, else the
        partition's :data:`DeliveryTag` at this instant.

        ``delivered``: the records go to the application now (poll); an iterator passes False
        and reports each record it yields through :meth:`mark_delivered`."""
        with self._lock:
            state = self._assignment.get(tp)
            if state is None or state.position != expected:
                return None
            state.position = new_position
            if delivered:
                state.delivered, state.delivered_epoch = new_position, epoch
            return state.incarnation, state.voids

    def fence(self, partitions: set[TopicPartition]) -> None:
        """These partitions are about to be given up (revoked, lost, the consumer closing):
        records drained from them before are not handed out any more.  Called before the commit
        of what was consumed, so that it covers everything handed out."""
        with self._lock:
            for tp in partitions:
                state = self._assignment.get(tp)
                if state is not None:
                    state.voids += 1

    def delivered(self, tp: TopicPartition) -> int | None:
        """The offset of the next record to hand out (None while the position is unknown)."""
        with self._lock:
            state = self._state_unless_lost(tp)
            return None if state is None else state.delivered

    def take_delivery(self, tp: TopicPartition, tag: DeliveryTag, first: int, last: int, epoch: int | None) -> bool:
        """Records ``first``..``last`` drained with ``tag`` go to the application now, if the
        partition is still the same (not lost, reassigned nor seeked by the application since)
        and they were not given already; whether they do.  Commits then cover them."""
        with self._lock:
            state = self._assignment.get(tp)
            if state is None or (state.incarnation, state.voids) != tag:
                return False
            if state.delivered is not None:
                if first < state.delivered:  # given already, or not the records that come next
                    return False
                state.delivered, state.delivered_epoch = last + 1, epoch
            return True

    def mark_delivered(self, tp: TopicPartition, offset: int, epoch: int | None = None) -> bool:
        """The application got the record at ``offset``; False if it is no longer this
        consumer's to give (revoked, or seeked past)."""
        with self._lock:
            state = self._assignment.get(tp)
            if state is None or state.delivered is None or offset < state.delivered:
                return False
            state.delivered, state.delivered_epoch = offset + 1, epoch
            return True

    def request_resets(self, partitions: list[TopicPartition], strategy: str) -> None:
        """The application's seek_to_beginning() / seek_to_end(): the partitions given, or all
        owned if none is; none of them unless every one is assigned (or just lost)."""
        with self._lock:
            if not partitions and not self._assignment and not self._lost:
                raise UnassignedPartitionError("no partitions are assigned to this consumer")
            unassigned = [tp for tp in partitions if tp not in self._assignment and tp not in self._lost]
            if unassigned:
                raise UnassignedPartitionError(f"not assigned to this consumer: {sorted(unassigned)}")
            for tp in partitions or list(self._assignment):
                state = self._assignment.get(tp)
                if state is not None:
                    _request_reset(state, strategy)

    def reset_if_missing(self, tp: TopicPartition) -> bool:
        """Reset to auto_offset_reset a partition still assigned and still without a position
        (no committed offset was found for it); whether it did."""
        with self._lock:
            state = self._still_without_position(tp)
            if state is not None:
                _request_reset(state, self.default_reset)
            return state is not None

    def reset_if_at(self, tp: TopicPartition, position: int) -> bool:
        """Reset a partition whose fetch at ``position`` was out of range, if it is still
        assigned and still there (not seeked meanwhile); whether it did."""
        with self._lock:
            state = self._assignment.get(tp)
            if state is None or state.position != position:
                return False
            _request_reset(state, self.default_reset)
            return True

    def set_high_watermark(self, tp: TopicPartition, hw: int, last_stable: int | None = None,
                           now_ms: int | None = None) -> None:
        """What a fetch answer said of the partition's end (and when it came)."""
        with self._lock:
            state = self._assignment.get(tp)
            if state is not None:
                state.high_watermark = hw
                if last_stable is not None and last_stable >= 0:
                    state.last_stable_offset = last_stable
                if now_ms is not None:
                    state.last_fetch_ms = now_ms

    def last_stable_offset(self, tp: TopicPartition) -> int | None:
        """The last stable offset the last fetch answer gave (None as for high_watermark)."""
        with self._lock:
            state = self._state_unless_lost(tp)
            return None if state is None else state.last_stable_offset

    def last_fetch_ms(self, tp: TopicPartition) -> int | None:
        """When (the consumer clock's wall time) the last fetch answer for it came."""
        with self._lock:
            state = self._state_unless_lost(tp)
            return None if state is None else state.last_fetch_ms

    def high_watermark(self, tp: TopicPartition) -> int | None:
        """None while unknown, and for a partition just lost (as for one not yet fetched)."""
        with self._lock:
            state = self._state_unless_lost(tp)
            return None if state is None else state.high_watermark

    def lags(self) -> list[int]:
        """Records behind the end, per owned partition where both are known: the high watermark,
        or under read_committed the last stable offset (Java's partitionLag)."""
        return list(self.lags_by_partition().values())

    def lags_by_partition(self) -> dict[TopicPartition, int]:
        """:meth:`lags` by partition (any thread: OpenTelemetry's gauges read it)."""
        with self._lock:
            lags = {}
            for tp, s in self._assignment.items():
                end = s.last_stable_offset if self.read_committed and s.last_stable_offset is not None \
                    else s.high_watermark
                if s.position is not None and end is not None:
                    lags[tp] = max(0, end - s.position)
            return lags

    def missing_positions(self) -> set[TopicPartition]:
        """Partitions with neither a position nor a pending reset (need committed offsets)."""
        with self._lock:
            return {tp for tp, s in self._assignment.items() if s.position is None and s.reset_requested is None}

    def resets_needed(self) -> dict[TopicPartition, str]:
        with self._lock:
            return {tp: s.reset_requested for tp, s in self._assignment.items() if s.reset_requested}

    def fetchable(self) -> list[tuple[TopicPartition, int]]:
        with self._lock:
            return [(tp, s.position) for tp, s in self._assignment.items()
                    if s.position is not None and not s.paused and not s.held]

    def consumed_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """What the application was given of each owned partition, as offsets to commit."""
        with self._lock:
            return {tp: OffsetAndMetadata(s.delivered, "", _epoch(s.delivered_epoch, s.leader_epoch))
                    for tp, s in self._assignment.items() if s.delivered is not None}

    def has_lost(self) -> bool:
        """Partitions were taken away outside a rebalance and the listener has not heard yet."""
        with self._lock:
            return bool(self._lost)

    # -- pausing -------------------------------------------------------------------------
    def pause(self, tp: TopicPartition) -> None:
        with self._lock:
            state = self._state_unless_lost(tp)
            if state is not None:
                state.paused = True

    def resume(self, tp: TopicPartition) -> None:
        with self._lock:
            state = self._state_unless_lost(tp)
            if state is not None:
                state.paused = False

    def paused(self) -> set[TopicPartition]:
        with self._lock:
            return {tp for tp, s in self._assignment.items() if s.paused}

    def hold(self, partitions: set[TopicPartition]) -> None:
        """Fetch and drain none of these (and every other again) until the next hold()."""
        with self._lock:
            for tp, state in self._assignment.items():
                state.held = tp in partitions

    def not_drained(self) -> set[TopicPartition]:
        """The partitions whose fetched records stay in the fetcher: paused or held."""
        with self._lock:
            return {tp for tp, s in self._assignment.items() if s.paused or s.held}


def _seek(state: PartitionState, offset: int, leader_epoch: int | None) -> None:
    state.position, state.leader_epoch, state.reset_requested = offset, leader_epoch, None
    state.delivered, state.delivered_epoch = offset, leader_epoch


def _request_reset(state: PartitionState, strategy: str) -> None:
    state.reset_requested = strategy
    state.position = state.delivered = None
    state.voids += 1  # records drained before the reset are not the ones that come next


def _epoch(*candidates: int | None) -> int:
    """The first known leader epoch (records of old message formats have -1), else -1."""
    for epoch in candidates:
        if epoch is not None and epoch >= 0:
            return epoch
    return -1
