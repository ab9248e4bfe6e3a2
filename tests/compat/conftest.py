"""Fixtures of the differential compatibility suite.

``lib`` is parametrised over ``LIBS``; ``make_consumer(*topics, **config)`` builds the consumer of
that library (kafka-python's ``KafkaConsumer`` or ``GroupConsumer``) against the module's
embedded cluster, with the same arguments, and closes it after the test.  A test asserts what
kafka-python 3.0.12 does; the same assertion then holds (or fails) for groupclient.

Deliberate differences are tests named ``test_difference_*``; each asserts kafka-python's
behaviour for the kafka-python param and groupclient's for the groupclient param, and is listed
in its module's docstring.  All of them:

- test_config.py: ``test_difference_unknown_config_names_a_close_match``,
  ``test_difference_values_kafka_python_accepts_are_rejected``,
  ``test_difference_bootstrap_servers_of_the_wrong_type``,
  ``test_difference_subscribe_topics_of_the_wrong_type``,
  ``test_difference_subscribe_takes_any_iterable_of_topics``
- test_errors.py: ``test_difference_poll_without_subscription_raises_illegal_state``,
  ``test_difference_position_timeout_raises_instead_of_returning_none``
- test_records.py: ``test_difference_deserializers_are_not_called_for_null_key_or_value``,
  ``test_difference_a_deserializer_failure_names_the_record_and_can_be_skipped``
- test_offsets.py: ``test_difference_commit_async_future_completes_on_the_polling_thread``
- test_listeners.py: ``test_difference_duck_typed_listener_is_accepted``

Known kafka-python 3.0.12 bugs are asserted like any other expectation, with only the
kafka-python param marked ``xfail(strict=True)`` (see ``kafka_python_bug``).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest
from kafka import KafkaConsumer
from kafka.consumer.fetcher import ConsumerRecord

from groupclient import GroupConsumer
from groupclient.coordinator import EmbeddedCluster


LIBS = ("kafka-python", "groupclient")
KP, GC = LIBS

# settings that make both clients quick against the embedded cluster; every one is a
# kafka-python setting with a legal value, so both clients get exactly the same arguments.
# metadata_max_age_ms: a kafka-python leader that computes the assignment before it has the
# topic's metadata assigns nothing and only rejoins after its next metadata refresh (5 minutes
# by default), so a short refresh keeps kafka-python's side of a test from stalling.
FAST: dict[str, Any] = {"fetch_max_wait_ms": 100, "heartbeat_interval_ms": 300, "session_timeout_ms": 6000,
                        "metadata_max_age_ms": 1000}


def consumer_class(lib: str) -> type:
    return KafkaConsumer if lib == KP else GroupConsumer


def build(cls: type, *topics: str, **settings: Any) -> Any:
    """``cls(*topics, **settings)``, but if the constructor raises after it started its network
    client (kafka-python bootstraps, then checks isolation_level / group_instance_id), that client
    is closed: otherwise its background thread goes on refreshing metadata, and reconnecting to
    a stopped cluster, for the rest of the session."""
    consumer = cls.__new__(cls)
    try:
        consumer.__init__(*topics, **settings)
    except BaseException:
        client = getattr(consumer, "_client", None)
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001  (best effort: the constructor's error is the one to see)
                pass
        raise
    return consumer


def kafka_python_bug(reason: str) -> list[Any]:
    """Params for ``@pytest.mark.parametrize("lib", ...)``: kafka-python is expected to fail."""
    return [pytest.param(KP, marks=pytest.mark.xfail(strict=True, reason=f"kafka-python 3.0.12 bug: {reason}")), GC]


def unique(prefix: str) -> str:
    """A legal, unused topic or group name."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def new_topic(cluster: EmbeddedCluster, partitions: int = 1, records: Iterable[Any] = (),
              partition: int | None = None, timestamp_ms: int | None = None, prefix: str = "topic") -> str:
    name = unique(prefix)
    cluster.create_topic(name, partitions)
    items = list(records)
    if items:
        cluster.produce(name, items, partition=partition, timestamp_ms=timestamp_ms)
    return name


def all_committed(cluster: EmbeddedCluster) -> dict[str, dict[tuple[str, int], int]]:
    """Every group's committed offsets (to check that a group-less consumer commits nothing)."""
    return cluster._call(lambda core: {  # noqa: SLF001  (test helper reading the cluster's state)
        group: {tp: c.offset for tp, c in offsets.items()} for group, offsets in core.group_store.offsets.items()})


def drain(consumer: Any, count: int, timeout_s: float = 5.0, **poll_args: Any) -> list[ConsumerRecord]:
    """poll() until ``count`` records came or ``timeout_s`` passed."""
    records: list[ConsumerRecord] = []
    deadline = time.monotonic() + timeout_s
    while len(records) < count and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=100, **poll_args).values():
            records += batch
    return records


