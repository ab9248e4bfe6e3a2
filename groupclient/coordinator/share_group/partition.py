"""One share-partition (KIP-932): the records of one partition a share group's members take turns
on, with the rules of Kafka's ``SharePartition``.  Sans-IO: every call takes ``now``; no lock, no
I/O (the coordinator that owns it calls it on its event loop, and journals :meth:`snapshot`).

The partition keeps a window of offsets, from the **start offset** (the first not yet finished)
to ``next_offset`` (the first never handed out).  Each offset in the window is in one state:

- AVAILABLE, to be delivered (again);
- ACQUIRED by one member until its lock runs out (``share.record.lock.duration.ms``);
- ACKNOWLEDGED (accepted) or ARCHIVED (rejected, a gap, or out of deliveries): finished.

Transitions (Kafka's ``RecordState``): AVAILABLE → ACQUIRED, which alone counts a delivery;
ACQUIRED → AVAILABLE (released, its lock ran out, its session closed), ACKNOWLEDGED or ARCHIVED.
A record delivered ``share.delivery.count.limit`` times is archived instead of becoming
AVAILABLE again.  The start offset moves past every finished offset at its head.

**Acquiring** hands out the lowest AVAILABLE offsets first, then new records of the log, within
the member's ``max_records`` (whole log batches in ``batch_optimized`` mode, exactly in
``record_limit`` mode) and the partition's ``share.partition.max.record.locks``.  Records near
their last delivery are handed out in smaller groups, and the last delivery alone, as Kafka does,
so one poison record does not take its neighbours down with it.

**Acknowledging** is all or nothing per partition: the first batch that cannot apply refuses the
whole request for this partition with Kafka's error and message, and nothing of it is kept.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ...error_codes import ErrorCode
from ...protocol.share_group import AcknowledgeType, ShareAcquireMode

NO_MEMBER = ""


class RecordState(enum.IntEnum):
    """An offset's state, by Kafka's ids (also what its share coordinator persists)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


FINISHED = frozenset({RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})
_ACKNOWLEDGED_AS = {AcknowledgeType.GAP: RecordState.ARCHIVED, AcknowledgeType.ACCEPT: RecordState.ACKNOWLEDGED,
                    AcknowledgeType.RELEASE: RecordState.AVAILABLE, AcknowledgeType.REJECT: RecordState.ARCHIVED}


@dataclass(frozen=True)
class ShareSettings:
    """What a share-partition is held to: the group's share.* configs (Kafka's defaults here)."""

    record_lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    max_record_locks: int = 2000
    renew_acknowledge_enable: bool = True


@dataclass
class InFlight:
    """One offset of the window: its state, deliveries so far, holder and lock deadline, and the
    range it was acquired with (Kafka's in-flight batch: what its first redeliveries keep together)."""

    state: RecordState
    deliveries: int
    member: str = NO_MEMBER
    locked_until: int | None = None
    unit: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class Acquired:
    """A range of offsets acquired at one delivery count (ShareFetch's ``AcquiredRecords``)."""

    first: int
    last: int
    deliveries: int


@dataclass(frozen=True)
class AckBatch:
    """One acknowledgement batch as the request carries it: a range and one type for all of it, or
    one per offset."""

    first: int
    last: int
    types: tuple[int, ...]


class AcknowledgeError(Exception):
    """A partition's acknowledgements refused: Kafka's error code and message (None: code only)."""

    def __init__(self, error: ErrorCode, message: str | None) -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message


def _record_state(message: str) -> AcknowledgeError:
    return AcknowledgeError(ErrorCode.INVALID_RECORD_STATE, message)


NOT_IN_CACHE = "Batch record not found. The request batch offsets are not found in the cache."
FIRST_PAST = "Batch record not found. The first offset in request is past acquired records."
LAST_PAST = "Batch record not found. The last offset in request is past acquired records."
BATCH_NOT_ACQUIRED = "The batch cannot be acknowledged. The batch is not in the acquired state."
OFFSET_NOT_ACQUIRED = "The offset cannot be acknowledged. The offset is not acquired."
NOT_BATCH_OWNER = "Member is not the owner of batch record"
NOT_OFFSET_OWNER = "Member is not the owner of offset"
RENEW_DISABLED = "Renewing acquisition locks is not enabled for the group."
IN_TRANSITION = "The record state is invalid. The acknowledgement of delivery could not be completed."


