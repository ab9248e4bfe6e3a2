"""Members that form the group together before any of them reads.

Without it, the first task to join a group takes every partition and reads until the next one
joins and a rebalance shares the partitions out: on a short read, one member reads nearly all
of it.  With it, every member holds the partitions it is given (paused) until all the job's
members have joined, then reads its share of the generation that has them all.

How a member knows: Spark's barrier execution mode starts every task of the job at once, and
``BarrierTaskContext.allGather`` hands each task what every task sent.  A member sends its
generation (the member epoch under KIP-848's protocol; -1 while it has none) as soon as the
coordinator knows it (it has a member id); ``allGather`` returns once all have, so every member
is then in the group or waiting to be let in.  ``allGather`` blocks until every task calls it,
and a member must keep polling meanwhile (a classic member that stops polling holds up the
group's rejoin, and the others would wait for it), so it runs on a thread of its own here.
:func:`release_at` then says which generation has them all (member_loop.py holds until then).

Runs on the executor; pyspark is imported only when a barrier task asks for its context.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any, Protocol

log = logging.getLogger("groupclient.spark")

JOIN_TIMEOUT_MS = 60_000  # the longest a member holds its partitions waiting for the others


class Rendezvous(Protocol):
    """How the members of one job learn that all of them have joined."""

    def arrive(self, generation: int) -> None:
        """This member is stable in ``generation``; does not block."""

    def outcome(self) -> list[int] | BaseException | None:
        """Every member's generation when it arrived, once all have; the error that ended the
        wait; or None while it goes on."""


class BarrierRendezvous:
    """A :class:`Rendezvous` over Spark's ``BarrierTaskContext.allGather``, on a daemon thread."""

    def __init__(self, context: Any) -> None:
        self._context = context
        self._lock = threading.Lock()  # guards _outcome (written by the gathering thread)
        self._outcome: list[int] | BaseException | None = None
        self._started = False  # the member's thread only

    def arrive(self, generation: int) -> None:
        if self._started:
            return
        self._started = True
        threading.Thread(target=self._gather, args=(generation,), daemon=True,
                         name="groupclient-spark-rendezvous").start()

    def _gather(self, generation: int) -> None:
        try:
            outcome: list[int] | BaseException = [int(g) for g in self._context.allGather(str(generation))]
        except BaseException as exc:  # noqa: BLE001 - handed to the member, which logs it and reads
            outcome = exc
        with self._lock:
            self._outcome = outcome

    def outcome(self) -> list[int] | BaseException | None:
        with self._lock:
            return self._outcome


def release_at(arrivals: list[int], generation: int, stable: bool, classic: bool) -> int | None:
    """Once every member arrived (``arrivals``): the generation from which this member (now in
    ``generation``, ``stable`` or not) reads, or None when it must first ask for a rebalance, and
    then read from the generation after the one it is in.

    - every member in this same generation: it has them all; read now;
    - KIP-848: a member's epoch is the group epoch it reconciled to, and every arrival bumped the
      group epoch, so the highest epoch of the arrivals has them all: read once there;
    - classic: a generation after every arrival's (when one of them had a generation) was made
      by the rebalance the others' joins started, so it has them: read now.  Otherwise, members
      that arrived in other generations or while joining wait in the
      coordinator for a rebalance that this member joins only when a heartbeat tells it to (up
      to ``heartbeat_interval_ms``); asking for it now is quicker.  Every member asks, and the
      coordinator, which waits for every member it knows of, makes one generation of them all.
    """
    if stable and all(g == generation for g in arrivals):
        return generation
    if not classic:
        return max(arrivals)
    if stable and 0 <= max(arrivals) < generation:
        return generation  # a rebalance since the last one anybody was in: the one the others asked for
    return None


def barrier_rendezvous() -> BarrierRendezvous | None:
    """The rendezvous of this task when it runs in a barrier stage, else None."""
    from pyspark import BarrierTaskContext

    try:
        context = BarrierTaskContext.get()
    except Exception:  # noqa: BLE001 - not a barrier task (pyspark raises a plain error)
        return None
    return BarrierRendezvous(context) if context is not None else None


def free_slots(context: Any) -> int:
    """How many tasks the application can run at once: a local master's cores, or the executors'
    cores over ``spark.task.cpus``."""
    master = str(context.master)
    conf = context.getConf()
    task_cpus = int(conf.get("spark.task.cpus", "1"))
    if master.startswith("local"):
        inside = master[master.find("[") + 1:master.find("]")] if "[" in master else "1"
        cores = inside.split(",")[0].strip()
        count = (os.cpu_count() or 1) if cores == "*" else int(cores)
        return max(1, count // task_cpus)
    executors = max(0, len(context.statusTracker().getExecutorInfos()) - 1)  # less the driver
    return executors * int(conf.get("spark.executor.cores", "1")) // task_cpus


def runs_together(context: Any, members: int, together: bool | None) -> bool:
    """Whether the job's tasks run as one barrier stage: asked for, or (``together`` None) when
    the application has a slot for every member.  A barrier stage needs that many slots."""
    if together is False:
        return False
    slots = free_slots(context)
    if members <= slots:
        return True
    if together:
        from ..errors import ConfigurationError

        raise ConfigurationError(f"together=True needs a free slot for each of the {members} members, and the "
                                 f"application has {slots}: add executor cores or use fewer members")
    log.warning("%d members but %d task slots: the members start as slots free up and do not wait for one "
                "another (the first ones read more)", members, slots)
    return False


def collect_rows(rows: Any, barrier: bool) -> list[Any]:
    """The rows of the member tasks, on the driver.  Spark does not run a failed barrier stage
    again when it is the job's last (result) stage, so a barrier stage's rows go through one
    shuffle: the member stage is then a map stage, which Spark runs again, every task of it,
    when one of its tasks fails (``spark.stage.maxConsecutiveAttempts`` times)."""
    return list(rows.repartition(1).collect() if barrier else rows.collect())
