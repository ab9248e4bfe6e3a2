"""What docs/share-groups.md's blocks run against: an embedded cluster whose topic ``jobs`` holds 30
records, and a share group ``workers`` that reads it from the start; afterwards, checks that each
block did what the page says it does."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from groupclient import ShareConsumer
from tests.docs.contexts import docs_cluster
from tests.docs.runners import Enough, Prepared

JOBS = 30


def _earliest(bootstrap: str, group: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, group, configs={
            "share.auto.offset.reset": "earliest"})])
    finally:
        admin.close()


@contextmanager
def _jobs(earliest: bool = True) -> Iterator[Any]:
    with docs_cluster() as cluster:
        cluster.create_topic("jobs", 2)
        cluster.produce("jobs", [f"job-{i}".encode() for i in range(JOBS)])
        if earliest:
            _earliest(cluster.bootstrap_servers, "workers")
        yield cluster


def _watchdog(namespace: dict[str, Any]) -> None:
    consumer = namespace.get("consumer")
    if consumer is not None:
        consumer.wakeup()  # the block did not get its records in time


@contextmanager
def implicit(tmp_path: Path) -> Iterator[Prepared]:
    """The implicit-mode loop: ``handle`` ends it once every job came, each once."""
    seen: list[Any] = []

    def handle(record: Any) -> None:
        seen.append(record)
        if len(seen) == JOBS:
            raise Enough

    def after(namespace: dict[str, Any]) -> None:
        assert sorted(r.value for r in seen) == sorted(f"job-{i}".encode() for i in range(JOBS))
        assert {r.delivery_count for r in seen} == {1}

    with _jobs() as cluster:
        yield Prepared({"handle": handle}, cluster.bootstrap_servers, after, _watchdog)


class TemporaryError(Exception):
    """What the explicit-mode block's ``handle`` raises for a job that is to be tried again."""


@contextmanager
def explicit(tmp_path: Path) -> Iterator[Prepared]:
    """The explicit-mode loop: job-3 fails once (released: it comes back at its second delivery),
    job-5 fails for good (rejected: never again); ``done()`` once both happened and all came."""
    seen: list[Any] = []

    def handle(record: Any) -> None:
        seen.append((record.value, record.delivery_count))
        if record.value == b"job-3" and record.delivery_count == 1:
            raise TemporaryError
        if record.value == b"job-5":
            raise ValueError("not a job")

    def done() -> bool:
        return len({value for value, _ in seen}) == JOBS and (b"job-3", 2) in seen

    def after(namespace: dict[str, Any]) -> None:
        assert sorted(seen).count((b"job-5", 1)) == 1 and all(v != b"job-5" or n == 1 for v, n in seen)
        assert sorted(v for v, n in seen if n == 1) == sorted(f"job-{i}".encode() for i in range(JOBS))
        check = ShareConsumer("jobs", bootstrap_servers=namespace["consumer"].config["bootstrap_servers"],
                              group_id="workers")
        try:  # all were accepted or rejected: nothing comes back
            assert check.poll(timeout_ms=1500) == {}
        finally:
            check.close()

    with _jobs() as cluster:
        yield Prepared({"handle": handle, "done": done, "TemporaryError": TemporaryError},
                       cluster.bootstrap_servers, after, _watchdog)


@contextmanager
def starting_point(tmp_path: Path) -> Iterator[Prepared]:
    """The admin block sets ``share.auto.offset.reset``: a new member of ``workers`` then gets the
    jobs produced before it joined."""

    def after(namespace: dict[str, Any]) -> None:
        consumer = ShareConsumer("jobs", bootstrap_servers=address, group_id="workers")
        got: list[Any] = []
        try:
            for _ in range(100):
                for records in consumer.poll(timeout_ms=200).values():
                    got.extend(records)
                if len(got) >= JOBS:
                    break
        finally:
            consumer.close()
        assert len(got) == JOBS

    with _jobs(earliest=False) as cluster:
        address = cluster.bootstrap_servers
        yield Prepared({}, address, after)


@contextmanager
def asyncio_loop(tmp_path: Path) -> Iterator[Prepared]:
    """The asyncio block: its ``handle`` coroutine ends the loop once every job came, each once."""
    seen: list[Any] = []

    async def handle(record: Any) -> None:
        seen.append(record)
        if len(seen) == JOBS:
            raise Enough

    def after(namespace: dict[str, Any]) -> None:
        assert sorted(r.value for r in seen) == sorted(f"job-{i}".encode() for i in range(JOBS))

    with _jobs() as cluster:
        yield Prepared({"handle": handle}, cluster.bootstrap_servers, after)
