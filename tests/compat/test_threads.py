"""Reads from another thread while the owning thread is inside poll(): assignment() and
group_metadata() (kafka-python guards both with locks; groupclient documents them as safe from
any thread)."""

from __future__ import annotations

import pytest

import threading
import time
from typing import Any

from kafka.structs import TopicPartition

from groupclient.coordinator import EmbeddedCluster

from .conftest import ConsumerFactory, drain, new_topic, poll_until, unique

pytestmark = pytest.mark.integration


def test_assignment_and_group_metadata_from_another_thread_during_poll(
        cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 2, [b"%d" % i for i in range(4)])
    group = unique("group")
    consumer = make_consumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
    assert len(drain(consumer, 4)) == 4
    assert poll_until(consumer, lambda: consumer.group_metadata().generation_id >= 1)
    expected = {TopicPartition(topic, 0), TopicPartition(topic, 1)}
    generation = consumer.group_metadata().generation_id

    in_poll = threading.Event()
    stop = threading.Event()
    errors: list[BaseException] = []
    reads_during_poll: list[tuple[Any, Any]] = []

    def reader() -> None:
        deadline = time.monotonic() + 10
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                polling = in_poll.is_set()
                seen = (consumer.assignment(), consumer.group_metadata())
                if polling and in_poll.is_set():
                    reads_during_poll.append(seen)
            except BaseException as exc:  # noqa: BLE001  (reported by the test thread)
                errors.append(exc)
                return

    thread = threading.Thread(target=reader, name="compat-reader", daemon=True)
    thread.start()
    try:
        in_poll.set()
        records = consumer.poll(timeout_ms=800)  # nothing new: blocks for the whole timeout
        in_poll.clear()
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()
    assert errors == []
    assert records == {}
    assert reads_during_poll, "the reader never got an answer while poll() was running"
    for assignment, metadata in reads_during_poll:
        assert assignment == expected
        assert (metadata.group_id, metadata.generation_id) == (group, generation)
