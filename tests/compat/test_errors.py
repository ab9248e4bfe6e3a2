"""Errors a kafka-python application catches must be raised as (subclasses of) the same
``kafka.errors`` classes, within the timeouts it gives.

kafka-python 3.0.12 has no ``NoBrokersAvailable``: an unreachable bootstrap makes the constructor
raise ``KafkaTimeoutError('Unable to bootstrap from <servers>')`` after bootstrap_timeout_ms.

Deliberate differences (asserted per library):

- ``test_difference_poll_without_subscription_raises_illegal_state``: kafka-python's poll() on a
  consumer that neither subscribed nor assigned returns {} after the timeout (a loop around it
  spins forever); groupclient raises IllegalStateError at once, as Java does.
- ``test_difference_position_timeout_raises_instead_of_returning_none``: kafka-python's
  position() returns None when the position cannot be found within timeout_ms; groupclient raises
  KafkaTimeoutError (Java raises TimeoutException), so no None flows into offset arithmetic.
"""

from __future__ import annotations

import socket
import time

import pytest
import kafka.errors as Errors
from kafka.structs import OffsetAndMetadata, TopicPartition

import groupclient
import groupclient.errors
from groupclient.coordinator import EmbeddedCluster
from groupclient.coordinator.faults import FaultKind, FaultRule
from groupclient.error_codes import ErrorCode

from .conftest import KP, ConsumerFactory, build, consumer_class, drain, new_topic, poll_until, unique

pytestmark = pytest.mark.integration

FIND_COORDINATOR, OFFSET_FETCH = 10, 9


@pytest.mark.parametrize(("ours", "theirs"), [
    ("ConfigurationError", "KafkaConfigurationError"),
    ("IllegalStateError", "IllegalStateError"),
    ("KafkaTimeoutError", "KafkaTimeoutError"),
    ("CommitFailedError", "CommitFailedError"),
    ("RebalanceInProgressError", "CommitFailedError"),
    ("GroupClientError", "KafkaError"),
])
def test_groupclient_errors_are_kafka_python_errors(ours: str, theirs: str) -> None:
    assert issubclass(getattr(groupclient.errors, ours), getattr(Errors, theirs))


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_bootstrap_raises_kafka_timeout_within_bootstrap_timeout(lib: str) -> None:
    port = closed_port()
    started = time.monotonic()
    consumer = None
    try:
        with pytest.raises(Errors.KafkaTimeoutError) as caught:
            consumer = build(consumer_class(lib), bootstrap_servers=f"127.0.0.1:{port}", bootstrap_timeout_ms=1000)
    finally:
        if consumer is not None:
            consumer.close(timeout_ms=500)
    elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 4, elapsed
    assert str(port) in str(caught.value)  # says which servers it tried


def test_difference_poll_without_subscription_raises_illegal_state(lib: str, make_consumer: ConsumerFactory) -> None:
    """Deliberate difference: kafka-python returns {} (after the timeout); groupclient raises."""
    consumer = make_consumer(group_id=unique("group"))
    if lib == KP:
        assert consumer.poll(timeout_ms=100) == {}
    else:
        started = time.monotonic()
        with pytest.raises(Errors.IllegalStateError):
            consumer.poll(timeout_ms=1000)
        assert time.monotonic() - started < 0.5


def test_poll_argument_errors_are_value_errors(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1)
    consumer = make_consumer()
    consumer.assign([TopicPartition(topic, 0)])
    with pytest.raises(ValueError):
        consumer.poll(timeout_ms=-1)
    with pytest.raises(ValueError):
        consumer.poll(max_records=0)


def test_auto_offset_reset_none_raises_no_offset_for_partition(cluster: EmbeddedCluster,
                                                               make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1, [b"x"])
    tp = TopicPartition(topic, 0)
    consumer = make_consumer(group_id=unique("group"), auto_offset_reset="none", enable_auto_commit=False)
    consumer.assign([tp])
    with pytest.raises(Errors.NoOffsetForPartitionError):
        consumer.poll(timeout_ms=2000)
    with pytest.raises(Errors.NoOffsetForPartitionError):
        consumer.position(tp, timeout_ms=2000)


def test_commit_after_being_kicked_out_raises_commit_failed(cluster: EmbeddedCluster,
                                                            make_consumer: ConsumerFactory) -> None:
    """A member that stops polling past max_poll_interval_ms (the rebalance timeout) while another
    member joins is removed from the group; its commits then fail with CommitFailedError."""
    topic = new_topic(cluster, 2, [b"%d" % i for i in range(10)])
    group = unique("group")
    settings = dict(group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
                    max_poll_interval_ms=1000)
    slow = make_consumer(topic, **settings)
    assert len(drain(slow, 10)) == 10
    # the slow member does not poll from here on; the newcomer ends up with every partition
    newcomer = make_consumer(topic, **settings)
    assert poll_until(newcomer, lambda: len(newcomer.assignment()) == 2, timeout_s=10)
    with pytest.raises(Errors.CommitFailedError):
        slow.commit(timeout_ms=5000)
    with pytest.raises(Errors.CommitFailedError):
        slow.commit({TopicPartition(topic, 0): OffsetAndMetadata(3, "", -1)}, timeout_ms=5000)
    assert cluster.committed_offsets(group) == {}


@pytest.mark.parametrize("fault", [
    pytest.param(FaultRule(FIND_COORDINATOR, FaultKind.ERROR, count=100000,
                           error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE), id="no-coordinator"),
    pytest.param(FaultRule(OFFSET_FETCH, FaultKind.DELAY, count=100000, delay_ms=5000), id="coordinator-stalls"),
])
def test_committed_never_blocks_past_its_timeout(fault: FaultRule, private_cluster: EmbeddedCluster,
                                                 make_private_consumer: ConsumerFactory) -> None:
    topic = new_topic(private_cluster, 1)
    tp = TopicPartition(topic, 0)
    consumer = make_private_consumer(group_id=unique("group"))
    private_cluster.inject_fault(fault)
    try:
        started = time.monotonic()
        with pytest.raises(Errors.KafkaTimeoutError):
            consumer.committed(tp, timeout_ms=500)
        assert time.monotonic() - started < 2.5
        started = time.monotonic()
        with pytest.raises(Errors.KafkaTimeoutError):
            consumer.commit({tp: OffsetAndMetadata(1, "", -1)}, timeout_ms=500)
        assert time.monotonic() - started < 2.5
    finally:
        private_cluster.clear_faults()


def test_difference_position_timeout_raises_instead_of_returning_none(
        lib: str, private_cluster: EmbeddedCluster, make_private_consumer: ConsumerFactory) -> None:
    """Deliberate difference: the committed offset cannot be fetched in time (the coordinator
    stalls): kafka-python's position() returns None, groupclient's raises KafkaTimeoutError.
    Both return within the timeout."""
    topic = new_topic(private_cluster, 1, [b"x"])
    tp = TopicPartition(topic, 0)
    consumer = make_private_consumer(group_id=unique("group"), enable_auto_commit=False)
    consumer.assign([tp])
    private_cluster.inject_fault(FaultRule(OFFSET_FETCH, FaultKind.DELAY, count=100000, delay_ms=5000))
    try:
        started = time.monotonic()
        if lib == KP:
            assert consumer.position(tp, timeout_ms=500) is None
        else:
            with pytest.raises(Errors.KafkaTimeoutError):
                consumer.position(tp, timeout_ms=500)
        assert time.monotonic() - started < 2.5
    finally:
        private_cluster.clear_faults()
