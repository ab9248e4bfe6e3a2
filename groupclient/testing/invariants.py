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

For consumer-protocol (KIP-848) groups and members, 1, 4 and 5 hold as they are; 2 counts the
members of the consumer group (classic members in it included), with the broker's session
(``group_consumer_session_timeout_ms``) for a consumer-protocol member; and:

6. **Epochs only grow.**  A consumer group's epoch, on the coordinator, for as long as that group
   has the id (a group changing protocol, or an empty group of one kind giving its id to the other,
   starts another count, as Kafka's conversions do); its target's epoch is never past it; each
   member's epoch there never goes down (but to -2: a static member that left) and is never past
   the group's.  A consumer-protocol member's own epoch never goes down, except to 0 when it joins
   again (fenced, its lease ended, or it left on the poll timeout) and below 0 when it leaves.
7. **Out of the group, nothing owned.**  A consumer-protocol member at epoch 0 or below (joining,
   leaving, left) owns nothing: it drops its partitions before it joins again or leaves.
8. **The coordinator gives a partition once.**  No partition is in the assignment of two members of
   a consumer group (what each may own and what each is giving up) at the same instant.
9. **No member fails for a bug.**  No member's call raises ``InternalError`` (groupclient's own code
   failed) or is refused INVALID_REQUEST (the broker found a request malformed).  Other refusals
   may be right: a static member whose instance id is still held is refused for good, as in Kafka.

