"""Fixtures of the asyncio differential suite: every test runs against aiokafka 0.14's
AIOKafkaConsumer and against groupclient.aio's AsyncGroupConsumer, on the embedded coordinator,
with the same arguments and the same assertions.

``api`` is the library under test: its consumer class, errors module, structs module and
listener base class, imported under aiokafka's names, as a program migrating changes imports
only.  A deliberate difference is a test named ``test_difference_*`` asserting each library's
behaviour, listed here:

- test_errors.py: ``test_difference_a_listener_error_is_raised_not_only_logged``
- test_rebalancing.py: ``test_difference_stop_revokes_through_the_listener``

(The group kept while the application blocks the loop is a difference too; it needs a blocked
loop and a session running out: tests/integration/test_aio_loop.py.)

Why this suite once passed while AsyncGroupConsumer joined its group only inside ``getmany()``:
every group scenario fetched before it looked (``drain()``, and ``until()``, which calls
``getmany()`` on each consumer until its condition holds), so the join always happened inside a
fetch, and nothing ran right after ``start()``.  So scenarios that are about what happens
without fetching are marked ``no_fetching``: their consumers' ``getmany()``/``getone()`` fail the
test, and they wait with :func:`settle`, which only sleeps (test_background.py).
"""

from __future__ import annotations

import asyncio
import importlib
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest
import pytest_asyncio

from groupclient.coordinator import EmbeddedCluster

LIBS = ("aiokafka", "groupclient-aio")
AK, GA = LIBS

# settings both libraries take, that keep tests quick against the embedded cluster
FAST: dict[str, Any] = {"fetch_max_wait_ms": 100, "heartbeat_interval_ms": 300, "session_timeout_ms": 6000,
                        "metadata_max_age_ms": 1000}


@dataclass(frozen=True)
class Api:
    """One library's names, as a program imports them."""

    lib: str
    consumer_class: type
    errors: ModuleType
    structs: ModuleType
    listener_base: type


def api_of(lib: str) -> Api:
    package = "aiokafka" if lib == AK else "groupclient.aio"
    module = importlib.import_module(package)
    consumer = getattr(module, "AIOKafkaConsumer" if lib == AK else "AsyncGroupConsumer")
    return Api(lib, consumer, importlib.import_module(f"{package}.errors"),
               importlib.import_module(f"{package}.structs"), module.ConsumerRebalanceListener)


@pytest.fixture(params=LIBS)
def api(request: pytest.FixtureRequest) -> Api:
    return api_of(request.param)


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0) as c:
        yield c


def _forbidden(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a no_fetching scenario fetched: what it checks must happen without getmany()/getone()")


@pytest_asyncio.fixture
async def make_consumer(api: Api, cluster: EmbeddedCluster,
                        request: pytest.FixtureRequest) -> AsyncIterator[Callable[..., Any]]:
    """``make_consumer(*topics, **config)``: the library's consumer on the cluster (not started);
    every one made is stopped after the test, within 30 s.  In a ``no_fetching`` test its
    ``getmany()`` and ``getone()`` fail the test."""
    made: list[Any] = []
    no_fetching = request.node.get_closest_marker("no_fetching") is not None

    def make(*topics: str, **config: Any) -> Any:
        consumer = api.consumer_class(*topics, bootstrap_servers=cluster.bootstrap_servers, **{**FAST, **config})
        if no_fetching:
            consumer.getmany = consumer.getone = _forbidden
        made.append(consumer)
        return consumer

    yield make
    for consumer in made:
        await asyncio.wait_for(consumer.stop(), 30)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def new_topic(cluster: EmbeddedCluster, partitions: int = 1, count: int = 0, prefix: str = "topic",
              partition: int | None = None) -> str:
    """A new topic with ``count`` records valued b"0", b"1"... (round robin over partitions)."""
    name = unique(prefix)
    cluster.create_topic(name, partitions)
    if count:
        cluster.produce(name, [str(i).encode() for i in range(count)], partition=partition)
    return name


async def drain(consumer: Any, count: int, timeout_s: float = 10.0, **getmany: Any) -> list[Any]:
    """getmany() until ``count`` records came or ``timeout_s`` passed."""
    records: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(records) < count and time.monotonic() < deadline:
        for batch in (await consumer.getmany(timeout_ms=100, **getmany)).values():
            records += batch
    return records


async def settle(predicate: Callable[[], bool], timeout_s: float = 15.0) -> bool:
    """Sleep (no fetching) until ``predicate`` holds or ``timeout_s`` passed: what it waits for
    must happen in the background."""
    deadline = time.monotonic() + timeout_s
    while not predicate() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return predicate()


async def until(predicate: Callable[[], bool], consumers: list[Any], timeout_s: float = 15.0) -> bool:
    """getmany() on each consumer (records dropped) until ``predicate`` holds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.gather(*(c.getmany(timeout_ms=50) for c in consumers))
    return predicate()
