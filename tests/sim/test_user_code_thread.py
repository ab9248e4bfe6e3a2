"""User code runs on the application thread only, also when the application is busy between
polls and the heartbeat thread reads the answers meanwhile: the rebalance listener, interceptors,
deserializers, the assignor, rebalance-event callbacks, commit callbacks and the future
``commit_async()`` returns.

The consumer is driven from the test's own thread (the application thread); between polls the
test runs the simulation on for a while without polling (``sim.run_for``), as a busy application
would, while the member's heartbeat thread goes on reading answers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from kafka.structs import OffsetAndMetadata, TopicPartition

from groupclient.assignors import ClusterView, RangeAssignor
from groupclient.errors import CommitFailedError
from groupclient.protocol.consumer_protocol import Assignment, Subscription
from groupclient.testing import GroupSimulation

from .polling import poll_until

Sim = Callable[..., GroupSimulation]


class Threads:
    """Which thread each piece of user code ran on."""

    def __init__(self) -> None:
        self.seen: dict[str, set[str]] = {}

    def note(self, what: str) -> None:
        self.seen.setdefault(what, set()).add(threading.current_thread().name)

    def noting(self, what: str) -> Callable[..., None]:
        return lambda *args: self.note(what)


class NotingAssignor(RangeAssignor):
    name = "noting-range"

    def __init__(self, threads: Threads) -> None:
        self.threads = threads

    def assign(self, cluster: ClusterView, subscriptions: Mapping[str, Subscription]) -> dict[str, Assignment]:
        self.threads.note("assignor.assign")
        return super().assign(cluster, subscriptions)

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        self.threads.note("assignor.subscription_user_data")
        return None

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        self.threads.note("assignor.on_assignment")


class NotingListener:
    def __init__(self, threads: Threads) -> None:
        self.threads = threads

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.threads.note("listener.on_partitions_revoked")

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.threads.note("listener.on_partitions_assigned")

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.threads.note("listener.on_partitions_lost")


class NotingInterceptor:
    def __init__(self, threads: Threads) -> None:
        self.threads = threads

    def on_consume(self, records: Any) -> Any:
        self.threads.note("interceptor.on_consume")
        return records

    def on_commit(self, offsets: Any) -> None:
        self.threads.note("interceptor.on_commit")

    def close(self) -> None:
        self.threads.note("interceptor.close")


class NotingDeserializer:
    def __init__(self, threads: Threads) -> None:
        self.threads = threads

    def deserialize(self, topic: str, headers: Any, data: bytes) -> bytes:
        self.threads.note("value_deserializer.deserialize")
        return data


EXPECTED = {
    "assignor.assign", "assignor.subscription_user_data", "assignor.on_assignment",
    "listener.on_partitions_revoked", "listener.on_partitions_assigned", "listener.on_partitions_lost",
    "interceptor.on_consume", "interceptor.on_commit", "interceptor.close",
    "key_deserializer", "value_deserializer.deserialize", "rebalance_event_callback", "added event callback",
    "commit_async callback", "default_offset_commit_callback",
    "future add_callback", "future add_errback", "future add_both",
}


def test_user_code_runs_on_the_application_thread_while_the_heartbeat_thread_reads_the_answers(make_sim: Sim) -> None:
    sim = make_sim(topics={"t": 2})
    for i in range(30):
        sim.core.append_records("t", [(b"k%d" % i, b"v%d" % i)], partition=i % 2)
    threads = Threads()
    consumer = sim.consumer(
        "c", enable_auto_commit=False, partition_assignment_strategy=[NotingAssignor(threads)],
        interceptors=[NotingInterceptor(threads)], key_deserializer=lambda data: threads.note("key_deserializer"),
        value_deserializer=NotingDeserializer(threads), rebalance_event_callback=threads.noting("rebalance_event_callback"),
        default_offset_commit_callback=threads.noting("default_offset_commit_callback"))
    consumer.add_rebalance_event_callback(threads.noting("added event callback"))
    consumer.subscribe(["t"], listener=NotingListener(threads))
    assert poll_until(consumer, lambda: len(consumer.assignment()) == 2, polls=20)
    application = threading.current_thread().name
    busy_ms = 250  # what the application does between polls: the heartbeat thread runs meanwhile
    read_by: list[str] = []  # who read the commit answers (the network client's observer runs there)
    client = consumer._client
    observer = client.observer
    assert observer is not None

    def watch(api_key: int, latency: int, response: Any, failed: bool) -> None:
        if api_key == 8:  # OffsetCommit
            read_by.append(threading.current_thread().name)
        observer(api_key, latency, response, failed)

    client.observer = watch
    futures = []
    for _ in range(6):
        batch = consumer.poll(500)
        offsets = {tp: OffsetAndMetadata(records[-1].offset + 1, "", -1) for tp, records in batch.items()}
        future = consumer.commit_async(offsets or None, callback=threads.noting("commit_async callback"))
        future.add_callback(threads.noting("future add_callback")).add_both(threads.noting("future add_both"))
        consumer.commit_async()  # the default callback
        futures.append(future)
        sim.run_for(busy_ms)
    assert any(name != application for name in read_by), f"the heartbeat thread read no commit answer: {read_by}"
    poll_until(consumer, lambda: all(f.is_done for f in futures), polls=5, poll_ms=100)
    assert all(f.succeeded() for f in futures)
    # a commit that fails: the member is out of the group once the poll interval ran out
    sim.run_for(consumer.config["max_poll_interval_ms"] + 5_000)
    failing = consumer.commit_async({TopicPartition("t", 0): OffsetAndMetadata(1, "", -1)})
    failing.add_errback(threads.noting("future add_errback"))
    assert poll_until(consumer, lambda: len(consumer.assignment()) == 2, polls=20)  # lost, then rejoined
    assert failing.failed() and isinstance(failing.exception, CommitFailedError)
    consumer.close()
    assert set(threads.seen) == EXPECTED, f"never ran: {sorted(EXPECTED - set(threads.seen))}"
    elsewhere = {what: names for what, names in threads.seen.items() if names != {application}}
    assert not elsewhere, f"user code ran off the application thread ({application}): {elsewhere}"
