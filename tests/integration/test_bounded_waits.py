"""Every blocking call, given no timeout, ends within ``default_api_timeout_ms`` with a
``CallTimeoutError`` that names what it waited on: on the embedded coordinator over real
sockets, against a coordinator (or leader) that never answers and one that always answers a
retriable error, for GroupConsumer and AsyncGroupConsumer.  Also the case a user found blocking
for five minutes: a commit for a partition that does not exist.

The bound is checked loosely (the call returned at all, well before ten times its timeout): the
machine's speed is not what is under test, the absence of a wait without end is."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from groupclient import CallTimeoutError, GroupConsumer, OffsetAndMetadata, TopicPartition
from groupclient.aio import AsyncGroupConsumer
from groupclient.coordinator import EmbeddedCluster
from groupclient.coordinator.faults import FaultKind, FaultRule
from groupclient.error_codes import ErrorCode
from groupclient.protocol.apis import ApiKey

pytestmark = pytest.mark.integration

TIMEOUT_MS = 1500
TP = TopicPartition("waits", 0)
FOREVER = 10_000  # more requests than any call makes within its timeout
# request_timeout_ms below the call's timeout: a request never answered is dropped and sent again
FAST = {"default_api_timeout_ms": TIMEOUT_MS, "request_timeout_ms": 600, "fetch_max_wait_ms": 100,
        "retry_backoff_ms": 50, "reconnect_backoff_ms": 20, "reconnect_backoff_max_ms": 200}


@pytest.fixture
def waits_cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0) as cluster:
        cluster.create_topic("waits", 1)
        cluster.produce("waits", [b"a", b"b"], partition=0)
        yield cluster


def silent(api: ApiKey) -> FaultRule:
    """The coordinator or leader holds every such request far past the client's timeouts."""
    return FaultRule(int(api), FaultKind.DELAY, FOREVER, delay_ms=60_000)


def failing(api: ApiKey, code: ErrorCode) -> FaultRule:
    return FaultRule(int(api), FaultKind.ERROR, FOREVER, error_code=code)