Convergence after the last fault is checked by :meth:`GroupSimulation.converged`.
"""

from __future__ import annotations

from typing import Protocol

from ..error_codes import ErrorCode
from ..errors import BrokerError, InternalError
from ..structs import TopicPartition

from ..coordinator.classic_group.metadata import Group
from ..coordinator.config import CoordinatorConfig
from ..coordinator.consumer_group.group import ConsumerGroup, Member
from ..coordinator.core import ClusterCore
from .members import SimMember
from .scheduler import Scheduler

STATIC_LEFT = -2  # a static member's epoch on the coordinator once it left (kept for its session)


class Observed(Protocol):
    """What the invariants read of the simulation (``GroupSimulation``, which checks them)."""

    seed: int
    group_id: str
    scheduler: Scheduler
    core: ClusterCore
    config: CoordinatorConfig
    members: dict[str, SimMember]
    delivered: dict[TopicPartition, set[int]]
    log: list[str]

    @property
    def now(self) -> int: ...

    def coordinator_group(self) -> Group | None: ...

    def consumer_group(self) -> ConsumerGroup | None: ...

    def group_member_ids(self) -> set[str] | None: ...

    def committed(self) -> dict[TopicPartition, int]: ...


class InvariantViolation(AssertionError):
    """An invariant broke: the seed, the time, what broke, and the schedule so far."""


class Invariants:
    """The invariants above, checked by :meth:`check` after every step of a simulation."""

    def __init__(self, sim: Observed) -> None:
        self.sim = sim
        self.max_generation = -1  # of the group as loaded now on its coordinator
        self.loaded: object | None = None  # that group object (one per load, per coordinator move)
        self.max_stored_generation = -1
        # the stored classic group a consumer group took the id from: no longer the group's record
        self.retired_snapshot: object | None = None
        self.committed: dict[TopicPartition, int] = {}
        self.orphaned_since: dict[str, int] = {}  # member name -> when the coordinator dropped it
        self.consumer_group: ConsumerGroup | None = None  # the consumer group having the id now
        self.group_epoch = -1  # its epoch, as last seen
        # epochs as last seen: of each member in that consumer group (by object: a member that
        # is removed and joins again is another), and of each consumer-protocol member's own view
        self.coordinator_epochs: dict[int, tuple[Member, int]] = {}
        self.member_epochs: dict[int, tuple[SimMember, int]] = {}
        self.errors_seen: dict[int, tuple[SimMember, int]] = {}  # how many of each member's errors were looked at
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
        self._consumer_group_epochs()
        self._member_epochs(owned)
        self._no_bugs()
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
        member_ids = sim.group_member_ids()
        if member_ids is None:
            return  # the coordinator is moving: nobody can be removed meanwhile
        for name, partitions in owned.items():
            if not partitions:
                self.orphaned_since.pop(name, None)
                continue
            member = sim.members[name]
            member_id = member.consumer.group_metadata().member_id
            if member_id and member_id in member_ids:
                self.orphaned_since.pop(name, None)
                continue
            since = self.orphaned_since.setdefault(name, sim.now)
            session = (sim.config.group_consumer_session_timeout_ms if member.protocol == "consumer"
                       else member.consumer.config["session_timeout_ms"])
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
        store = sim.core.group_store
        if sim.group_id in store.consumer_groups:
            # a consumer group has the id: a classic group that has it again later counts afresh
            # (it is that consumer group turned back, from its epoch, or a new one, from 0)
            self.max_stored_generation = -1
            self.retired_snapshot = store.groups.get(sim.group_id)
            return
        stored = store.groups.get(sim.group_id)
        if stored is not None and stored is not self.retired_snapshot:
            if stored.generation_id < self.max_stored_generation:
                self.fail(f"the stored generation went back from {self.max_stored_generation} to "
                          f"{stored.generation_id}")
            self.max_stored_generation = stored.generation_id

    def _consumer_group_epochs(self) -> None:
        group = self.sim.core.group_store.consumer_groups.get(self.sim.group_id)
        if group is None:
            self.consumer_group, self.coordinator_epochs = None, {}
            return
        if group is not self.consumer_group:  # another count begins
            self.consumer_group, self.group_epoch, self.coordinator_epochs = group, group.epoch, {}
        if group.epoch < self.group_epoch:
            self.fail(f"the consumer group's epoch went back from {self.group_epoch} to {group.epoch}")
        self.group_epoch = group.epoch
        if group.assignment_epoch > group.epoch:
            self.fail(f"the target assignment's epoch {group.assignment_epoch} is past the group's {group.epoch}")
        owners: dict[tuple[object, int], str] = {}
        seen: dict[int, tuple[Member, int]] = {}
        for member in group.members.values():
            epoch = member.assignment.epoch
            before = self.coordinator_epochs.get(id(member))
            if before is not None and epoch < before[1] and epoch != STATIC_LEFT:
                self.fail(f"member {member.member_id}'s epoch on the coordinator went back from {before[1]} to {epoch}")
            if epoch > group.epoch:
                self.fail(f"member {member.member_id}'s epoch {epoch} is past the group's {group.epoch}")
            seen[id(member)] = (member, epoch)
            for held in (member.assignment.assigned, member.assignment.revoking):
                for topic, partitions in held.items():
                    for p in partitions:
                        other = owners.setdefault((topic, p), member.member_id)
                        if other != member.member_id:
                            self.fail(f"the coordinator has partition {p} of topic id {topic} with members "
                                      f"{other} and {member.member_id} at once")
        self.coordinator_epochs = seen

    def _member_epochs(self, owned: dict[str, set[TopicPartition]]) -> None:
        seen: dict[int, tuple[SimMember, int]] = {}
        for name, member in self.sim.members.items():
            if not member.alive or member.protocol != "consumer":
                continue
            epoch = member.consumer.group_metadata().generation_id
            before = self.member_epochs.get(id(member))
            if before is not None and 0 < epoch < before[1]:
                self.fail(f"member {name}'s epoch went back from {before[1]} to {epoch}")
            partitions = owned.get(name)  # running members only: a frozen one cannot act
            if epoch <= 0 and partitions:
                self.fail(f"member {name} owns {sorted(partitions)} at epoch {epoch}, out of the group")
            seen[id(member)] = (member, epoch)
        self.member_epochs = seen

    def _no_bugs(self) -> None:
        for name, member in self.sim.members.items():
            seen = self.errors_seen.get(id(member), (member, 0))[1]
            if len(member.errors) == seen:
                continue
            for at, error in member.errors[seen:]:
                if isinstance(error, InternalError) or (
                        isinstance(error, BrokerError) and error.code == ErrorCode.INVALID_REQUEST):
                    self.fail(f"member {name} ({member.protocol}) failed at t={at}: {error!r}")
            self.errors_seen[id(member)] = (member, len(member.errors))

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
