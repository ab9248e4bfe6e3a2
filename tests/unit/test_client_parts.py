"""RequestFuture, least_loaded_node, Heartbeat timing, ownership and wakeup (no sockets used)."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

from groupclient import ConcurrentAccessError, GroupConsumer, WakeupError
from groupclient.clock import FakeClock, Timer
from groupclient.errors import ConfigurationError, DisconnectedError, FatalGroupError
from groupclient.member.heartbeat import Heartbeat
from groupclient.network.metadata import MetadataSnapshot
from groupclient.network.client import NetworkClient, NetworkConfig, parse_bootstrap
from groupclient.network.connection import ConnectionState, InFlight
from groupclient.network.future import RequestFuture
from groupclient.error_codes import ErrorCode


# -- RequestFuture -------------------------------------------------------------------------
def test_future_listeners_compose_and_chain() -> None:
    seen: list[Any] = []
    source: RequestFuture[int] = RequestFuture()
    doubled = source.compose(lambda value, out: out.success(value * 2))
    doubled.add_callback(seen.append)
    target: RequestFuture[int] = RequestFuture()
    doubled.chain(target)
    source.success(21)
    assert seen == [42] and target.value == 42
    late: list[int] = []
    doubled.add_callback(late.append)  # added after completion: runs at once
    assert late == [42]
    with pytest.raises(RuntimeError):
        source.success(1)


def test_future_failure_passes_through_compose_and_is_classified() -> None:
    source: RequestFuture[int] = RequestFuture()
    composed = source.compose(lambda value, out: out.success(value))
    errors: list[BaseException] = []
    composed.add_errback(errors.append)
    source.failure(DisconnectedError("gone"))
    assert composed.failed() and composed.retriable() and isinstance(errors[0], DisconnectedError)
    fatal: RequestFuture[None] = RequestFuture.failed_with(FatalGroupError(ErrorCode.FENCED_INSTANCE_ID))
    assert not fatal.retriable()


def test_a_failing_listener_does_not_stop_the_others() -> None:
    seen: list[int] = []
    future: RequestFuture[int] = RequestFuture()
    future.add_callback(lambda v: 1 / 0)
    future.add_callback(seen.append)
    future.success(7)
    assert seen == [7]


# -- least_loaded_node ---------------------------------------------------------------------
def client_with(states: dict[int, tuple[ConnectionState, int, int, bool]]) -> NetworkClient:
    """states: node -> (state, in-flight count, last attempt ms, can connect now)."""
    clock = FakeClock(start_ms=10_000)
    client = NetworkClient(NetworkConfig([("127.0.0.1", 1)], "t"), clock, random.Random(0))
    client.metadata.snapshot = MetadataSnapshot(brokers={n: ("127.0.0.1", 1000 + n) for n in states})
    for node, (state, in_flight, last_attempt, can_connect) in states.items():
        conn = client._connection(node)
        assert conn is not None
        conn.state = state
        conn.in_flight.extend(InFlight(i, None, 0, RequestFuture(), 10**9, 0) for i in range(in_flight))
        conn.last_attempt_ms = last_attempt
        conn._next_attempt_ms = 0 if can_connect else 10**9
    return client


R, C, D = ConnectionState.READY, ConnectionState.CONNECTING, ConnectionState.DISCONNECTED


@pytest.mark.parametrize("states, expected", [
    ({1: (R, 2, 0, False), 2: (R, 0, 0, False), 3: (R, 1, 0, False)}, {2}),      # idle ready node wins
    ({1: (R, 3, 0, False), 2: (R, 1, 0, False), 3: (C, 0, 0, False)}, {2}),      # fewest in flight
    ({1: (R, 5, 0, False), 2: (C, 0, 0, False)}, {2}),                           # ready but full: connecting
    ({1: (C, 0, 0, False), 2: (D, 0, 100, True)}, {1}),                          # connecting before new
    ({1: (D, 0, 500, True), 2: (D, 0, 100, True), 3: (D, 0, 900, True)}, {2}),   # oldest attempt
    ({1: (D, 0, 100, False), 2: (D, 0, 100, False)}, {None}),                    # all backing off
])
def test_least_loaded_node_decision_table(states: Any, expected: set[int | None]) -> None:
    client = client_with(states)
    for seed in range(8):  # the random start never changes the answer
        client._rng = random.Random(seed)
        assert client.least_loaded_node() in expected
    client.close()


def test_bootstrap_parsing() -> None:
    assert parse_bootstrap("a:1, b:2") == [("a", 1), ("b", 2)]
    assert parse_bootstrap(["h"]) == [("h", 9092)]
    with pytest.raises(ValueError):
        parse_bootstrap("h:port")
    with pytest.raises(ValueError):
        parse_bootstrap("")


# -- Heartbeat -------------------------------------------------------------------------------
def test_heartbeat_timing() -> None:
    hb = Heartbeat(session_timeout_ms=10000, heartbeat_interval_ms=3000, max_poll_interval_ms=20000,
                   retry_backoff_ms=100)
    hb.joined(0)
    hb.sent(0)
    assert not hb.should_heartbeat(100)  # one in flight
    hb.received(50, sent_at=0, group_stable=True)
    assert hb.time_to_next_heartbeat(1000) == 2000 and not hb.should_heartbeat(2999)
    assert hb.should_heartbeat(3000)
    hb.sent(3000)
    hb.failed(3010)
    assert hb.time_to_next_heartbeat(3050) == 50 and hb.should_heartbeat(3100)  # retry after backoff
    # the session runs from when the last answered heartbeat was *sent*: the coordinator got it later
    assert not hb.lease_expired(9999) and hb.lease_expired(10000)
    hb.poll(5000)
    assert hb.time_to_poll_timeout(6000) == 19000
    assert not hb.poll_timeout_expired(25000) and hb.poll_timeout_expired(25001)
    with pytest.raises(ValueError):
        Heartbeat(3000, 3000, 1000, 100)


# -- ownership and wakeup ---------------------------------------------------------------------
def idle_consumer(**config: Any) -> GroupConsumer:
    # port 1 on loopback refuses at once; nothing here waits on the network
    # api_version: no bootstrap in the constructor, as in kafka-python
    config.setdefault("api_version", (4, 1))
    return GroupConsumer(bootstrap_servers="127.0.0.1:1", group_id="g", clock=FakeClock(), **config)


def test_a_second_thread_gets_concurrent_access_error_at_once() -> None:
    consumer = idle_consumer()
    inside = threading.Event()
    release = threading.Event()
    errors: list[BaseException] = []

    class Listener:
        pass

    def hold() -> None:
        with consumer._ownership.acquired():
            with consumer._ownership.acquired():  # re-entry by the owner is fine
                inside.set()
                release.wait(5)

    owner = threading.Thread(target=hold)
    owner.start()
    assert inside.wait(5)
    assert consumer.assignment() == set()  # documented as safe from any thread
    try:
        consumer.subscription()
    except ConcurrentAccessError as exc:
        errors.append(exc)
    release.set()
    owner.join(5)
    assert errors and "another thread" in str(errors[0])
    assert consumer.subscription() is None  # released: this thread may use it now
    consumer.close()


def test_wakeup_makes_the_next_poll_raise_and_only_once() -> None:
    consumer = idle_consumer()
    consumer.subscribe(["t"])
    consumer.wakeup()
    with pytest.raises(WakeupError):
        consumer.poll(timeout_ms=10_000)
    consumer._client._wakeup_requested.clear()
    consumer.close()


def test_poll_needs_a_subscription_and_bad_arguments_are_refused() -> None:
    consumer = idle_consumer()
    from groupclient import IllegalStateError
    with pytest.raises(IllegalStateError):
        consumer.poll()
    with pytest.raises(IllegalStateError):  # kafka-python's class for topics and a pattern
        consumer.subscribe(["a"], pattern="b.*")
    with pytest.raises(ConfigurationError):
        consumer.subscribe(pattern="(")
    consumer.subscribe(["a"])
    with pytest.raises(IllegalStateError):
        consumer.assign([("a", 0)])  # type: ignore[list-item]
    consumer.close()
    with pytest.raises(IllegalStateError):
        consumer.poll()


@pytest.mark.parametrize("config, message", [
    ({"no_such_setting": 1}, "unrecognized"),
    ({"auto_offset_reset": "soon"}, "auto_offset_reset"),
    ({"session_timeout_ms": 3000, "heartbeat_interval_ms": 3000}, "heartbeat_interval_ms"),
    ({"group_instance_id": ""}, "group_instance_id"),
    ({"security_protocol": "TLS"}, "security_protocol must be one of"),
    ({"ssl_cafile": "/ca.pem"}, "ssl_cafile set but security_protocol is PLAINTEXT"),
    ({"sasl_plain_username": "u"}, "sasl_plain_username set but security_protocol is PLAINTEXT"),
    ({"security_protocol": "SSL", "ssl_cafile": "/no/such/ca.pem"}, "cannot set up TLS"),
    ({"security_protocol": "SSL", "ssl_context": "ctx"}, "ssl_context must be an ssl.SSLContext"),
    ({"security_protocol": "SASL_SSL"}, "needs sasl_mechanism"),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "GSSAPI"}, "GSSAPI.*not supported"),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN"}, "needs sasl_plain_username"),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256", "sasl_plain_username": "u"},
     "needs sasl_plain_password"),
    ({"sasl_oauth_token_provider": object()}, "not supported"),
    ({"max_poll_records": 0}, "max_poll_records"),
    ({"partition_assignment_strategy": ["nope"]}, "unknown partition assignment strategy"),
])
def test_bad_configuration_is_a_clear_error(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        GroupConsumer(bootstrap_servers="127.0.0.1:1", group_id="g", **config)


def test_kafka_python_names_and_defaults_carry_over() -> None:
    from kafka.consumer.group import KafkaConsumer
    ours = idle_consumer(api_version=(3, 0), metrics_enabled=False)  # ignored kafka-python settings are accepted
    theirs = KafkaConsumer.DEFAULT_CONFIG
    for key in ("fetch_max_wait_ms", "fetch_min_bytes", "fetch_max_bytes", "max_partition_fetch_bytes",
                "request_timeout_ms", "retry_backoff_ms", "auto_offset_reset", "enable_auto_commit",
                "auto_commit_interval_ms", "max_poll_records", "max_poll_interval_ms", "session_timeout_ms",
                "heartbeat_interval_ms", "isolation_level", "metadata_max_age_ms", "check_crcs"):
        assert ours.config[key] == theirs[key], key
    ours.close()


def test_timer() -> None:
    clock = FakeClock()
    timer = Timer(clock, 500)
    assert timer.remaining_ms() == 500 and not timer.expired()
    clock.advance(500)
    assert timer.expired() and timer.remaining_ms() == 0
    assert not Timer(clock, None).expired()


# -- ExponentialBackoff ------------------------------------------------------------------------
def test_exponential_backoff_doubles_with_jitter_up_to_the_max_as_kafka() -> None:
    from groupclient.network.backoff import ExponentialBackoff

    backoff = ExponentialBackoff(50, 1000)  # reconnect_backoff_ms, reconnect_backoff_max_ms
    rng = random.Random(7)
    for attempts, term in [(0, 50), (1, 100), (2, 200), (3, 400), (4, 800)]:
        waits = [backoff.backoff_ms(attempts, rng) for _ in range(200)]
        assert min(waits) >= int(term * 0.8) and max(waits) <= int(term * 1.2), (attempts, min(waits), max(waits))
        assert len(set(waits)) >= min(int(term * 0.3), 50)  # spread: clients failing together retry apart
    capped = [backoff.backoff_ms(attempts, rng) for attempts in (5, 30, 10**6) for _ in range(100)]
    assert max(capped) == 1000 and min(capped) >= 800
    # a seed replays the waits exactly
    assert [backoff.backoff_ms(3, random.Random(1)) for _ in range(3)] == [backoff.backoff_ms(3, random.Random(1))] * 3
    # nothing to grow into: the initial value, no jitter (Java's expMax == 0)
    assert {ExponentialBackoff(100, 100).backoff_ms(n, rng) for n in range(5)} == {100}
    assert ExponentialBackoff(0, 1000).backoff_ms(3, rng) == 0
