"""A thread switched out at the worst moment: between a member's decision to drop its partitions
(under its lock) and the drop itself (after it)."""

from __future__ import annotations

from groupclient.member.types import PartitionOwnership
from groupclient.testing import GroupSimulation


class DropAfterASwitch:
    """A member's PartitionOwnership, with its heartbeat thread switched out for ``hold_ms`` just
    before it first drops the partitions (a slow log write, the scheduler); ``held_up`` records
    when.  The application thread runs meanwhile."""

    def __init__(self, sim: GroupSimulation, real: PartitionOwnership, hold_ms: int = 200) -> None:
        self.sim = sim
        self.real = real
        self.hold_ms = hold_ms
        self.held_up: list[int] = []

    def owns_partitions(self) -> bool:
        return self.real.owns_partitions()

    def ownership_epoch(self) -> int:
        return self.real.ownership_epoch()

    def on_ownership_lost(self, reason: str, loss: int | None = None) -> None:
        actor = self.sim.scheduler.current_actor()
        if actor is not None and actor.name.startswith("groupclient-heartbeat") and not self.held_up:
            self.held_up.append(self.sim.now)
            self.sim.scheduler.sleep(self.hold_ms)
        self.real.on_ownership_lost(reason, loss)
