"""State shared by all nodes of one cluster: topics, groups, leadership, waiting fetches.

Everything here runs on the cluster's event loop thread; nothing is locked.
"""

from __future__ import annotations

import logging
import os
import random
import uuid
from pathlib import Path
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder

from ..clock import Clock
from ..protocol.consumer_group_heartbeat import new_member_id as consumer_member_id
from .config import CoordinatorConfig
from .consumer_group.records import ConsumerGroupRecords
from .faults import FaultInjector
from .memory_pool import RequestMemoryPool
from .node import BrokerNode
from .placement import elect_leader, offsets_partition_for
from .runtime import AsyncioRuntime, ServerRuntime, Waiter
from .share_group.service import ShareGroups
from .storage.group_store import GroupStore
from .storage.topic_log import TopicStore
from .telemetry import CoordinatorTelemetry, coordinator_telemetry

log = logging.getLogger("groupclient.coordinator")

Record = tuple[bytes | None, bytes | None]  # (key, value)


def _cluster_id(data_dir: Path | None, rng: random.Random) -> str:
    if data_dir is None:
        return f"groupclient-{rng.getrandbits(64):016x}"
    path = data_dir / "cluster_id"
    if path.exists():
        value = path.read_text().strip()
        if value:
            return value
    data_dir.mkdir(parents=True, exist_ok=True)
    value = f"groupclient-{rng.getrandbits(64):016x}"
    # written aside and renamed: a crash while writing never leaves an empty id behind
    partial = path.with_name("cluster_id.partial")
    partial.write_text(value + "\n")
    os.replace(partial, path)
    return value


