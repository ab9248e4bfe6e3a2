"""Drives the sans-IO GroupCoordinator with a fake clock and captured callbacks."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groupclient.clock import FakeClock
from groupclient.coordinator.config import CoordinatorConfig
from groupclient.coordinator.consumer_group.group import ConsumerGroup
from groupclient.coordinator.consumer_group.records import ConsumerGroupRecords
from groupclient.coordinator.consumer_group.subscriptions import Topics
from groupclient.coordinator.group.coordinator import GroupCoordinator, JoinRequest, SyncRequest
from groupclient.coordinator.group_base.classic_api import JoinResult, SyncResult
from groupclient.coordinator.storage.group_store import GroupStore

RANGE = (("range", b"range-meta"),)


def group_store(data_dir: Path | None = None, **options: Any) -> GroupStore[ConsumerGroup]:
    """A GroupStore as the cluster opens one: consumer groups journaled as consumer_group/records.py
    makes their records."""
    return GroupStore(data_dir, consumer_records=ConsumerGroupRecords(), **options)


@dataclass
class Pending:
    """A response that may not have arrived yet."""

    results: list[object] = field(default_factory=list)

    def __call__(self, result: object) -> None:
        self.results.append(result)

    @property
    def done(self) -> bool:
        return bool(self.results)

    @property
    def result(self) -> object:
        assert len(self.results) == 1, f"expected exactly one answer, got {self.results}"
        return self.results[0]

    def join(self) -> JoinResult:
        r = self.result
        assert isinstance(r, JoinResult)
        return r

    def sync(self) -> SyncResult:
        r = self.result
        assert isinstance(r, SyncResult)
        return r


class Harness:
    def __init__(self, store: GroupStore[ConsumerGroup] | None = None,
                 cluster_topics: Callable[[], Topics] | None = None, **config: int) -> None:
        config.setdefault("group_initial_rebalance_delay_ms", 0)
        # a consumer group's new target at every change (Kafka's default batches them a second
        # apart: test_server_consumer_group_44.py and the tests that pass this setting have that)
        config.setdefault("group_consumer_assignment_interval_ms", 0)
        self.config = CoordinatorConfig(**config)  # type: ignore[arg-type]
        self.clock = FakeClock()
        self.store = store or group_store()
        ids = itertools.count(1)
        self.coordinator = GroupCoordinator(self.config, self.store, 0, lambda c: f"{c}-{next(ids)}",
                                            cluster_topics=cluster_topics)
        for p in range(self.config.offsets_topic_partitions):
            self.coordinator.load_partition(p, self.now)

    @property
    def now(self) -> int:
        return self.clock.monotonic_ms()

    def advance(self, ms: int) -> None:
        """Move time in small steps, running timers on the way, as the server's loop does."""
        target = self.now + ms
        while True:
            deadline = self.coordinator.next_deadline()
            if deadline is None or deadline > target:
                break
            self.clock.advance(max(deadline - self.now, 0))
            self.coordinator.on_timer(self.now)
        self.clock.advance(target - self.now)
        self.coordinator.on_timer(self.now)

    def join(self, member_id: str = "", group: str = "g", client: str = "c", instance: str | None = None,
             protocols: tuple[tuple[str, bytes], ...] = RANGE, session: int = 10_000, rebalance: int = 30_000,
             protocol_type: str = "consumer", v4: bool = True, skip_ok: bool = False) -> Pending:
        pending = Pending()
        req = JoinRequest(group, member_id, instance, client, "127.0.0.1", session, rebalance,
                          protocol_type, protocols, require_known_member_id=v4, supports_skip_assignment=skip_ok)
        self.coordinator.join_group(req, self.now, pending)
        return pending

    def join_new(self, client: str = "c", **kw: object) -> Pending:
        """A new member's two-step join (MEMBER_ID_REQUIRED, then again with the id)."""
        first = self.join(client=client, **kw).join()  # type: ignore[arg-type]
        assert first.error.name == "MEMBER_ID_REQUIRED"
        return self.join(first.member_id, client=client, **kw)  # type: ignore[arg-type]

    def sync(self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None,
             group: str = "g", instance: str | None = None) -> Pending:
        pending = Pending()
        req = SyncRequest(group, member_id, instance, generation, None, None, assignments or {})
        self.coordinator.sync_group(req, self.now, pending)
        return pending

    def heartbeat(self, member_id: str, generation: int, group: str = "g", instance: str | None = None) -> str:
        return self.coordinator.heartbeat(group, member_id, instance, generation, self.now).name

    def state(self, group: str = "g") -> str:
        return self.coordinator.groups[group].state.value

    def stable_group(self, n: int, group: str = "g") -> list[JoinResult]:
        """n members joined and synced; returns their join results in join order."""
        pendings = [self.join_new(client=f"m{i}", group=group) for i in range(n)]
        self.advance(self.config.group_initial_rebalance_delay_ms)
        results = [p.join() for p in pendings]
        leader = next(r for r in results if r.member_id == r.leader_id)
        assignments = {r.member_id: f"a-{r.member_id}".encode() for r in results}
        for r in results:
            self.sync(r.member_id, r.generation_id, assignments if r is leader else None, group=group)
        assert self.state(group) == "Stable"
        return results
