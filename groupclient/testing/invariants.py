"""What must hold at every step of a simulated group, checked after each one.

1. **One owner.**  No partition is in the assignment of two running members at the same instant.
   A frozen member (SIGSTOP) is not running; the instant it runs again it must already have let go
   of what it may no longer own.
2. **Removed members let go.**  A member the coordinator no longer has in the group owns nothing
   once its own session timeout has passed since the removal.
3. **Generations only grow**: on a coordinator, in memory; and the generation stored when a
   SyncGroup completes, across coordinator moves too.  (A rebalance whose assignment was never
   stored is not durable: after a coordinator move its generation number is used again, as in
   Kafka, which also stores the group only when the leader's SyncGroup completes.  No member can
   have an assignment of such a generation, since SyncGroup answers go out after the store.)
4. **Committed offsets never go backwards.**
5. **Nothing committed that was not delivered.**  For each partition, every offset below the
   committed one was handed to some member's application (no record skipped, i.e. lost).

Convergence after the last fault is checked by :meth:`GroupSimulation.converged`.
"""

from __future__ import annotations

from typing import Protocol

from ..structs import TopicPartition

from ..coordinator.core import ClusterCore
from ..coordinator.group.metadata import Group
from .members import SimMember
from .scheduler import Scheduler


class Observed(Protocol):
    """What the invariants read of the simulation (``GroupSimulation``, which checks them)."""

    seed: int
    group_id: str
    scheduler: Scheduler
    core: ClusterCore
    members: dict[str, SimMember]
    delivered: dict[TopicPartition, set[int]]
    log: list[str]

    @property
    def now(self) -> int: ...

    def coordinator_group(self) -> Group | None: ...

    def committed(self) -> dict[TopicPartition, int]: ...


class InvariantViolation(AssertionError):
    pass


class Invariants:
    def __init__(self, sim: Observed) -> None:
        self.sim = sim
        self.max_generation = -1  # of the group as loaded now on its coordinator
        self.loaded: object | None = None  # that group object (one per load, per coordinator move)
        self.max_stored_generation = -1
        self.committed: dict[TopicPartition, int] = {}
        self.orphaned_since: dict[str, int] = {}  # member name -> when the coordinator dropped it
        self.checks = 0

    def fail(self, what: str) -> None:
        sim = self.sim
        schedule = "\n  ".join(sim.log[-40:])
        raise InvariantViolation(f"seed {sim.seed}, t={sim.now}: {what}\nschedule so far:\n  {schedule}")

    def check(self) -> None:
        self.checks += 1
        running = self._running()
        owned = {name: self.sim.members[name].owned() for name in running}
        self._one_owner(owned)
        self._removed_members_let_go(owned)
        self._generations_grow()
        self._commits()

    def _running(self) -> list[str]:
        sim = self.sim
        scheduler = sim.scheduler
        return [name for name, m in sim.members.items()
                if m.alive and scheduler.frozen_until(name) <= sim.now and name not in scheduler.thawing]

    def _one_owner(self, owned: dict[str, set[TopicPartition]]) -> None:
        owners: dict[TopicPartition, str] = {}
        for name, partitions in owned.items():
            for tp in partitions:
                if tp in owners:
                    self.fail(f"{tp} is owned by {owners[tp]} and {name} at once")
                owners[tp] = name

    def _removed_members_let_go(self, owned: dict[str, set[TopicPartition]]) -> None:
        sim = self.sim
        group = sim.coordinator_group()
        if group is None:
            return  # the coordinator is moving: nobody can be removed meanwhile
        for name, partitions in owned.items():
            if not partitions:
                self.orphaned_since.pop(name, None)
                continue
            member = sim.members[name]
            member_id = member.consumer.group_metadata().member_id
            if member_id and member_id in group.members:
                self.orphaned_since.pop(name, None)
                continue
            since = self.orphaned_since.setdefault(name, sim.now)
            session = member.consumer.config["session_timeout_ms"]
            if sim.now - since > session:
                self.fail(f"member {name} ({member_id or 'no member id'}) still owns "
                          f"{sorted(partitions)} {sim.now - since} ms after the coordinator "
                          f"stopped counting it as a member (session timeout {session} ms)")

    def _generations_grow(self) -> None:
        sim = self.sim
        group = sim.coordinator_group()
        if group is not None:
            if group is not self.loaded:
                self.loaded, self.max_generation = group, group.generation_id
            elif group.generation_id < self.max_generation:
                self.fail(f"generation went back from {self.max_generation} to {group.generation_id}")
            self.max_generation = group.generation_id
        stored = sim.core.group_store.groups.get(sim.group_id)
        if stored is not None:
            if stored.generation_id < self.max_stored_generation:
                self.fail(f"the stored generation went back from {self.max_stored_generation} to "
                          f"{stored.generation_id}")
            self.max_stored_generation = stored.generation_id

    def _commits(self) -> None:
        sim = self.sim
        table = sim.core.group_store.offsets.get(sim.group_id)
        if not table:
            return
        for tp, offset in sim.committed().items():
            before = self.committed.get(tp)
            if before is not None and offset < before:
                self.fail(f"committed offset of {tp} went back from {before} to {offset}")
            if before != offset:
                delivered = sim.delivered.get(tp, set())
                missing = [o for o in range(offset) if o not in delivered]
                if missing:
                    self.fail(f"offset {offset} committed for {tp}, but offsets {missing[:10]} were never "
                              f"delivered to any member ({len(missing)} in all)")
            self.committed[tp] = offset
