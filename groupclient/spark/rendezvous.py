"""Members that form the group together before any of them reads.

Without it, the first task to join a group takes every partition and reads until the next one
joins and a rebalance shares the partitions out: on a short read, one member reads nearly all
of it.  With it, every member holds the partitions it is given (paused) until the group has all
the job's members, then reads its share of a generation that has them all.

Spark's barrier execution mode starts every task of the job at once (or none), so that every
member can join.  Who has joined is the coordinator's to say: a holding member describes the
group (DescribeGroups, or ConsumerGroupDescribe under KIP-848's protocol) every
``DESCRIBE_EVERY_MS`` and reads once it has seen the job's member count of members (over all
its descriptions: a fast member may read its share and leave between two) and the group and the
member are stable.  (Spark's own exchange between barrier tasks, ``allGather``, takes a second
per call on Spark 4.2: longer than the whole wait this way.)

A classic member stable in an older generation learns of the rebalance the others' joins
started only from its next heartbeat; seeing the group rebalancing, it rejoins at once instead.

Runs on the executor; pyspark is imported only to ask Spark for the task slots (driver).
"""

from __future__ import annotations

import logging
import os
from typing import Any, Literal

from ..admin.client import AdminConnection, AdminError
from ..admin.groups import GroupAdmin
from ..clock import Clock
from ..errors import ConfigurationError
from ..network.security import security_from_config

log = logging.getLogger("groupclient.spark")

JOIN_TIMEOUT_MS = 60_000  # the longest a member holds its partitions waiting for the others
DESCRIBE_EVERY_MS = 100
_REBALANCING = {"preparingrebalance", "completingrebalance", "assigning", "reconciling"}

Verdict = Literal["read", "rejoin", "wait"]


class GroupRendezvous:
    """Tells a holding member when the group has every member of its job."""

    def __init__(self, config: dict[str, Any], members: int, clock: Clock) -> None:
        self.members = members
        self.group_id = str(config["group_id"])
        self.classic = config["group_protocol"] != "consumer"
        self._clock = clock
        self._conn = AdminConnection(config["bootstrap_servers"], timeout_ms=5000, clock=clock,
                                     security=security_from_config(config))
        self._admin = GroupAdmin(self._conn)
        self._next_ms = 0
        self._asked_rejoin = False
        # every member id any description showed: a fast member may read its share and leave
        # between two descriptions, so "all have joined" is counted over time
        self._seen: set[str] = set()

    def verdict(self, stable: bool) -> Verdict:
        """``read`` once the job's members have all been seen in the group and the group and
        this member are stable; ``rejoin`` (once) for a stable classic member of a group that is rebalancing."""
        now = self._clock.monotonic_ms()
        if now < self._next_ms:
            return "wait"
        self._next_ms = now + DESCRIBE_EVERY_MS
        try:
            group = self._admin.describe_group(self.group_id, self._conn.timer(), offsets=False)
        except AdminError as exc:  # a group still forming is not found: ask again
            log.debug("describing group %s while waiting for its members: %s", self.group_id, exc)
            return "wait"
        self._seen.update(m.member_id for m in group.members)
        state = group.state.lower()
        if stable and state == "stable" and len(self._seen) >= self.members:
            return "read"
        if self.classic and stable and state in _REBALANCING and not self._asked_rejoin:
            self._asked_rejoin = True
            return "rejoin"
        return "wait"

    def close(self) -> None:
        self._conn.close()


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