class SharePartition:
    """One partition's records as one share group delivers them (the module's rules)."""

    def __init__(self, start_offset: int, settings: ShareSettings | None = None) -> None:
        self.settings = settings or ShareSettings()
        self.start_offset = start_offset
        self.next_offset = start_offset
        self.window: dict[int, InFlight] = {}  # every offset in [start_offset, next_offset)
        # the start offset Kafka's share coordinator reports (DescribeShareGroupOffsets): written
        # with each settling change, as it stood before that change moved it; -1 before the first
        self.reported_start = -1

    # -- reading -----------------------------------------------------------------------------------
    def in_flight(self) -> int:
        """Offsets held in the window (Kafka counts finished ones not yet passed too)."""
        return self.next_offset - self.start_offset

    def finished_in_window(self) -> int:
        """Finished offsets past the start offset (Kafka's delivery-complete count, for lag)."""
        return sum(1 for record in self.window.values() if record.state in FINISHED)

    def lag(self, log_end: int) -> int:
        """Records not yet finished up to ``log_end`` (DescribeShareGroupOffsets' lag)."""
        return max(0, log_end - self.start_offset - self.finished_in_window())

    def acquired_by(self, member: str) -> list[int]:
        """The offsets a member holds now."""
        return [o for o, r in sorted(self.window.items()) if r.state is RecordState.ACQUIRED and r.member == member]

    def fetch_offset(self, now: int) -> int:
        """Where the log is read from for the next acquisition: the lowest AVAILABLE offset, else
        the first never handed out (Kafka's ``nextFetchOffset``)."""
        self.expire(now)
        available = [o for o, r in self.window.items() if r.state is RecordState.AVAILABLE]
        return min(available, default=self.next_offset)

    def next_lock_deadline(self) -> int | None:
        """When the first lock runs out (None: nothing acquired)."""
        deadlines = [r.locked_until for r in self.window.values() if r.locked_until is not None]
        return min(deadlines) if deadlines else None

    # -- what is kept -----------------------------------------------------------------------------
    def persisted(self) -> tuple[int, list[tuple[int, int, int, int]]]:
        """What survives a restart, as Kafka's share coordinator keeps it: the start offset, and the
        window as ranges of (first, last, state, deliveries).  An acquisition is not kept (an
        acquired record is kept as it was before), and neither is the tail of records never
        delivered but by a lock that is still held: after a restart they are new records again."""
        kept: list[tuple[int, int, int, int]] = []
        for offset in range(self.start_offset, self.next_offset):
            record = self.window[offset]
            state, count = ((RecordState.AVAILABLE, record.deliveries - 1) if record.state is RecordState.ACQUIRED
                            else (record.state, record.deliveries))
            if kept and kept[-1][1] == offset - 1 and kept[-1][2:] == (int(state), count):
                kept[-1] = (kept[-1][0], offset, int(state), count)
            else:
                kept.append((offset, offset, int(state), count))
        while kept and kept[-1][2:] == (int(RecordState.AVAILABLE), 0):
            kept.pop()
        return self.start_offset, kept

    @classmethod
    def restored(cls, start_offset: int, ranges: Iterable[Sequence[int]], settings: ShareSettings) -> SharePartition:
        """A share-partition as :meth:`persisted` left it (nothing acquired)."""
        partition = cls(start_offset, settings)
        for first, last, state, count in ranges:
            for offset in range(first, last + 1):
                partition.window[offset] = InFlight(RecordState(state), count, unit=(first, last))
            partition.next_offset = max(partition.next_offset, last + 1)
        partition._advance()
        partition.reported_start = start_offset
        return partition

    # -- acquiring ---------------------------------------------------------------------------------
    def acquire(self, member: str, log_batches: Sequence[tuple[int, int]], max_records: int, batch_size: int,
                mode: ShareAcquireMode, now: int) -> list[Acquired]:
        """Hand records to ``member``: the lowest AVAILABLE ones first, then new ones from
        ``log_batches`` (the log's batches as (base offset, last offset), in order, up to what may
        be read); at most ``max_records`` (whole log batches may exceed it in batch_optimized mode).
        The ranges acquired, each at one delivery count and within one acquired range."""
        self.expire(now)
        if max_records <= 0:
            return []
        taken: list[tuple[int, int]] = []  # (offset, deliveries) in offset order
        # only what the log read covers: a record handed out without its bytes would be lost (a
        # client takes acquired offsets it has no record for as gaps)
        readable = log_batches[-1][1] if log_batches else self.start_offset - 1
        stopped = self._redeliver(member, max_records, readable, now, taken)
        room = min(max_records - len(taken), self.settings.max_record_locks - self.in_flight())
        if room > 0 and not stopped:
            self._acquire_new(member, log_batches, room, batch_size, mode, now, taken)
        return _ranges(taken, self.window)

    def _redeliver(self, member: str, budget: int, readable: int, now: int, taken: list[tuple[int, int]]) -> bool:
        """Acquire AVAILABLE offsets of the window up to ``readable``, lowest first, within
        ``budget``.  As Kafka
        throttles redelivery: a record delivered at least half its limit comes only first in a
        fetch, with fewer of its range each time; a last delivery comes alone.  Whether this fetch
        stops here (no new records after)."""
        limit = self.settings.delivery_count_limit
        throttle = max(2, math.ceil(limit / 2))
        cap: int | None = None
        for offset in sorted(o for o, r in self.window.items() if r.state is RecordState.AVAILABLE):
            if offset > readable or len(taken) >= budget or (cap is not None and len(taken) >= cap):
                break
            record = self.window[offset]
            if record.deliveries >= throttle and cap is None:
                if taken:
                    return True  # the next fetch starts with it
                cap = max(1, (record.unit[1] - record.unit[0] + 1) >> (record.deliveries - throttle + 1))
            if limit > 2 and record.deliveries == limit - 1 and taken:
                return True  # a last delivery goes alone
            self._take(offset, member, now, taken)
            if limit > 2 and record.deliveries == limit:
                return True
        return cap is not None and bool(taken)

    def _acquire_new(self, member: str, log_batches: Sequence[tuple[int, int]], room: int, batch_size: int,
                     mode: ShareAcquireMode, now: int, taken: list[tuple[int, int]]) -> None:
        """Acquire records never handed out, from ``next_offset`` on: whole log batches until
        ``room`` is reached, in ranges cut at a log batch once ``batch_size`` is reached
        (batch_optimized); or exactly ``room``, in one range (record_limit)."""
        first = self.next_offset
        units: list[tuple[int, int]] = []
        for base, end in log_batches:
            if end < first:
                continue
            # contiguous from ``first``: offsets a log lacks (compacted away) are acquired with the
            # batch after them, as Kafka's whole batches do, and the client acknowledges them as gaps
            base = units[-1][1] + 1 if units else first
            held = (units[-1][1] - first + 1) if units else 0
            if held >= room:
                break
            if mode is ShareAcquireMode.RECORD_LIMIT:
                end = min(end, first + room - 1)
            if units and (mode is ShareAcquireMode.RECORD_LIMIT or base - units[-1][0] < batch_size):
                units[-1] = (units[-1][0], end)
            else:
                units.append((base, end))
        for unit in units:
            for offset in range(unit[0], unit[1] + 1):
                self.window[offset] = InFlight(RecordState.AVAILABLE, 0, unit=unit)
                self._take(offset, member, now, taken)
            self.next_offset = unit[1] + 1

    def _take(self, offset: int, member: str, now: int, taken: list[tuple[int, int]]) -> None:
        record = self.window[offset]
        record.state, record.member = RecordState.ACQUIRED, member
        record.deliveries += 1
        record.locked_until = now + self.settings.record_lock_duration_ms
        taken.append((offset, record.deliveries))

    # -- acknowledging -----------------------------------------------------------------------------
    def acknowledge(self, member: str, batches: Iterable[AckBatch], now: int) -> None:
        """Apply a member's acknowledgements of this partition, all or none (AcknowledgeError with
        Kafka's code and message for the first that cannot apply)."""
        self.expire(now)
        changes: dict[int, tuple[RecordState | None, int]] = {}  # offset -> (new state or None: renew, type)
        for batch in batches:
            if batch.last < self.start_offset:
                continue  # already past: Kafka takes it silently
            self._check_found(batch)
            whole = self._whole_unit(batch)
            for offset in range(max(batch.first, self.start_offset), batch.last + 1):
                if offset in changes:  # batches overlapping: Kafka finds it mid-transition
                    raise _record_state(IN_TRANSITION)
                record = self.window[offset]
                kind = batch.types[0] if len(batch.types) == 1 else batch.types[offset - batch.first]
                if record.state is not RecordState.ACQUIRED:
                    raise _record_state(BATCH_NOT_ACQUIRED if whole else OFFSET_NOT_ACQUIRED)
                if record.member != member:
                    raise _record_state(NOT_BATCH_OWNER if whole else NOT_OFFSET_OWNER)
                if kind == AcknowledgeType.RENEW:
                    if not self.settings.renew_acknowledge_enable:
                        raise _record_state(RENEW_DISABLED)
                    changes[offset] = (None, kind)
                else:
                    changes[offset] = (_ACKNOWLEDGED_AS[AcknowledgeType(kind)], kind)
        for offset, (state, _) in changes.items():
            record = self.window[offset]
            if state is None:
                record.locked_until = now + self.settings.record_lock_duration_ms  # a renewal is not kept
            else:
                self._settle(record, state)
        if any(state is not None for state, _ in changes.values()):
            self._written()
        self._advance()

    def _check_found(self, batch: AckBatch) -> None:
        if not self.window:
            raise _record_state(NOT_IN_CACHE)
        last_held = self.next_offset - 1
        if batch.first > last_held:
            raise AcknowledgeError(ErrorCode.INVALID_REQUEST, FIRST_PAST)
        if batch.last > last_held:
            raise AcknowledgeError(ErrorCode.INVALID_REQUEST, LAST_PAST)

    def _whole_unit(self, batch: AckBatch) -> bool:
        """Whether the batch is exactly one acquired range with one type (Kafka's whole-batch path,
        whose refusals name "the batch"; any other path names "the offset")."""
        record = self.window.get(batch.first)
        return (record is not None and record.unit == (batch.first, batch.last) and len(batch.types) == 1
                and batch.first >= self.start_offset)

    def _settle(self, record: InFlight, state: RecordState) -> None:
        """An acquired record released, acknowledged or archived."""
        if state is RecordState.AVAILABLE and record.deliveries >= self.settings.delivery_count_limit:
            state = RecordState.ARCHIVED
        record.state, record.member, record.locked_until = state, NO_MEMBER, None

    # -- locks, sessions, the start offset ---------------------------------------------------------
    def expire(self, now: int) -> list[int]:
        """Locks that ran out by ``now``: their records become AVAILABLE (ARCHIVED at the limit).
        The offsets released."""
        released = [o for o, r in self.window.items()
                    if r.state is RecordState.ACQUIRED and r.locked_until is not None and r.locked_until <= now]
        for offset in released:
            self._settle(self.window[offset], RecordState.AVAILABLE)
        if released:
            self._written()
            self._advance()
        return sorted(released)

    def release_member(self, member: str) -> list[int]:
        """A member's share session closed: what it holds becomes AVAILABLE again (ARCHIVED at the
        limit), its deliveries counted.  The offsets released."""
        released = self.acquired_by(member)
        for offset in released:
            self._settle(self.window[offset], RecordState.AVAILABLE)
        if released:
            self._written()
        self._advance()
        return released

    def _written(self) -> None:
        self.reported_start = self.start_offset

    def _advance(self) -> None:
        while self.start_offset < self.next_offset and self.window[self.start_offset].state in FINISHED:
            del self.window[self.start_offset]
            self.start_offset += 1

    def move_start(self, log_start: int) -> None:
        """The log's start moved past the start offset (records deleted from its head): what is
        below is gone, held or not (a holder's acknowledgement of it is then taken silently, as of any offset
        behind the start offset)."""
        if log_start <= self.start_offset:
            return
        for offset in range(self.start_offset, min(log_start, self.next_offset)):
            del self.window[offset]
        self.start_offset = log_start
        self.next_offset = max(self.next_offset, log_start)
        self._advance()


def _ranges(taken: list[tuple[int, int]], window: dict[int, InFlight]) -> list[Acquired]:
    """Acquired offsets as ranges: contiguous, at one delivery count, within one acquired range."""
    out: list[Acquired] = []
    for offset, deliveries in taken:
        last = out[-1] if out else None
        if (last is not None and offset == last.last + 1 and deliveries == last.deliveries
                and window[offset].unit == window[last.last].unit):
            out[-1] = Acquired(last.first, offset, deliveries)
        else:
            out.append(Acquired(offset, offset, deliveries))
    return out
