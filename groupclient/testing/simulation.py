"""``GroupSimulation``: a whole consumer group in one process, on one fake clock.

The members are real ``GroupConsumer`` objects (member logic, assignors, listeners, network
client) and the broker is the real coordinator core; only the sockets are in memory and time is
simulated (see :mod:`.scheduler`).  After every step the :class:`~.invariants.Invariants` are
checked, so a violation is reported at the instant it happens, with the schedule so far.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Any

from ..structs import TopicPartition

from ..consumer.group_consumer import GroupConsumer
from ..coordinator.classic_group.metadata import Group
from ..coordinator.config import CoordinatorConfig
from ..coordinator.consumer_group.group import ConsumerGroup
from ..coordinator.core import ClusterCore
from ..coordinator.faults import FaultRule
from .invariants import Invariants
from .members import Behaviour, RecordingConsumer, SimMember
from .network import SimIO, SimNetwork
from .scheduler import Scheduler
from .server import SimServerRuntime
from .share_invariants import ShareInvariants
from .share_members import ShareBehaviour, ShareLedger, ShareSimMember

log = logging.getLogger("groupclient.testing")

BASE_PORT = 19092  # simulated addresses; nothing listens on them

MEMBER_DEFAULTS: dict[str, Any] = {
    "auto_offset_reset": "earliest",
    "session_timeout_ms": 10_000,
    "heartbeat_interval_ms": 3_000,
    "max_poll_interval_ms": 30_000,
    "fetch_max_wait_ms": 1000,
    "request_timeout_ms": 30_000,
    "retry_backoff_ms": 100,
    "auto_commit_interval_ms": 1_000,
    # as in kafka-python, a given api_version skips the constructor's bootstrap: a member is
    # built on the driver's thread, and the simulated network runs only once the schedule does
    "api_version": (4, 1),
}
# settings only the classic protocol has: under group_protocol="consumer" the broker sets the
# session and the heartbeat interval (and GroupConsumer refuses them)
CLASSIC_ONLY_DEFAULTS = ("session_timeout_ms", "heartbeat_interval_ms")
# the coordinator's consumer groups (KIP-848), at the classic members' scale rather than Kafka's
# 5 s heartbeat and 45 s session: a simulated rebalance takes a few heartbeats, not a minute
CONSUMER_GROUP_DEFAULTS: dict[str, int] = {
    "group_consumer_heartbeat_interval_ms": 2_000,
    "group_consumer_min_heartbeat_interval_ms": 1_000,
    "group_consumer_session_timeout_ms": 10_000,
    "group_consumer_min_session_timeout_ms": 6_000,
}


class GroupSimulation:
    """Build a cluster, add members, apply faults, run time forward; invariants are always on.

    >>> sim = GroupSimulation(seed=1, topics={"orders": 6})
    >>> a, b = sim.add_member("a"), sim.add_member("b")
    >>> sim.run_until(sim.converged, max_ms=60_000)
    True
    """

    def __init__(self, seed: int = 0, *, nodes: int = 1, topics: dict[str, int] | None = None,
                 group_id: str = "sim-group", share_group_id: str = "sim-share", min_latency_ms: int = 1, max_latency_ms: int = 5,
                 check_invariants: bool = True, record_trace: bool = False, **coordinator_settings: Any) -> None:
        """Every random draw (the scheduler's choices, latencies, the members' and the cluster's
        random sources) and every time comes from ``seed``: a seed replays byte for byte.
        ``record_trace`` keeps every frame sent and answered in ``network.trace``.
        ``coordinator_settings`` are CoordinatorConfig's; the consumer groups' heartbeat interval
        and session default to CONSUMER_GROUP_DEFAULTS."""
        coordinator_settings.setdefault("group_initial_rebalance_delay_ms", 0)
        coordinator_settings.setdefault("offsets_topic_partitions", 1)
        for what in ("heartbeat_interval_ms", "session_timeout_ms"):  # a lower value given lowers the minimum
            key, low = f"group_consumer_{what}", f"group_consumer_min_{what}"
            value = coordinator_settings.setdefault(key, CONSUMER_GROUP_DEFAULTS[key])
            coordinator_settings.setdefault(low, min(value, CONSUMER_GROUP_DEFAULTS[low]))
        self.seed = seed
        self.group_id = group_id
        self.scheduler = Scheduler(seed)
        self.config = CoordinatorConfig(**coordinator_settings)
        self.core = ClusterCore(self.config, self.scheduler, None,
                                [("127.0.0.1", BASE_PORT + i) for i in range(nodes)],
                                runtime=SimServerRuntime(self.scheduler), rng=random.Random(f"{seed}/cluster"))
        for node in self.core.nodes.values():
            node.live = True
        self.core.reassign_coordinators()
        self.network = SimNetwork(self.scheduler, self.core, min_latency_ms, max_latency_ms)
        if record_trace:
            self.network.trace = []
        self.members: dict[str, SimMember] = {}  # by name; a restarted member replaces its old self
        self.delivered: dict[TopicPartition, set[int]] = {}  # every offset any member was given
        self.log: list[str] = []  # what the schedule did, in order, with times
        self._incarnations: dict[str, int] = {}  # members started under each name
        for name, partitions in (topics or {"t": 6}).items():
            self.core.topics.create(name, partitions)
        self.invariants = Invariants(self)
        # share-group members (KIP-932), in a group of their own, and what they were handed
        self.share_group_id = share_group_id
        self.share_members: dict[str, ShareSimMember] = {}
        self.share_ledger = ShareLedger()
        self.share_invariants = ShareInvariants(self)
        if check_invariants:
            self.scheduler.observers.append(self.invariants.check)
            self.scheduler.observers.append(self.share_invariants.check)

    # -- addresses and inspection ------------------------------------------------------------
    @property
    def now(self) -> int:
        return self.scheduler.now

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{n.host}:{n.port}" for n in self.core.nodes.values())

    def note(self, what: str) -> None:
        self.log.append(f"t={self.now} {what}")
        log.info("sim t=%d %s", self.now, what)

    def coordinator_group(self) -> Group | None:
        """The group as a classic group on its coordinator (None: none, moving, or a consumer group)."""
        node = self.core.coordinator_node_for(self.group_id)
        if node is None:
            return None
        return node.coordinator.groups.get(self.group_id)

    def consumer_group(self) -> ConsumerGroup | None:
        """The group as a consumer-protocol (KIP-848) group on its coordinator (None: none,
        moving, or a classic group).  Its classic members are in it too."""
        node = self.core.coordinator_node_for(self.group_id)
        if node is None:
            return None
        return node.coordinator.consumer.get(self.group_id)

    def group_member_ids(self) -> set[str] | None:
        """The member ids the coordinator counts, whichever protocol the group speaks (None while
        no coordinator serves a group of that id)."""
        group = self.coordinator_group()
        if group is not None:
            return set(group.members)
        consumer_group = self.consumer_group()
        return None if consumer_group is None else set(consumer_group.members)

    def partitions(self, topics: list[str] | None = None) -> set[TopicPartition]:
        names = topics if topics is not None else list(self.core.topics.topics)
        return {TopicPartition(t, p) for t in names for p in range(len(self.core.topics.topics[t].partitions))}

    def committed(self) -> dict[TopicPartition, int]:
        return {TopicPartition(t, p): c.offset
                for (t, p), c in self.core.group_store.offsets.get(self.group_id, {}).items()}

    def end_offsets(self) -> dict[TopicPartition, int]:
        return {TopicPartition(name, i): part.high_watermark
                for name, topic in self.core.topics.topics.items() for i, part in enumerate(topic.partitions)}

    def live_members(self) -> list[SimMember]:
        return [m for m in self.members.values() if m.alive]

    # -- members -------------------------------------------------------------------------
    def add_member(self, name: str, topics: list[str] | None = None, *, listener: Any = None,
                   behaviour: Behaviour | None = None, **configs: Any) -> SimMember:
        """Start a member whose application loop polls, processes and commits per ``behaviour``."""
        if name in self.members and self.members[name].alive:
            raise ValueError(f"member {name!r} is already running")
        settings = self._member_settings(name, configs)
        b = behaviour or Behaviour()
        if b.commit != "auto":
            settings.setdefault("enable_auto_commit", False)
        io = SimIO(self.network, name)
        consumer = GroupConsumer(clock=self.scheduler, io=io, rng=self._member_rng(name), **settings)
        member = SimMember(self.scheduler, self.delivered, name, topics or sorted(self.core.topics.topics), consumer, io, b)
        self.members[name] = member
        member.thread = self.scheduler.spawn(f"{name}-app", lambda: member.run(listener), owner=name)
        self.note(f"member {name} starts")
        return member

    def consumer(self, name: str, topics: list[str] | None = None, **configs: Any) -> GroupConsumer:
        """A member whose consumer the test drives itself, from its own thread: each blocking call
        (poll, commit, close...) runs the simulation until it returns.  What it delivers and owns
        is checked by the invariants like any member's."""
        if name in self.members and self.members[name].alive:
            raise ValueError(f"member {name!r} is already running")
        settings = self._member_settings(name, configs)
        io = SimIO(self.network, name)
        consumer = RecordingConsumer(clock=self.scheduler, io=io, rng=self._member_rng(name), **settings)
        member = SimMember(self.scheduler, self.delivered, name, topics or [], consumer, io, Behaviour(commit="none"))
        consumer.sim_member = member
        self.members[name] = member
        self.note(f"member {name} starts (driven by the test)")
        return consumer

    def add_share_member(self, name: str, topics: list[str] | None = None, *,
                         behaviour: ShareBehaviour | None = None, **configs: Any) -> ShareSimMember:
        """Start a member of the share group whose application loop polls, acknowledges and
        commits per ``behaviour``; ``configs`` are ShareConsumer settings."""
        if name in self.share_members and self.share_members[name].alive:
            raise ValueError(f"share member {name!r} is already running")
        settings = {"group_id": self.share_group_id, "client_id": name, "bootstrap_servers": self.bootstrap_servers,
                    "fetch_max_wait_ms": 1000, "request_timeout_ms": 30_000, "retry_backoff_ms": 100, **configs}
        rng = self._member_rng(name)
        member = ShareSimMember(self.scheduler, self.share_ledger, name, topics or sorted(self.core.topics.topics),
                                settings, SimIO(self.network, name), behaviour or ShareBehaviour(), rng,
                                random.Random(f"{self.seed}/{name}/{self._incarnations[name]}/acks"))
        self.share_members[name] = member
        member.thread = self.scheduler.spawn(f"{name}-app", member.run, owner=name)
        self.note(f"share member {name} starts")
        return member

    def share_drained(self) -> bool:
        """Every record of every topic finished by the share group (Acknowledged or Archived)."""
        for name, topic in self.core.topics.topics.items():
            for index, log in enumerate(topic.partitions):
                partition = self.share_invariants.share_partition(TopicPartition(name, index))
                if partition is None or partition.start_offset != log.high_watermark:
                    return False
        return True

    def describe_share(self) -> str:
        """The share group's members and assignments on the coordinator, each share-partition's
        window, and each live share member's view, for failure messages."""
        group = self.core.share_groups.groups.get(self.share_group_id)
        lines = [f"t={self.now} share group: " + ("none" if group is None else f"epoch {group.epoch} " + str(sorted(
            f"{m.member_id}@{m.epoch}:{sorted(p for _, p in m.assigned)}" for m in group.members.values())))]
        for name, topic in self.core.topics.topics.items():
            for index, log in enumerate(topic.partitions):
                partition = self.share_invariants.share_partition(TopicPartition(name, index))
                if partition is None:
                    lines.append(f"{name}-{index}: not started (log end {log.high_watermark})")
                    continue
                held = sorted({(r.state.name, r.member, r.deliveries) for r in partition.window.values()})
                lines.append(f"{name}-{index}: start {partition.start_offset} next {partition.next_offset} log end "
                             f"{log.high_watermark}; window {held[:6]}")
        for member in self.share_members.values():
            if member.alive and member.consumer is not None:
                c = member.consumer
                lines.append(f"{member.name} ({member.member_id}): {c!r} metrics {c.metrics()} "
                             f"errors {[repr(e) for _, e in member.errors[-3:]]}")
        return "\n  ".join(lines)

    def _any_member(self, name: str) -> SimMember | ShareSimMember:
        return self.share_members[name] if name in self.share_members else self.members[name]

    def _member_settings(self, name: str, configs: dict[str, Any]) -> dict[str, Any]:
        """MEMBER_DEFAULTS, the group and the addresses, then ``configs``; without the classic
        protocol's own settings for a consumer-protocol member (``group_protocol="consumer"``)."""
        defaults = dict(MEMBER_DEFAULTS)
        if str(configs.get("group_protocol", "classic")).lower() == "consumer":
            for key in CLASSIC_ONLY_DEFAULTS:
                defaults.pop(key, None)
        return {**defaults, "group_id": self.group_id, "client_id": name,
                "bootstrap_servers": self.bootstrap_servers, **configs}

    def _member_rng(self, name: str) -> random.Random:
        """The random source of a member's consumer, from the seed and the member's name and
        incarnation: its draws replay with the seed and never shift the scheduler's."""
        self._incarnations[name] = self._incarnations.get(name, 0) + 1
        return random.Random(f"{self.seed}/{name}/{self._incarnations[name]}")

    def crash(self, name: str) -> None:
        """Kill the member's process: no LeaveGroup, no commit, its connections reset."""
        member = self._any_member(name)
        member.state = "crashed"
        member.io.kill()
        self.scheduler.crash(name)
        self.note(f"member {name} crashes")

    def leave(self, name: str) -> None:
        """Let the member's application close its consumer (commit, revoke, LeaveGroup)."""
        self._any_member(name).stop()
        self.note(f"member {name} is asked to close")

    def pause(self, name: str, ms: int) -> None:
        """The application stops calling poll() for ``ms`` (slow processing); threads go on."""
        member = self._any_member(name)
        member.behaviour.pause_until_ms = self.now + ms
        self.note(f"member {name} stops polling for {ms} ms")

    def stall(self, name: str, ms: int) -> None:
        """Freeze the whole member, heartbeat thread included, for ``ms`` (SIGSTOP/SIGCONT)."""
        self.scheduler.freeze(name, self.now + ms)
        self.note(f"member {name} is frozen for {ms} ms")

    def cut(self, name: str) -> None:
        """Reset every connection of the member (it reconnects by itself)."""
        self._any_member(name).io.cut()
        self.note(f"member {name}'s connections are cut")

    def cut_off(self, name: str, node_id: int) -> None:
        """Cut the member off from one node (a partial partition: its connections there are
        reset and new ones refused) until :meth:`reconnect`; it still reaches the others."""
        self.members[name].io.cut_off(node_id)
        self.note(f"member {name} is cut off from node {node_id}")

    def reconnect(self, name: str) -> None:
        """End every partial partition of the member."""
        self.members[name].io.unreachable.clear()
        self.note(f"member {name} reaches every node again")

    # -- the broker ----------------------------------------------------------------------
    def inject_fault(self, rule: FaultRule) -> None:
        self.core.faults.add(rule)
        self.note(f"fault: {rule}")

    def stop_node(self, node_id: int) -> None:
        node = self.core.nodes[node_id]
        node.live = False
        self.network.close_node_connections(node_id)
        node.coordinator.unload_all()
        self.core.reassign_coordinators()
        self.note(f"node {node_id} stops")

    def start_node(self, node_id: int) -> None:
        self.core.nodes[node_id].live = True
        self.core.reassign_coordinators()
        self.note(f"node {node_id} starts")

    def produce(self, topic: str, count: int, value_size: int = 16) -> None:
        items: list[tuple[bytes | None, bytes | None]] = [
            (None, f"{i:0{value_size}d}".encode()[:value_size]) for i in range(count)]
        self.core.append_records(topic, items)

    # -- time ----------------------------------------------------------------------------
    def run_for(self, ms: int) -> None:
        self.scheduler.run_for(ms)

    def run_until(self, condition: Callable[[], bool], max_ms: int) -> bool:
        return self.scheduler.run_until(condition, max_ms)

    def converged(self) -> bool:
        """Every live member is in the group's current generation (a consumer group's epoch),
        the coordinator's group is Stable with exactly those members, and their assignments cover
        every subscribed partition exactly once."""
        classic, consumer_group = self.coordinator_group(), self.consumer_group()
        live = self.live_members()
        members: set[str]
        if consumer_group is not None:
            stable, generation = consumer_group.state == "Stable", consumer_group.epoch
            members = set(consumer_group.members)
        elif classic is not None:
            stable, generation, members = classic.state.value == "Stable", classic.generation_id, set(classic.members)
        else:
            return not live
        if not stable:
            return not live and not members
        ids = set()
        owned: list[TopicPartition] = []
        for member in live:
            meta = member.consumer.group_metadata()
            if meta.generation_id != generation or meta.phase != "stable":
                return False
            ids.add(meta.member_id)
            owned.extend(member.owned())
        if ids != members:
            return False
        wanted = self.partitions(sorted({t for m in live for t in m.topics}))
        return len(owned) == len(set(owned)) and set(owned) == wanted

    def describe(self) -> str:
        """The coordinator's view and each live member's, for failure messages."""
        group, consumer_group = self.coordinator_group(), self.consumer_group()
        if consumer_group is not None:
            view = (f"consumer group {consumer_group.state} epoch {consumer_group.epoch} (assignment epoch "
                    f"{consumer_group.assignment_epoch}) members " + str(sorted(
                        f"{m.member_id}@{m.assignment.epoch}{'/classic' if m.classic else ''}"
                        for m in consumer_group.members.values())))
        elif group is not None:
            view = f"{group.state.value} generation {group.generation_id} members {sorted(group.members)}"
        else:
            view = "none"
        lines = [f"t={self.now} coordinator: {view}"]
        for member in self.live_members():
            meta = member.consumer.group_metadata()
            lines.append(f"{member.name} ({member.protocol}): {meta.phase} generation {meta.generation_id} "
                         f"member {meta.member_id} "
                         f"owns {sorted(f'{tp.topic}-{tp.partition}' for tp in member.owned())} "
                         f"errors {[repr(e) for _, e in member.errors[-3:]]}")
        return "\n  ".join(lines)

    def close(self) -> None:
        """Crash whatever still runs, so no thread outlives the simulation.  The invariants are
        no longer checked: a violation already raised is not raised again while it winds down."""
        self.scheduler.observers.clear()
        everyone: list[tuple[str, SimMember | ShareSimMember]] = [*self.members.items(), *self.share_members.items()]
        for name, member in everyone:
            if member.alive:
                member.io.kill()
                self.scheduler.crash(name)
        self.scheduler.run_until(lambda: not self.scheduler.live_actors(), max_ms=60_000)
