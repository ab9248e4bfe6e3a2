"""A simulated member: a real ``GroupConsumer`` and the application loop that drives it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..structs import TopicPartition

from ..consumer.group_consumer import GroupConsumer
from ..consumer.listener import ConsumerRebalanceListener
from ..errors import CommitFailedError, FatalError, GroupClientError
from .network import SimIO
from .scheduler import ActorThread, Crashed, Scheduler

log = logging.getLogger("groupclient.testing")


class RecordingConsumer(GroupConsumer):
    """A GroupConsumer that a test drives itself, telling the simulation what it delivered."""

    sim_member: SimMember

    def subscribe(self, topics: Any = (), pattern: str | None = None, listener: Any = None) -> None:
        # the member's listener events are recorded as a running member's are
        super().subscribe(topics, pattern, RecordingListener(self.sim_member, listener))

    def poll(self, timeout_ms: int = 0, max_records: int | None = None, update_offsets: bool = True) -> Any:
        batch = super().poll(timeout_ms, max_records, update_offsets)
        if update_offsets:
            for tp, records in batch.items():
                self.sim_member.record_delivery(tp, [r.offset for r in records])
        return batch

    def __next__(self) -> Any:
        record = super().__next__()
        self.sim_member.record_delivery(TopicPartition(record.topic, record.partition), [record.offset])
        return record

    def close(self, autocommit: bool = True, timeout_ms: float | None = None) -> None:
        try:
            super().close(autocommit, timeout_ms)
        finally:
            if self.sim_member.state == "running":
                self.sim_member.state = "closed"


@dataclass(frozen=True)
class ListenerEvent:
    at_ms: int
    member: str
    kind: str  # "assigned", "revoked" or "lost"
    partitions: frozenset[TopicPartition]


class RecordingListener(ConsumerRebalanceListener):
    """Records every listener call, then passes it on to the user's listener, if any."""

    def __init__(self, member: SimMember, inner: Any = None) -> None:
        self.member = member
        self.inner = inner

    def _record(self, kind: str, partitions: set[TopicPartition]) -> None:
        self.member.events.append(ListenerEvent(self.member.scheduler.now, self.member.name, kind,
                                                frozenset(partitions)))
        fn = getattr(self.inner, f"on_partitions_{kind}", None)
        if fn is not None:
            fn(partitions)

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self._record("revoked", revoked)

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self._record("assigned", assigned)

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self._record("lost", lost)


@dataclass
class Behaviour:
    """How the member's application loop behaves; the schedule changes it as it runs."""

    poll_timeout_ms: int = 1000
    processing_ms: int = 0  # time spent on each non-empty batch
    commit: str = "auto"  # "auto" (enable_auto_commit), "sync" after each batch, or "none"
    pause_until_ms: int = 0  # the application does not call poll() before this time
    stop_after_records: int | None = None  # leave the loop (and close) after this many records


@dataclass(eq=False)
class SimMember:
    """One simulated member: its consumer, its network, its application loop's behaviour, and what
    it was delivered and told (listener calls, errors)."""

    scheduler: Scheduler
    # every offset any member of the simulation was given (shared by all of them)
    delivered_to_any: dict[TopicPartition, set[int]]
    name: str
    topics: list[str]
    consumer: GroupConsumer
    io: SimIO
    behaviour: Behaviour
    state: str = "running"  # running, closed, crashed, failed
    thread: ActorThread | None = None
    delivered: dict[TopicPartition, list[int]] = field(default_factory=dict)
    events: list[ListenerEvent] = field(default_factory=list)
    errors: list[tuple[int, BaseException]] = field(default_factory=list)
    on_batch: Callable[[SimMember, dict[TopicPartition, list[Any]]], None] | None = None
    _stop: bool = False

    @property
    def alive(self) -> bool:
        return self.state == "running"

    @property
    def protocol(self) -> str:
        """The group protocol its consumer speaks: "classic" or "consumer" (KIP-848)."""
        return str(self.consumer.config["group_protocol"])

    def owned(self) -> set[TopicPartition]:
        return self.consumer.assignment()

    def record_delivery(self, tp: TopicPartition, offsets: list[int]) -> None:
        self.delivered.setdefault(tp, []).extend(offsets)
        self.delivered_to_any.setdefault(tp, set()).update(offsets)

    def stop(self) -> None:
        """Ask the application loop to close the consumer and end (a clean shutdown)."""
        self._stop = True

    def run(self, listener: Any) -> None:
        scheduler = self.scheduler
        consumer = self.consumer
        try:
            consumer.subscribe(self.topics, listener=RecordingListener(self, listener))
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
                    consumer.close(autocommit=False)
                    return
                except GroupClientError as exc:
                    self.errors.append((scheduler.now, exc))
                    scheduler.sleep(100)
                    continue
                if batch:
                    count = 0
                    for tp, records in batch.items():
                        self.record_delivery(tp, [r.offset for r in records])
                        count += len(records)
                    if self.on_batch is not None:
                        self.on_batch(self, batch)
                    if b.processing_ms:
                        scheduler.sleep(b.processing_ms)
                    if b.commit == "sync":
                        try:
                            consumer.commit()
                        except (CommitFailedError, GroupClientError) as exc:
                            self.errors.append((scheduler.now, exc))
                    if b.stop_after_records is not None:
                        b.stop_after_records -= count
                        if b.stop_after_records <= 0:
                            self._stop = True
            consumer.close()
            self.state = "closed"
        except Crashed:
            self.state = "crashed"
            raise
