"""The records the last ``poll()`` handed out and what the application said of them (the Java
client's ``ShareFetch``, ``ShareInFlightBatch`` and ``Acknowledgements``): sans-IO, application
thread only.

A record is *in flight* from the poll that returns it until its acknowledgement is taken to be
sent (by the next poll, a commit or close).  The rules are Java's:

- in implicit mode the application acknowledges nothing itself: the next poll or commit accepts
  the records (``close()`` does not: they go back to the group with the share session);
- in explicit mode it acknowledges each record, and a poll with records still unacknowledged
  raises IllegalStateError; only a record of the last poll can be acknowledged;
- an acquired offset with no record (removed by compaction, a transaction marker) is acknowledged
  as a gap, in either mode;
- a record whose key or value could not be deserialized is not handed out: ``poll()`` raises its
  RecordDeserializationError and the record is released; in explicit mode the application may
  acknowledge it otherwise by (topic, partition, offset), REJECT usually;
- RENEW keeps a record: once the broker has renewed its lock, the next poll returns it again, and
  it must still be acknowledged.

Stricter than Java in one thing: a record acknowledged again before its acknowledgement is sent
raises IllegalStateError (Java takes the last type given): two different answers for one record
are a bug of the application's, and it is told where it made it.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import IllegalStateError
from ..protocol.share_group import AcknowledgeType
from ..structs import TopicPartition

GAP = AcknowledgeType.GAP
_OFFSET = operator.attrgetter("offset")
# a run of this many records of one type or more gets an acknowledgement batch of its own, with
# the type once (Java's MAX_RECORDS_WITH_SAME_ACKNOWLEDGE_TYPE)
SAME_TYPE_RUN = 10

Batch = tuple[int, int, list[int]]  # first offset, last offset, acknowledge types (one, or one per offset)


def acknowledgement_batches(acks: Mapping[int, int]) -> list[Batch]:
    """``acks`` (offset -> type) as ShareFetch/ShareAcknowledge batches, as Java's
    ``Acknowledgements.getAcknowledgementBatches`` makes them: contiguous offsets in one batch,
    except that a run of more than SAME_TYPE_RUN records of one type gets its own; a batch whose
    offsets all have one type carries it once."""
    if not acks:
        return []
    first, last = min(acks), max(acks)
    kinds = set(acks.values())
    if len(kinds) == 1 and last - first + 1 == len(acks):  # one type, no hole: the common case
        return [(first, last, [int(kinds.pop())])]
    batches: list[Batch] = []
    run: list[tuple[int, int]] = []
    for offset in sorted(acks):
        if run and offset != run[-1][0] + 1:
            batches += _split(run)
            run = []
        run.append((offset, int(acks[offset])))
    if run:
        batches += _split(run)
    return [(first, last, types[:1] if len(set(types)) == 1 else types) for first, last, types in batches]


def _split(run: list[tuple[int, int]]) -> list[Batch]:
    """A contiguous run of (offset, type), with each stretch of more than SAME_TYPE_RUN records of
    one type cut out as a batch of its own."""
    out: list[Batch] = []
    start = 0
    i = 0
    while i < len(run):
        j = i
        while j + 1 < len(run) and run[j + 1][1] == run[i][1]:
            j += 1
        if j - i + 1 > SAME_TYPE_RUN:
            if i > start:
                out.append((run[start][0], run[i - 1][0], [t for _, t in run[start:i]]))
            out.append((run[i][0], run[j][0], [run[i][1]]))
            start = j + 1
        i = j + 1
    if start < len(run):
        out.append((run[start][0], run[-1][0], [t for _, t in run[start:]]))
    return out


@dataclass
class PartitionInFlight:
    """One partition's records of the last poll (by offset), from the broker ``node``."""

    node: int
    records: dict[int, Any] = field(default_factory=dict)  # in flight: handed out, not yet taken
    acks: dict[int, int] = field(default_factory=dict)  # offset -> type to send (GAP for a gap)
    acknowledged: set[int] = field(default_factory=set)  # in flight and acknowledged
    undeliverable: set[int] = field(default_factory=set)  # not deserializable: acknowledged by offset
    renewing: dict[int, Any] = field(default_factory=dict)  # RENEW sent, the broker has not answered
    renewed: dict[int, Any] = field(default_factory=dict)  # renewed: the next poll returns them again


