"""The heartbeat thread may take the partitions away (a lost session, a fenced generation, a poll
timeout) between any two steps of the application thread.  This test puts that loss at every
point where the application thread takes the subscription lock in a typical loop (poll, seek
past what was processed, highwater, metrics), one simulation per point: no call may fail
because of it, and the member must rejoin and read everything from the first offset.

Found by the chaos run: the loss landed between the check that a reset partition was still
assigned and the seek to its reset offset, and poll() raised IllegalStateError into the
application."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from types import TracebackType

import pytest
from kafka.structs import TopicPartition

from groupclient import GroupConsumer
from groupclient.errors import UnassignedPartitionError
from groupclient.member.types import CommitIdentity
from groupclient.testing import GroupSimulation

Sim = Callable[..., GroupSimulation]
RECORDS = 10  # per partition
PARTITIONS = (TopicPartition("t", 0), TopicPartition("t", 1))  # read whole in every run


class LossAtAcquisition:
    """Stands in for SubscriptionState's lock: just before the driver thread's ``at``-th
    acquisition, the heartbeat thread's loss path runs (the lock is free then, as it would be
    for the other thread)."""

    def __init__(self, consumer: GroupConsumer, at: int, path: str = "fenced") -> None:
        self._lock = threading.Lock()
        self._consumer = consumer
        self._driver = threading.current_thread()
        self.at = at
        self.path = path
        self.count = 0
        self.fired_at_generation: int | None = None
        self.violations: list[str] = []
        self._losing = False  # the loss path's own acquisitions are not counted

    def __enter__(self) -> None:
        if threading.current_thread() is self._driver and not self._losing:
            self.count += 1
            if self.count == self.at:
                self._losing = True
                try:
                    self._lose()
                finally:
                    self._losing = False
            elif self.fired_at_generation is not None:
                self._check_nothing_came_back()
        self._lock.acquire()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._lock.release()

    def _lose(self) -> None:
        assert self._consumer._group is not None
        membership = self._consumer._group.member
        # one lock per object, never nested: the driver holds no membership lock here
        assert membership._lock.acquire(blocking=False), "subscription lock taken under the membership lock"
        membership._lock.release()
        generation = membership.current_generation()
        self.fired_at_generation = generation.generation_id
        if self.path == "fenced":
            # what the heartbeat thread runs on an ILLEGAL_GENERATION answer: the partitions are lost
            membership.fenced_if_still(CommitIdentity(generation.member_id, generation.generation_id),
                                       "the test fences the generation", keep_member_id=True)
        elif self.path == "lease":
            # what it runs when no heartbeat was answered within the session timeout (the anchors
            # are moved back, as if the answers had stopped long ago)
            membership.heartbeat.session_anchor = membership.heartbeat.stable_anchor = -(10**9)
            membership.check_lease(membership.clock.monotonic_ms())
        else:
            # what it runs when poll() was not called in time: forget the generation, drop the
            # partitions, send LeaveGroup (answered while the simulation goes on)
            membership.maybe_leave_group("the test's poll timeout", before_sending=self._consumer._group.on_poll_timeout)

    def _check_nothing_came_back(self) -> None:
        """Until the member has joined again, it owns nothing: what the loss took away comes
        back only through a new assignment.  (Read without the lock: in the simulation no other
        thread runs while the driver does.)"""
        assert self._consumer._group is not None
        membership = self._consumer._group.member
        owned = self._consumer._subscription._assignment
        if owned and membership.current_generation().generation_id < 0:
            self.violations.append(f"{sorted(owned)} owned again before rejoining (step {self.count})")


def run_with_loss_at(make_sim: Sim, at: int, cooperative: bool,
                     path: str = "fenced") -> tuple[LossAtAcquisition, dict[TopicPartition, list[int]]]:
    """Eager: a member of topic ``t``.  Cooperative: a member of ``t`` and ``u`` that stops
    subscribing to ``u`` once it has read something, so it rejoins keeping ``t`` (KIP-429)."""
    sim = make_sim(topics={"t": 2, "u": 1} if cooperative else {"t": 2}, nodes=2)
    sim.produce("t", 2 * RECORDS)
    assert {sim.end_offsets()[tp] for tp in PARTITIONS} == {RECORDS}
    strategy = ["cooperative-sticky"] if cooperative else ["range"]
    consumer = sim.consumer("c", enable_auto_commit=False, partition_assignment_strategy=strategy)
    hook = LossAtAcquisition(consumer, at, path)
    consumer._subscription._lock = hook  # type: ignore[assignment]
    consumer.subscribe(["t", "u"] if cooperative else ["t"])
    got: dict[TopicPartition, list[int]] = {}
    for _ in range(40):
        # what applications do between polls; none of it may fail because of a loss either
        for tp, records in consumer.poll(1000).items():
            got.setdefault(tp, []).extend(r.offset for r in records)
            consumer.seek(tp, records[-1].offset + 1)
            consumer.highwater(tp)
        consumer.metrics()
        if cooperative and got and consumer.subscription() == {"t", "u"}:
            consumer.subscribe(["t"])
        if all(set(got.get(tp, ())) == set(range(RECORDS)) for tp in PARTITIONS) and hook.count >= at:
            break
    consumer.close()
    return hook, got


@pytest.mark.parametrize("cooperative,path", [(False, "fenced"), (True, "fenced"), (False, "poll-timeout"),
                                               (False, "lease"), (True, "lease")],
                         ids=["eager-fenced", "cooperative-shrinking-fenced", "eager-left-on-poll-timeout",
                              "eager-lease-ran-out", "cooperative-shrinking-lease-ran-out"])
def test_a_loss_at_any_step_of_poll_never_fails_it(make_sim: Sim, cooperative: bool, path: str) -> None:
    dry, got = run_with_loss_at(make_sim, 0, cooperative, path)
    assert all(got[tp] == list(range(RECORDS)) for tp in PARTITIONS)
    steps = dry.count
    assert steps > 20, f"only {steps} acquisitions: the hook is not in place"
    fired, failures = 0, []
    for at in range(1, steps + 1):
        try:
            hook, got = run_with_loss_at(make_sim, at, cooperative, path)
        except Exception as exc:  # every failing step is reported, not only the first
            where = " < ".join(f"{f.name}:{f.lineno}" for f in traceback.extract_tb(exc.__traceback__)[-3:])
            failures.append(f"loss at step {at}: {type(exc).__name__}: {exc} at {where}")
            continue
        fired += hook.fired_at_generation is not None
        failures += [f"loss at step {at}: {v}" for v in hook.violations]
        # every record from the first offset (a repeat after the loss is allowed: nothing was
        # committed)
        for tp in PARTITIONS:
            offsets = got.get(tp, [])
            if sorted(set(offsets)) != list(range(RECORDS)):
                failures.append(f"loss at step {at}: {tp} gave {offsets}")
    assert not failures, f"{len(failures)} of {steps} steps:\n" + "\n".join(failures)
    assert fired == steps


def test_seek_and_pause_of_a_partition_just_lost_do_nothing_and_of_a_stranger_fail(make_sim: Sim) -> None:
    """Between the loss (heartbeat thread) and the next poll() (which tells the listener), the
    application may still act on the partition it was given: that is no error, and changes
    nothing.  A partition it was never given is an error, as before."""
    sim = make_sim(topics={"t": 2})
    sim.produce("t", 2 * RECORDS)
    consumer = sim.consumer("c", enable_auto_commit=False)
    consumer.subscribe(["t"])
    for _ in range(20):
        if consumer.poll(1000):
            break
    owned = sorted(consumer.assignment())
    assert len(owned) == 2
    assert consumer._group is not None
    membership = consumer._group.member
    generation = membership.current_generation()
    membership.fenced_if_still(CommitIdentity(generation.member_id, generation.generation_id),
                               "the test fences the generation", True)
    assert consumer.assignment() == set()
    tp = owned[0]
    consumer.seek(tp, 3)
    consumer.seek_to_beginning(tp)
    consumer.seek_to_end()
    consumer.pause(tp)
    consumer.resume(tp)
    assert consumer.highwater(tp) is None
    with pytest.raises(UnassignedPartitionError, match="lost"):
        consumer.position(tp)
    stranger = TopicPartition("t", 7)
    calls: list[Callable[[], None]] = [lambda: consumer.seek(stranger, 0), lambda: consumer.seek_to_end(stranger),
                                       lambda: consumer.pause(stranger)]
    for call in calls:
        with pytest.raises(UnassignedPartitionError, match="not assigned"):
            call()
    for _ in range(20):  # the next polls rejoin, and nothing of the above survived the loss
        consumer.poll(1000)
        if consumer.assignment():
            break
    assert consumer.assignment() == set(owned) and consumer.paused() == set()
    consumer.close()