class ClusterCore:
    """The cluster's state shared by its nodes: topics, groups, which node leads what."""

    def __init__(self, config: CoordinatorConfig, clock: Clock, data_dir: Path | None,
                 node_addresses: list[tuple[str, int]], runtime: ServerRuntime | None = None,
                 rng: random.Random | None = None, meter_provider: Any = None) -> None:
        """``rng``: every random id the cluster makes (cluster, topics, members) comes from it; the
        simulator passes a seeded one, so a seed replays them.  ``meter_provider``: where the
        coordinator's metrics go (telemetry.py; None: the global provider, if one was set)."""
        if not node_addresses:
            raise ValueError("a cluster needs at least one node")
        self.config = config
        self.clock = clock
        self.rng = rng or random.Random()
        self.runtime: ServerRuntime = runtime or AsyncioRuntime()
        self.data_dir = data_dir
        self.cluster_id = _cluster_id(data_dir, self.rng)
        self.topics = TopicStore(data_dir, config.fsync, config.max_open_log_files, rng=self.rng,
                                 first_producer_id=clock.wall_ms() << 8)
        self.group_store = GroupStore(data_dir, config.fsync, consumer_records=ConsumerGroupRecords())
        self.share_groups = ShareGroups(config, self.group_store)
        self.faults = FaultInjector()
        self.request_memory = RequestMemoryPool(config.queued_max_request_bytes)
        self.telemetry: CoordinatorTelemetry | None = coordinator_telemetry(meter_provider)
        self.nodes: dict[int, BrokerNode] = {
            node_id: BrokerNode(self, node_id, host, port, self.telemetry)
            for node_id, (host, port) in enumerate(node_addresses)
        }
        self._node_ids = sorted(self.nodes)
        self._offsets_leaders: dict[int, int | None] = {}
        self._append_waiters: dict[tuple[str, int], set[Waiter[None]]] = {}
        self.topics.on_append = self._notify_append

    def new_member_id(self, client_id: str) -> str:
        """A member id as Kafka makes them: the client id and a random UUID."""
        return f"{client_id}-{uuid.UUID(int=self.rng.getrandbits(128), version=4)}"

    def new_consumer_member_id(self) -> str:
        """A consumer-protocol member id as Kafka makes one for a v0 member: a random UUID in base64."""
        return consumer_member_id(self.rng)

    # -- leadership ----------------------------------------------------------------------
    def live_nodes(self) -> list[BrokerNode]:
        """The nodes up, by id."""
        return [self.nodes[i] for i in self._node_ids if self.nodes[i].live]

    def _live_ids(self) -> set[int]:
        return {n.node_id for n in self.live_nodes()}

    def controller_id(self) -> int:
        """The lowest live node id (-1: none up)."""
        live = self.live_nodes()
        return live[0].node_id if live else -1

    def partition_leader(self, partition: int) -> int | None:
        """The node leading a partition (None: no node up)."""
        return elect_leader(partition, self._node_ids, self._live_ids())

    def coordinator_node_for(self, group_id: str) -> BrokerNode | None:
        """The node coordinating a group id (None: its offsets partition has no leader)."""
        partition = offsets_partition_for(group_id, self.config.offsets_topic_partitions)
        leader = self._offsets_leaders.get(partition)
        return self.nodes[leader] if leader is not None else None

    def reassign_coordinators(self) -> None:
        """Move each offsets partition to its elected leader, unloading and loading groups."""
        now = self.clock.monotonic_ms()
        live = self._live_ids()
        for partition in range(self.config.offsets_topic_partitions):
            new = elect_leader(partition, self._node_ids, live)
            old = self._offsets_leaders.get(partition)
            if new == old:
                continue
            if old is not None:
                self.nodes[old].coordinator.unload_partition(partition)
            if new is not None:
                self.nodes[new].coordinator.load_partition(partition, now)
            self._offsets_leaders[partition] = new
            if old is not None and new is not None:
                log.info("offsets partition %d moved from node %s to node %s", partition, old, new)
            elif old is not None:
                log.info("offsets partition %d has no live node (it was on node %s)", partition, old)
        for node in self.nodes.values():
            node.kick_timers()

    # -- lifecycle -----------------------------------------------------------------------
    async def start_node(self, node_id: int) -> None:
        """Start a node; offsets partitions move to it as elected."""
        await self.nodes[node_id].start()
        self.reassign_coordinators()

    async def stop_node(self, node_id: int) -> None:
        """Stop a node; its offsets partitions move to live nodes."""
        await self.nodes[node_id].stop()
        self.reassign_coordinators()

    async def start(self) -> None:
        """Start every node."""
        for node_id in self._node_ids:
            await self.nodes[node_id].start()
        self.reassign_coordinators()

    async def stop(self, reason: str = "stopped") -> None:
        """Stop every node: one INFO line says so; the groups are unloaded, not moved."""
        live = self.live_nodes()
        if live:
            groups = sum(len(n.coordinator.groups) for n in live)
            kept = f"kept in {self.data_dir}" if self.data_dir is not None else "not kept (in memory only)"
            log.info("coordinator shutting down (%s): stopping node%s %s with %d group%s; groups and offsets %s",
                     reason, "s" if len(live) > 1 else "", ", ".join(str(n.node_id) for n in live),
                     groups, "" if groups == 1 else "s", kept)
        for node in live:
            await node.stop(shutting_down=True)
        for waiters in self._append_waiters.values():
            for fut in waiters:
                if not fut.done():
                    fut.cancel()
        self.topics.close()
        self.group_store.close()
        if self.telemetry is not None:
            self.telemetry.close()

    # -- records -------------------------------------------------------------------------
    def append_records(self, topic: str, items: list[Record], partition: int | None = None,
                       timestamp_ms: int | None = None) -> list[tuple[int, int]]:
        """Append records, each to ``partition`` or round-robin over the topic's partitions;
        ``(partition, offset)`` per record."""
        if topic not in self.topics.topics:
            raise KeyError(f"unknown topic {topic!r}")
        count = len(self.topics.topics[topic].partitions)
        by_partition: dict[int, list[tuple[int, Record]]] = {}
        for i, item in enumerate(items):
            target = partition if partition is not None else i % count
            by_partition.setdefault(target, []).append((i, item))
        placed: list[tuple[int, int]] = [(-1, -1)] * len(items)
        ts = timestamp_ms if timestamp_ms is not None else self.clock.wall_ms()
        for target, group in by_partition.items():
            builder = DefaultRecordBatchBuilder(
                magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                producer_epoch=-1, base_sequence=-1, batch_size=2**30)
            for offset_delta, (_, (key, value)) in enumerate(group):
                builder.append(offset_delta, ts, key, value, [])
            base = self.topics.append(topic, target, bytes(builder.build()), 2**30)
            for n, (i, _) in enumerate(group):
                placed[i] = (target, base + n)
        return placed

    # -- long-polling fetches ------------------------------------------------------------
    async def wait_for_append(self, keys: list[tuple[str, int]], timeout_ms: int) -> None:
        """Return when one of the partitions gets records, or after ``timeout_ms``."""
        waiter: Waiter[None] = self.runtime.create_waiter()
        for key in keys:
            self._append_waiters.setdefault(key, set()).add(waiter)

        def time_out() -> None:
            if not waiter.done():
                waiter.set_result(None)

        timer = self.runtime.call_later(timeout_ms, time_out)
        try:
            await waiter
        finally:
            timer.cancel()
            for key in keys:
                waiters = self._append_waiters.get(key)
                if waiters is not None:
                    waiters.discard(waiter)
                    if not waiters:
                        del self._append_waiters[key]

    def _notify_append(self, topic: str, partition: int) -> None:
        for fut in self._append_waiters.pop((topic, partition), ()):
            if not fut.done():
                fut.set_result(None)
