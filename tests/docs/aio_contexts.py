"""What docs/asyncio.md's blocks run against: an embedded cluster with ``orders`` produced, an
event loop policy that keeps the blocks' loops for the checks after them, and the group's
committed offsets read back.  As tests/docs/contexts.py, for the asyncio consumer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafka.structs import TopicPartition

from groupclient import GroupConsumer
from groupclient.coordinator import EmbeddedCluster
from tests.docs.contexts import RECORDS, docs_cluster
from tests.docs.runners import Enough, Prepared


class _LoopsKept(asyncio.DefaultEventLoopPolicy):
    """asyncio's default policy, keeping the loops it makes (those of a block's asyncio.run())."""

    def __init__(self) -> None:
        super().__init__()
        self.loops: list[asyncio.AbstractEventLoop] = []

    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        loop = super().new_event_loop()
        self.loops.append(loop)
        return loop


def _cancel_all_tasks(loop: asyncio.AbstractEventLoop) -> None:
    for task in asyncio.all_tasks(loop):
        task.cancel()


@contextmanager
def aio_orders(per_partition: int) -> Iterator[tuple[EmbeddedCluster, Callable[[dict[str, Any]], None]]]:
    """A cluster whose ``orders`` has 3 partitions of ``per_partition`` records (``b"{p}-{i}"``),
    and a watchdog for an asyncio block: it cancels every task of the loops the block's
    ``asyncio.run()`` made, so a block that does not get its records fails instead of hanging."""
    policy = _LoopsKept()
    previous = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(policy)

    def watchdog(namespace: dict[str, Any]) -> None:
        for loop in policy.loops:
            try:
                loop.call_soon_threadsafe(_cancel_all_tasks, loop)
            except RuntimeError:  # that loop is closed already
                pass

    try:
        with docs_cluster() as cluster:
            cluster.create_topic("orders", 3)
            for partition in range(3):
                cluster.produce("orders", [f"{partition}-{i}".encode() for i in range(per_partition)],
                                partition=partition)
            yield cluster, watchdog
    finally:
        asyncio.set_event_loop_policy(previous)


def _committed(address: str, group: str) -> dict[int, int | None]:
    """Group ``group``'s committed offsets of ``orders``' partitions."""
    consumer = GroupConsumer(bootstrap_servers=address, group_id=group, enable_auto_commit=False)
    try:
        found = {p: consumer.committed(TopicPartition("orders", p)) for p in range(3)}
    finally:
        consumer.close()
    return {p: offset if isinstance(offset, int) or offset is None else int(offset.offset)
            for p, offset in found.items()}


@contextmanager
def aio_printing(tmp_path: Path) -> Iterator[Prepared]:
    """docs/asyncio.md's ``async for`` loop: ``orders`` holds 30 records (10 a partition); ``print``
    ends the block once all came, each exactly once; leaving ``async with`` stopped the consumer,
    whose auto-commit covered all of them."""
    seen: list[tuple[int, int, bytes]] = []

    def record_seen(partition: int, offset: int, value: bytes) -> None:
        seen.append((partition, offset, value))
        if len(seen) == RECORDS:
            raise Enough

    with aio_orders(RECORDS // 3) as (cluster, watchdog):
        def after(namespace: dict[str, Any]) -> None:
            assert sorted(seen) == [(p, o, f"{p}-{o}".encode()) for p in range(3) for o in range(10)], seen
            assert _committed(cluster.bootstrap_servers, "billing") == {0: 10, 1: 10, 2: 10}

        yield Prepared({"print": record_seen}, cluster.bootstrap_servers, after, watchdog)


@contextmanager
def aio_batches(tmp_path: Path) -> Iterator[Prepared]:
    """docs/asyncio.md's ``getmany()`` loop: ``orders`` holds 300 records (100 a partition); the
    application's ``store(records)`` ends the block once all came, each exactly once.  The commits
    after each batch cover exactly the batches stored before the last ``getmany()``: everything but
    that call's at most 100 records, and never a record of the ``store()`` that ended the block."""
    per_partition = 100
    calls: list[list[Any]] = []

    async def store(records: list[Any]) -> None:
        calls.append(list(records))
        if sum(len(c) for c in calls) == 3 * per_partition:
            raise Enough

    with aio_orders(per_partition) as (cluster, watchdog):
        def after(namespace: dict[str, Any]) -> None:
            stored = sorted((r.partition, r.offset) for call in calls for r in call)
            assert stored == [(p, o) for p in range(3) for o in range(per_partition)], len(stored)
            committed = _committed(cluster.bootstrap_servers, "billing")
            last = calls[-1]
            assert (committed[last[0].partition] or 0) <= last[0].offset, (committed, last[0])
            total = sum(offset or 0 for offset in committed.values())
            assert 2 * per_partition <= total <= 3 * per_partition - len(last), committed

        yield Prepared({"store": store}, cluster.bootstrap_servers, after, watchdog)


@contextmanager
def aio_listener(tmp_path: Path) -> Iterator[Prepared]:
    """docs/asyncio.md's listener: ``orders`` holds 10 records a partition; the application's
    ``load_offset(tp)`` says 5 for each, so ``handle(record)`` must get offsets 5..9 of each
    partition (the listener's seek), each once, and ends the block with the 15th.  Leaving
    ``async with`` stopped the consumer: its listener heard the revocation and committed (there
    is no auto-commit), 10 for each partition."""
    handled: list[tuple[int, int]] = []
    asked: list[TopicPartition] = []

    async def load_offset(tp: TopicPartition) -> int:
        asked.append(tp)
        return 5

    async def handle(record: Any) -> None:
        handled.append((record.partition, record.offset))
        if len(handled) == 15:
            raise Enough

    with aio_orders(10) as (cluster, watchdog):
        def after(namespace: dict[str, Any]) -> None:
            assert sorted(asked) == [TopicPartition("orders", p) for p in range(3)], asked
            assert sorted(handled) == [(p, o) for p in range(3) for o in range(5, 10)], handled
            assert _committed(cluster.bootstrap_servers, "billing") == {0: 10, 1: 10, 2: 10}

        yield Prepared({"load_offset": load_offset, "handle": handle}, cluster.bootstrap_servers, after,
                       watchdog)