class InFlight:
    """Every partition's records in flight and acknowledgements waiting to be sent, per partition
    and per broker the records came from: after a leader moved, one poll may hand out records of
    one partition from both, and each goes back to the broker that holds its lock."""

    def __init__(self, explicit: bool) -> None:
        self.explicit = explicit
        self._parts: dict[TopicPartition, dict[int, PartitionInFlight]] = {}  # partition -> node -> ...

    def _part(self, tp: TopicPartition, node: int) -> PartitionInFlight:
        by_node = self._parts.setdefault(tp, {})
        part = by_node.get(node)
        if part is None:
            part = by_node[node] = PartitionInFlight(node)
        return part

    def _all(self) -> Iterator[tuple[TopicPartition, PartitionInFlight]]:
        for tp, by_node in self._parts.items():
            for part in by_node.values():
                yield tp, part

    # -- what poll() hands out -------------------------------------------------------------------
    def deliver(self, tp: TopicPartition, node: int, records: Iterable[Any]) -> None:
        """``records`` (each with ``.offset``) are handed out by this poll."""
        listed = records if isinstance(records, list) else list(records)
        self._part(tp, node).records.update(zip(map(_OFFSET, listed), listed))  # no Python step per record

    def gaps(self, tp: TopicPartition, node: int, offsets: Iterable[int]) -> None:
        """Acquired offsets with no record: acknowledged as gaps with what is sent next."""
        part = self._part(tp, node)
        for offset in offsets:
            part.acks[offset] = GAP

    def undeliverable(self, tp: TopicPartition, node: int, offset: int) -> None:
        """The record at ``offset`` could not be deserialized: released, unless the application
        acknowledges it otherwise by offset before the next poll."""
        part = self._part(tp, node)
        part.undeliverable.add(offset)
        part.acks[offset] = AcknowledgeType.RELEASE

    # -- the application's acknowledgements -------------------------------------------------------
    def acknowledge(self, tp: TopicPartition, offset: int, kind: AcknowledgeType) -> None:
        """Acknowledge the record at ``offset`` of ``tp``: one of the last poll's, or one it could
        not deserialize."""
        if not self.explicit:
            raise IllegalStateError(
                "Implicit acknowledgement of delivery is being used: the next poll() or commit accepts every "
                "record of the last poll; set share_acknowledgement_mode='explicit' to acknowledge records one by one")
        parts = self._parts.get(tp, {}).values()
        for part in parts:
            if offset in part.acknowledged:
                raise IllegalStateError(
                    f"the record at offset {offset} of {tp.topic}-{tp.partition} was already acknowledged "
                    f"({AcknowledgeType(part.acks[offset]).name}) since the last poll(); a record takes one "
                    "acknowledgement (RENEW, then another, across polls)")
        holder = next((p for p in parts if offset in p.records or offset in p.undeliverable), None)
        if holder is None:
            raise IllegalStateError(
                f"the record at offset {offset} of {tp.topic}-{tp.partition} cannot be acknowledged: the last "
                "poll() did not return it, or its acknowledgement was sent already (only the records of the last "
                "poll can be acknowledged)")
        if offset in holder.undeliverable:
            if kind is AcknowledgeType.RENEW:
                raise IllegalStateError(f"the record at offset {offset} of {tp.topic}-{tp.partition} could not be "
                                        "deserialized: acknowledge it with ACCEPT, RELEASE or REJECT, not RENEW")
            holder.undeliverable.discard(offset)
        else:
            holder.acknowledged.add(offset)
        holder.acks[offset] = kind

    def acknowledge_all(self, kind: AcknowledgeType) -> None:
        """Acknowledge every record in flight not acknowledged yet (implicit mode: ACCEPT)."""
        for _, part in self._all():
            if not part.acknowledged:  # none by hand (implicit mode): all at once
                part.acks.update(dict.fromkeys(part.records, int(kind)))
                part.acknowledged.update(part.records)
                continue
            for offset in part.records:
                if offset not in part.acknowledged:
                    part.acks[offset] = kind
                    part.acknowledged.add(offset)

    def unacknowledged(self) -> int:
        """Records in flight that are not acknowledged."""
        return sum(len(p.records) - len(p.acknowledged) for _, p in self._all())

    def in_flight(self) -> int:
        return sum(len(p.records) for _, p in self._all())

    # -- what goes out -----------------------------------------------------------------------------
    def take(self) -> dict[tuple[TopicPartition, int], dict[int, int]]:
        """The acknowledgements to send: per partition and node, offset -> type.  The records
        acknowledged leave flight; those renewed wait for the broker's answer
        (:meth:`renew_answered`)."""
        taken: dict[tuple[TopicPartition, int], dict[int, int]] = {}
        for tp, part in self._all():
            if not part.acks:
                continue
            acks, part.acks = part.acks, {}
            if len(part.acknowledged) == len(part.records) and AcknowledgeType.RENEW not in acks.values():
                part.records = {}  # all of them, none renewed: the common case
            else:
                for offset in part.acknowledged:
                    record = part.records.pop(offset)
                    if acks.get(offset) == AcknowledgeType.RENEW:
                        part.renewing[offset] = record
            part.acknowledged.clear()
            part.undeliverable.clear()
            taken[(tp, part.node)] = acks
        return taken

    def renew_answered(self, tp: TopicPartition, offsets: Iterable[int], ok: bool) -> None:
        """The broker answered the RENEW of ``offsets``: renewed, they come back with the next
        poll; not (``ok`` False), they are no longer this consumer's."""
        for part in self._parts.get(tp, {}).values():
            for offset in offsets:
                record = part.renewing.pop(offset, None)
                if record is not None and ok:
                    part.renewed[offset] = record

    def renewing(self) -> bool:
        """Some RENEW awaits the broker's answer."""
        return any(p.renewing for _, p in self._all())

    def take_renewed(self) -> dict[TopicPartition, list[Any]]:
        """The renewed records, back in flight: what the next poll returns."""
        back: dict[TopicPartition, list[Any]] = {}
        for tp, part in self._all():
            if part.renewed:
                records = [part.renewed[o] for o in sorted(part.renewed)]
                part.renewed.clear()
                for record in records:
                    part.records[record.offset] = record
                back.setdefault(tp, []).extend(records)
        return back

    def forget_settled(self) -> None:
        """Drop the partitions with nothing in flight, to send or awaited."""
        for tp, by_node in list(self._parts.items()):
            for node in [n for n, p in by_node.items()
                         if not (p.records or p.acks or p.undeliverable or p.renewing or p.renewed)]:
                del by_node[node]
            if not by_node:
                del self._parts[tp]

    def drop(self) -> int:
        """Forget everything (close, after what could be sent was): the records in flight left."""
        left = self.in_flight()
        self._parts.clear()
        return left