# call, the API it waits on, a retriable code that API answers, and what a partition's last error says
CALLS: dict[str, tuple[Callable[[GroupConsumer], Any], ApiKey, ErrorCode]] = {
    "commit": (lambda c: c.commit({TP: OffsetAndMetadata(1, "", -1)}), ApiKey.OFFSET_COMMIT,
               ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
    "committed": (lambda c: c.committed(TP), ApiKey.OFFSET_FETCH, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
    "position": (lambda c: c.position(TP), ApiKey.OFFSET_FETCH, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
    "beginning_offsets": (lambda c: c.beginning_offsets([TP]), ApiKey.LIST_OFFSETS, ErrorCode.NOT_LEADER_OR_FOLLOWER),
    "end_offsets": (lambda c: c.end_offsets([TP]), ApiKey.LIST_OFFSETS, ErrorCode.NOT_LEADER_OR_FOLLOWER),
    "offsets_for_times": (lambda c: c.offsets_for_times({TP: 0}), ApiKey.LIST_OFFSETS, ErrorCode.NOT_LEADER_OR_FOLLOWER),
    "topics": (lambda c: c.topics(), ApiKey.METADATA, ErrorCode.UNKNOWN_SERVER_ERROR),
    "partitions_for_topic": (lambda c: c.partitions_for_topic("not-known-yet"), ApiKey.METADATA,
                             ErrorCode.UNKNOWN_SERVER_ERROR),
}


def ready_consumer(cluster: EmbeddedCluster) -> GroupConsumer:
    """Assigned, bootstrapped and with its coordinator found, before the fault begins."""
    consumer = GroupConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id="waits", enable_auto_commit=False,
                             **FAST)
    consumer.assign([TP])
    consumer.committed(TP)  # finds the coordinator
    return consumer


def timed(call: Callable[[], Any]) -> tuple[CallTimeoutError, float]:
    started = time.monotonic()
    with pytest.raises(CallTimeoutError) as caught:
        call()
    return caught.value, time.monotonic() - started


@pytest.mark.parametrize("fault", ["never answers", "always retriable"])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_blocking_call_ends_by_default_api_timeout_ms_and_names_its_cause(
        waits_cluster: EmbeddedCluster, name: str, fault: str) -> None:
    call, api, code = CALLS[name]
    if fault == "always retriable" and api is ApiKey.METADATA:
        pytest.skip("a Metadata answer has no error of its own: a broker that fails it drops the connection")
    consumer = ready_consumer(waits_cluster)
    try:
        waits_cluster.inject_fault(silent(api) if fault == "never answers" else failing(api, code))
        error, took = timed(lambda: call(consumer))
        assert took < 10 * TIMEOUT_MS / 1000, f"{name} took {took:.1f} s"
        assert error.timeout_ms == TIMEOUT_MS and error.tries >= 1
        causes = set(error.last_errors.values())
        if fault == "always retriable":
            assert causes == {code.name}, str(error)
        else:  # dropped after request_timeout_ms, or still unanswered when the time ran out
            host, port = waits_cluster.bootstrap_servers.split(",")[0].split(":")
            timed_out = f"REQUEST_TIMED_OUT: {api.name} to {host}:{port} got no answer in time (request_timeout_ms)"
            assert causes <= {"no answer", timed_out}, str(error)
        assert str(error).startswith(f"{error.operation} did not finish in {TIMEOUT_MS} ms: ")
    finally:
        waits_cluster.clear_faults()
        consumer.close(timeout_ms=0)


def test_a_commit_for_a_partition_that_does_not_exist_says_so_instead_of_blocking(
        waits_cluster: EmbeddedCluster) -> None:
    """Was: blocked for ever (still blocking after 5 minutes), retrying UNKNOWN_TOPIC_OR_PARTITION."""
    consumer = ready_consumer(waits_cluster)
    try:
        error, _ = timed(lambda: consumer.commit({TopicPartition("n", 99): OffsetAndMetadata(5, "", -1)}))
        assert error.last_errors == {"n-99": "UNKNOWN_TOPIC_OR_PARTITION"}
        assert str(error).startswith("commit of 1 offset did not finish in 1500 ms: n-99 UNKNOWN_TOPIC_OR_PARTITION (")
        assert error.tries > 1
    finally:
        consumer.close(timeout_ms=0)


def test_an_explicit_timeout_and_infinity_are_kept(waits_cluster: EmbeddedCluster) -> None:
    consumer = ready_consumer(waits_cluster)
    try:
        waits_cluster.inject_fault(silent(ApiKey.OFFSET_FETCH))
        error, _ = timed(lambda: consumer.committed(TP, timeout_ms=300))
        assert error.timeout_ms == 300
        # float("inf"): waits until the call finishes, here once the fault is lifted
        waits_cluster.clear_faults()
        assert consumer.committed(TP, timeout_ms=float("inf")) is None
    finally:
        waits_cluster.clear_faults()
        consumer.close(timeout_ms=0)


def test_close_with_a_coordinator_that_never_answers_returns_within_default_api_timeout_ms(
        waits_cluster: EmbeddedCluster) -> None:
    consumer = GroupConsumer("waits", bootstrap_servers=waits_cluster.bootstrap_servers, group_id="closing",
                             enable_auto_commit=True, auto_offset_reset="earliest", **FAST)
    deadline = time.monotonic() + 30
    while not consumer.poll(timeout_ms=200) and time.monotonic() < deadline:
        pass
    waits_cluster.inject_fault(silent(ApiKey.OFFSET_COMMIT))
    waits_cluster.inject_fault(silent(ApiKey.LEAVE_GROUP))
    started = time.monotonic()
    try:
        consumer.close()  # its auto-commit and LeaveGroup are never answered
        assert time.monotonic() - started < 10 * TIMEOUT_MS / 1000
    finally:
        waits_cluster.clear_faults()


# -- asyncio ----------------------------------------------------------------------------------
AIO_CALLS: dict[str, tuple[Callable[[AsyncGroupConsumer], Any], ApiKey]] = {
    "commit": (lambda c: c.commit({TP: 1}), ApiKey.OFFSET_COMMIT),
    "committed": (lambda c: c.committed(TP), ApiKey.OFFSET_FETCH),
    "position": (lambda c: c.position(TP), ApiKey.OFFSET_FETCH),
    "beginning_offsets": (lambda c: c.beginning_offsets([TP]), ApiKey.LIST_OFFSETS),
    "end_offsets": (lambda c: c.end_offsets([TP]), ApiKey.LIST_OFFSETS),
    "offsets_for_times": (lambda c: c.offsets_for_times({TP: 0}), ApiKey.LIST_OFFSETS),
    "topics": (lambda c: c.topics(), ApiKey.METADATA),
}


@pytest.mark.asyncio
@pytest.mark.parametrize("name", sorted(AIO_CALLS))
async def test_every_asyncio_call_ends_by_default_api_timeout_ms(waits_cluster: EmbeddedCluster, name: str) -> None:
    call, api = AIO_CALLS[name]
    consumer = AsyncGroupConsumer(bootstrap_servers=waits_cluster.bootstrap_servers, group_id="waits",
                                  enable_auto_commit=False, **FAST)
    await consumer.start()
    try:
        await consumer.committed(TP)  # finds the coordinator
        waits_cluster.inject_fault(silent(api))
        # assigned only now: the consumer thread looks the position up as soon as it is, and must
        # not have found it before the fault
        consumer.assign([TP])
        started = time.monotonic()
        with pytest.raises(CallTimeoutError) as caught:
            await asyncio.wait_for(call(consumer), 10 * TIMEOUT_MS / 1000)
        assert time.monotonic() - started < 10 * TIMEOUT_MS / 1000
        assert caught.value.timeout_ms == TIMEOUT_MS
    finally:
        waits_cluster.clear_faults()
        await consumer.stop()
