"""A simulated share-group member: a real ``ShareConsumer`` and the application loop that drives
it, and the :class:`ShareLedger` where every member writes what it was handed and what the broker
confirmed it accepted (what :mod:`.share_invariants` judges).

The loop polls; each record it is handed is, by a draw from the member's own seeded source,
accepted, released or rejected (explicit mode), or accepted by the next poll (implicit mode);
after a batch it may spend ``processing_ms`` (past the record lock, the lock runs out) and commit
synchronously or asynchronously.  The acknowledgement commit callback, which runs on this same
application thread, tells the ledger what the broker took.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import FatalError, GroupClientError
from .network import SimIO
from ..protocol.share_group import AcknowledgeType
from ..share.consumer import ShareConsumer
from ..structs import TopicPartition
from .scheduler import ActorThread, Crashed, Scheduler

Key = tuple[TopicPartition, int]  # a record: its partition and offset


@dataclass(frozen=True)
class Delivery:
    """One record handed to one member's application."""

    member: str  # the simulated member's name
    member_id: str  # its id in the share group
    delivery_count: int
    at_ms: int


@dataclass
class ShareLedger:
    """What every share member of one simulation was handed and had accepted, in order."""

    deliveries: dict[Key, list[Delivery]] = field(default_factory=dict)
    # each ACCEPT the broker confirmed: (member, the delivery count accepted, when it was told)
    accepted: dict[Key, list[tuple[str, int, int]]] = field(default_factory=dict)
    # what happened since the invariants last looked (they look after every step)
    new_deliveries: list[tuple[Key, Delivery]] = field(default_factory=list)
    new_accepts: list[Key] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # what a member's callback found wrong

    def delivered(self, key: Key, delivery: Delivery) -> None:
        self.deliveries.setdefault(key, []).append(delivery)
        self.new_deliveries.append((key, delivery))

    def confirmed_accept(self, key: Key, member: str, delivery_count: int, at_ms: int) -> None:
        self.accepted.setdefault(key, []).append((member, delivery_count, at_ms))
        self.new_accepts.append(key)


@dataclass
class ShareBehaviour:
    """How a share member's application loop behaves; the schedule changes it as it runs."""

    mode: Literal["implicit", "explicit"] = "explicit"  # share_acknowledgement_mode
    poll_timeout_ms: int = 1000
    processing_ms: int = 0  # time spent on each non-empty batch
    commit: str = "none"  # after each batch: "sync", "async" or "none" (the next poll sends)
    release_share: float = 0.2  # explicit mode: the share of records released, and rejected
    reject_share: float = 0.05
    pause_until_ms: int = 0  # the application does not call poll() before this time


@dataclass(eq=False, repr=False)
class ShareSimMember:
    """One simulated share member: its consumer (built on its own application thread, since the
    constructor asks the simulated brokers for metadata), its network, and what it was told."""

    scheduler: Scheduler
    ledger: ShareLedger
    name: str
    topics: list[str]
    settings: dict[str, Any]
    io: SimIO
    behaviour: ShareBehaviour
    rng: random.Random  # the consumer's own random source
    draws: random.Random  # the application's acknowledgement choices
    consumer: ShareConsumer[Any, Any] | None = None
    state: str = "running"  # running, closed, crashed, failed
    thread: ActorThread | None = None
    errors: list[tuple[int, BaseException]] = field(default_factory=list)
    # each record's acknowledgements not yet answered, in the order they go: (the delivery count
    # acknowledged, the type).  Every acknowledgement made while the consumer is open gets exactly
    # one answer, in that order (implicit mode's are made by the next poll or commit, so they are
    # noted at delivery); the callback pops them
    pending: dict[Key, deque[tuple[int, AcknowledgeType]]] = field(default_factory=dict)
    _stop: bool = False

    def __repr__(self) -> str:
        return f"<ShareSimMember {self.name} {self.state} member {self.member_id}>"

    @property
    def alive(self) -> bool:
        return self.state == "running"

    @property
    def member_id(self) -> str | None:
        return None if self.consumer is None else self.consumer.member_id

    def stop(self) -> None:
        """Ask the application loop to close the consumer and end (a clean shutdown)."""
        self._stop = True

    def _on_commit(self, offsets: Mapping[Any, set[int]], error: Exception | None) -> None:
        """The acknowledgement commit callback: the accepts the broker took go to the ledger."""
        for partition, taken in offsets.items():
            tp = TopicPartition(partition.topic, partition.partition)
            for offset in taken:
                waiting = self.pending.get((tp, offset))
                if not waiting:
                    self.ledger.problems.append(f"{self.name} was told of an acknowledgement of "
                                                f"{tp.topic}-{tp.partition} at {offset} it never made")
                    continue
                count, kind = waiting.popleft()
                if error is None and kind is AcknowledgeType.ACCEPT:
                    self.ledger.confirmed_accept((tp, offset), self.name, count, self.scheduler.now)

    def run(self) -> None:
        scheduler = self.scheduler
        try:
            consumer = self.consumer = ShareConsumer(
                clock=scheduler, io=self.io, rng=self.rng, acknowledgement_commit_callback=self._on_commit,
                share_acknowledgement_mode=self.behaviour.mode, **self.settings)
            consumer.subscribe(self.topics)
            while not self._stop:
                b = self.behaviour
                if b.pause_until_ms > scheduler.now:
                    scheduler.block(b.pause_until_ms, lambda: self._stop)
                    continue
                try:
                    batch = consumer.poll(b.poll_timeout_ms)
                except FatalError as exc:
                    self.errors.append((scheduler.now, exc))
                    self.state = "failed"
                    consumer.close()
                    return
                except GroupClientError as exc:
                    self.errors.append((scheduler.now, exc))
                    scheduler.sleep(100)
                    continue
                if batch:
                    self._handle(consumer, batch)
            consumer.close()
            self.state = "closed"
        except Crashed:
            self.state = "crashed"
            raise

    def _handle(self, consumer: ShareConsumer[Any, Any], batch: Mapping[TopicPartition, list[Any]]) -> None:
        """Take a poll's records: note each, draw its acknowledgement, process, commit."""
        scheduler, b = self.scheduler, self.behaviour
        explicit = b.mode == "explicit"
        for tp, records in batch.items():
            for record in records:
                key = (tp, record.offset)
                self.ledger.delivered(key, Delivery(self.name, consumer.member_id, record.delivery_count,
                                                   scheduler.now))
                if not explicit:
                    self.pending.setdefault(key, deque()).append((record.delivery_count, AcknowledgeType.ACCEPT))
        if b.processing_ms:
            scheduler.sleep(b.processing_ms)
        if explicit:
            for tp, records in batch.items():
                for record in records:
                    draw = self.draws.random()
                    kind = (AcknowledgeType.RELEASE if draw < b.release_share
                            else AcknowledgeType.REJECT if draw < b.release_share + b.reject_share
                            else AcknowledgeType.ACCEPT)
                    self.pending.setdefault((tp, record.offset), deque()).append((record.delivery_count, kind))
                    consumer.acknowledge(record, kind)
        try:
            if b.commit == "sync":
                consumer.commit_sync()
            elif b.commit == "async":
                consumer.commit_async()
        except GroupClientError as exc:
            self.errors.append((scheduler.now, exc))