def poll_until(consumers: Any, predicate: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    """poll() the consumers (records are dropped) until ``predicate`` holds or time runs out.

    Several consumers poll at once, each on a thread of its own, as applications run them: one
    thread polling them in turn keeps each out of poll() half the time, and kafka-python 3.0.12
    drops a JoinGroup/SyncGroup that completes while its consumer is not inside poll() (its
    ``join_group_async`` starts a new join when the last one is already done), so on a slow
    machine such a group rebalanced again after every assignment until the time ran out."""
    group = consumers if isinstance(consumers, (list, tuple)) else [consumers]
    deadline = time.monotonic() + timeout_s
    if len(group) == 1:
        while time.monotonic() < deadline:
            if predicate():
                return True
            group[0].poll(timeout_ms=50)
        return predicate()
    stop = threading.Event()
    errors: list[BaseException] = []

    def keep_polling(consumer: Any) -> None:
        try:
            while not stop.is_set() and time.monotonic() < deadline:
                consumer.poll(timeout_ms=50)
        except BaseException as exc:  # raised on the test's thread below
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=keep_polling, args=(c,), name=f"poll-{i}", daemon=True)
               for i, c in enumerate(group)]
    for thread in threads:
        thread.start()
    try:
        while not stop.is_set() and time.monotonic() < deadline and not predicate():
            stop.wait(0.02)
    finally:
        stop.set()
        for thread in threads:
            thread.join(5)
    if errors:
        raise errors[0]
    assert not any(t.is_alive() for t in threads), "a consumer's poll() did not return"
    return predicate()


def iterate(consumer: Any, count: int) -> list[ConsumerRecord]:
    """Up to ``count`` records from ``next(consumer)``; stops early at StopIteration
    (bounded by the consumer's consumer_timeout_ms, which tests always set)."""
    records: list[ConsumerRecord] = []
    for record in consumer:
        records.append(record)
        if len(records) >= count:
            break
    return records


def warm(consumer: Any, *topics: str) -> None:
    """Call ``partitions_for_topic()`` for the subscribed topics before the first poll().

    kafka-python 3.0.12 waits for fresh metadata before its first JoinGroup only for a pattern
    subscription; with a list of topics its leader often (about every other join here) computes
    the assignment before it has the topics' metadata, assigns nothing, and rejoins after the
    next metadata refresh -- and that second join now and then never completes (the member stops
    heartbeating and expires).  partitions_for_topic() makes kafka-python load the metadata; it is
    called the same way for both clients, and does nothing else for groupclient (which waits for
    the metadata of its subscription before joining)."""
    for topic in topics:
        consumer.partitions_for_topic(topic)


def subscribe(consumer: Any, topics: list[str], **kwargs: Any) -> None:
    """``consumer.subscribe(topics, **kwargs)`` followed by ``warm()``."""
    consumer.subscribe(topics, **kwargs)
    warm(consumer, *topics)


class ConsumerFactory:
    def __init__(self, lib: str, cluster: EmbeddedCluster) -> None:
        self.lib = lib
        self.cluster = cluster
        self.created: list[Any] = []

    @property
    def cls(self) -> type:
        return consumer_class(self.lib)

    def __call__(self, *topics: str, fast: bool = True, **config: Any) -> Any:
        settings: dict[str, Any] = {"bootstrap_servers": self.cluster.bootstrap_servers}
        if fast:
            settings.update(FAST)
        settings.update(config)
        consumer = build(self.cls, *topics, **settings)
        self.created.append(consumer)
        if topics and settings.get("group_id") is not None:
            warm(consumer, *topics)
        return consumer

    def close_all(self) -> None:
        for consumer in reversed(self.created):
            try:
                consumer.close(autocommit=False, timeout_ms=2000)
            except Exception:  # noqa: BLE001  (teardown of a consumer the test may have broken)
                pass


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0) as c:
        yield c


@pytest.fixture
def private_cluster() -> Iterator[EmbeddedCluster]:
    """A cluster of the test's own, for tests that inject faults."""
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0) as c:
        yield c


@pytest.fixture(params=LIBS)
def lib(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_consumer(lib: str, cluster: EmbeddedCluster) -> Iterator[ConsumerFactory]:
    factory = ConsumerFactory(lib, cluster)
    yield factory
    factory.close_all()


@pytest.fixture
def make_private_consumer(lib: str, private_cluster: EmbeddedCluster) -> Iterator[ConsumerFactory]:
    factory = ConsumerFactory(lib, private_cluster)
    yield factory
    factory.close_all()
