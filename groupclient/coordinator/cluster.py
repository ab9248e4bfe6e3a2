"""``EmbeddedCluster``: the coordinator running in a background thread of this process."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from ..clock import Clock, SystemClock
from .config import CoordinatorConfig
from .core import ClusterCore, Record
from .faults import FaultRule
from .memory_pool import PoolStats
from .placement import offsets_partition_for
from .telemetry import check_meter_provider

T = TypeVar("T")


class EmbeddedCluster:
    """One or several coordinator nodes on 127.0.0.1, served by a thread of this process.

    Use it as a context manager.  Methods may be called from any thread; they run on the
    cluster's own event loop and wait for the result.
    """

    def __init__(
        self,
        nodes: int = 1,
        data_dir: str | Path | None = None,
        group_initial_rebalance_delay_ms: int = 3000,
        offsets_topic_partitions: int = 50,
        *,
        host: str = "127.0.0.1",
        ports: Iterable[int] | None = None,
        clock: Clock | None = None,
        meter_provider: Any = None,
        **settings: Any,
    ) -> None:
        """``settings``: :class:`CoordinatorConfig` fields.  ``meter_provider``: an OpenTelemetry SDK
        ``MeterProvider`` for the coordinator's metrics (docs/observability.md; needs
        ``groupclient[otel]``); None: the global provider, if the application set one when the
        cluster starts, else no metrics at all."""
        if nodes < 1:
            raise ValueError("nodes must be at least 1")
        check_meter_provider(meter_provider)
        port_list = list(ports) if ports is not None else [0] * nodes
        if len(port_list) != nodes:
            raise ValueError(f"{nodes} nodes need {nodes} ports, got {len(port_list)}")
        self.config = CoordinatorConfig(
            group_initial_rebalance_delay_ms=group_initial_rebalance_delay_ms,
            offsets_topic_partitions=offsets_topic_partitions,
            **settings,
        )
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self._host = host
        self._ports = port_list
        self._clock = clock or SystemClock()
        self._meter_provider = meter_provider
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._core: ClusterCore | None = None

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> EmbeddedCluster:
        if self._thread is not None:
            raise RuntimeError("cluster already started")
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="groupclient-coordinator", daemon=True)
        self._thread.start()
        ready.wait()
        self._core = ClusterCore(self.config, self._clock, self.data_dir,
                                 [(self._host, p) for p in self._ports], meter_provider=self._meter_provider)
        try:
            self._run(self._core.start())
        except BaseException:
            self.stop()
            raise
        # later restarts of a node reuse the port it got
        self._ports = [n.port for n in self._core.nodes.values()]
        return self

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        try:
            if self._core is not None:
                self._run(self._core.stop())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop = None
            self._thread = None
            self._core = None

    def __enter__(self) -> EmbeddedCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- addresses -----------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{self._host}:{p}" for p in self._ports)

    def address_of(self, node_id: int) -> str:
        return f"{self._host}:{self._ports[node_id]}"

    # -- topics and records --------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1) -> None:
        self._call(lambda core: core.topics.create(name, partitions))

    def produce(self, topic: str, records: Iterable[Record | bytes], partition: int | None = None,
                timestamp_ms: int | None = None) -> list[tuple[int, int]]:
        """Append records; each goes to ``partition`` or round-robin over the topic's partitions.

        Returns ``(partition, offset)`` per record.
        """
        items = [r if isinstance(r, tuple) else (None, r) for r in records]
        return self._call(lambda core: core.append_records(topic, items, partition, timestamp_ms))

    def end_offsets(self, topic: str) -> dict[int, int]:
        return self._call(lambda core: {
            i: p.high_watermark for i, p in enumerate(core.topics.topics[topic].partitions)})

    # -- groups --------------------------------------------------------------------------
    def topic_partitions(self) -> dict[str, int]:
        """Every topic and its partition count."""
        return self._call(lambda core: {name: len(t.partitions) for name, t in core.topics.topics.items()})

    def storage_stats(self) -> dict[str, int]:
        """Topics, partitions, and the file descriptors partition journals hold now (at most
        ``max_open_log_files``; 0 without a data dir)."""
        return self._call(lambda core: {"topics": len(core.topics.topics), "partitions": core.topics.partition_count,
                                        "open_log_files": core.topics.open_files()})

    def request_memory_stats(self) -> PoolStats:
        """The budget for request bytes (``queued_max_request_bytes``): in use now, the peak,
        and the requests waiting for room."""
        return self._call(lambda core: core.request_memory.stats())

    def coordinator_of(self, group_id: str) -> int | None:
        def find(core: ClusterCore) -> int | None:
            node = core.coordinator_node_for(group_id)
            return node.node_id if node else None
        return self._call(find)

    def offsets_partition_of(self, group_id: str) -> int:
        return offsets_partition_for(group_id, self.config.offsets_topic_partitions)

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], int]:
        return self._call(lambda core: {
            tp: c.offset for tp, c in core.group_store.offsets.get(group_id, {}).items()})

    def describe_group(self, group_id: str) -> dict[str, Any] | None:
        def describe(core: ClusterCore) -> dict[str, Any] | None:
            node = core.coordinator_node_for(group_id)
            group = node.coordinator.groups.get(group_id) if node else None
            if group is None:
                return None
            return {
                "state": group.state.value,
                "generation": group.generation_id,
                "protocol": group.protocol_name,
                "leader": group.leader_id,
                "members": {m.member_id: {"instance_id": m.group_instance_id, "client_id": m.client_id,
                                          "assignment": m.assignment}
                            for m in group.members.values()},
            }
        return self._call(describe)

    def describe_consumer_group(self, group_id: str) -> dict[str, Any] | None:
        """A consumer-protocol group as its coordinator has it (None if there is none): state,
        group epoch, assignment epoch, assignor, and per member its epoch, what it owns and its
        target, by topic name."""
        def describe(core: ClusterCore) -> dict[str, Any] | None:
            node = core.coordinator_node_for(group_id)
            group = node.coordinator.consumer.get(group_id) if node else None
            if group is None:
                return None

            def named(partitions: Any) -> dict[str, list[int]]:
                return {core.topics.name_of(t) or str(t): sorted(ps) for t, ps in partitions.items() if ps}

            return {
                "state": group.state, "epoch": group.epoch, "assignment_epoch": group.assignment_epoch,
                "assignor": group.assignor_name,
                "members": {m.member_id: {"instance_id": m.instance_id, "client_id": m.client_id,
                                          "epoch": m.assignment.epoch, "assignment": named(m.assignment.assigned),
                                          "target": named(group.target.get(m.member_id, {}))}
                            for m in group.members.values()},
            }
        return self._call(describe)

    def share_partitions(self, group_id: str) -> dict[tuple[str, int], dict[str, Any]]:
        """A share group's share-partitions as the cluster has them, by (topic, partition): the
        start offset (every record before it is finished: acknowledged or archived), the next
        offset never handed out, and the records between them by state (``{"ACQUIRED": 2, ...}``)."""
        def describe(core: ClusterCore) -> dict[tuple[str, int], dict[str, Any]]:
            found: dict[tuple[str, int], dict[str, Any]] = {}
            for topic_id, index in core.share_groups.partitions_of(group_id):
                partition = core.share_groups.known_partition(group_id, topic_id, index)
                name = core.topics.name_of(topic_id)
                if partition is None or name is None:
                    continue
                states = Counter(record.state.name for record in partition.window.values())
                found[(name, index)] = {"start_offset": partition.start_offset, "next_offset": partition.next_offset,
                                        "states": dict(sorted(states.items()))}
            return found
        return self._call(describe)

    # -- faults and nodes ----------------------------------------------------------------
    def inject_fault(self, rule: FaultRule) -> None:
        rule = dataclasses.replace(rule)
        self._call(lambda core: core.faults.add(rule))

    def clear_faults(self) -> None:
        self._call(lambda core: core.faults.clear())

    def faults_fired(self) -> list[tuple[int, int, str]]:
        return self._call(lambda core: [(n, k, kind.value) for n, k, kind in core.faults.fired])

    def stop_node(self, node_id: int) -> None:
        self._run(self._require_core().stop_node(node_id))

    def start_node(self, node_id: int) -> None:
        self._run(self._require_core().start_node(node_id))

    def wait_until(self, predicate: Callable[[], bool], timeout_s: float = 30.0, interval_s: float = 0.05) -> bool:
        """Poll ``predicate`` until it holds or ``timeout_s`` passes (bounded test helper)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(interval_s)
        return bool(predicate())

    # -- plumbing ------------------------------------------------------------------------
    def _require_core(self) -> ClusterCore:
        if self._core is None:
            raise RuntimeError("the cluster is not running")
        return self._core

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._loop is None:
            coro.close()
            raise RuntimeError("the cluster is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=60)

    def _call(self, fn: Callable[[ClusterCore], T]) -> T:
        core = self._require_core()

        async def call() -> T:
            return fn(core)

        return self._run(call())
