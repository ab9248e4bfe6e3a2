"""GroupConsumer under ``group_protocol='consumer'``: the settings it refuses, the patterns it
cannot hand to the broker, what classic-only calls do, and a cluster without the protocol — over
real sockets, against the embedded coordinator (configured without the consumer protocol, as
Kafka's ``group.coordinator.rebalance.protocols=classic``, for the last)."""

from __future__ import annotations

import logging

import pytest

from groupclient import GroupConsumer
from groupclient.coordinator import EmbeddedCluster
from groupclient.errors import ConfigurationError, FatalGroupError

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("settings, named", [
    ({"session_timeout_ms": 45000}, "session_timeout_ms cannot be set when group_protocol='consumer'"),
    ({"heartbeat_interval_ms": 3000, "partition_assignment_strategy": ["range"]},
     "partition_assignment_strategy, heartbeat_interval_ms cannot be set"),  # in Java's order
])
def test_classic_only_settings_are_refused_even_at_their_defaults(settings: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigurationError, match=named) as refused:
        GroupConsumer(group_id="g", group_protocol="consumer", api_version=(4, 1), **settings)  # type: ignore[arg-type]
    assert "group.consumer.session.timeout.ms" in str(refused.value)


@pytest.mark.parametrize("settings, message", [
    ({"group_protocol": "next"}, "group_protocol must be 'classic' or 'consumer'"),
    ({"group_remote_assignor": "uniform"}, "group_remote_assignor cannot be set when group_protocol='classic'"),
    ({"group_protocol": "consumer", "group_remote_assignor": ""}, "group_remote_assignor must be a non-empty"),
])
def test_protocol_settings_are_checked(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        GroupConsumer(group_id="g", api_version=(4, 1), **settings)  # type: ignore[arg-type]


def test_the_protocol_name_is_case_insensitive_as_javas() -> None:
    consumer = GroupConsumer(group_id="g", group_protocol="CONSUMER", api_version=(4, 1))  # type: ignore[arg-type]
    try:
        assert consumer.config["group_protocol"] == "consumer"
    finally:
        consumer.close()


@pytest.mark.parametrize("pattern, lacks", [
    ("orders(?=-eu)", "invalid or unsupported Perl syntax"),
    (r"(a)\1", "invalid escape sequence"),
    ("(?x) orders", "invalid or unsupported Perl syntax"),
    (r"orders\Z", "invalid escape sequence"),
    ("(?P<a>x)(?P<a>y)", "duplicate capture group name"),
    ("orders-(", "missing closing )"),
])
def test_a_pattern_the_brokers_re2j_cannot_read_is_refused_before_anything_is_sent(pattern: str, lacks: str) -> None:
    consumer = GroupConsumer(group_id="g", group_protocol="consumer", api_version=(4, 1))
    try:
        with pytest.raises(ConfigurationError, match="RE2/J") as refused:
            consumer.subscribe(pattern=pattern)
        assert lacks in str(refused.value)
        assert consumer.subscription() is None  # nothing changed
        consumer.subscribe(pattern="orders-.*")  # what RE2/J reads the same is taken
        assert consumer.subscription() == set()
    finally:
        consumer.close()


def test_a_cluster_without_the_consumer_protocol_is_named_and_no_classic_fallback_happens(
        caplog: pytest.LogCaptureFixture) -> None:
    with EmbeddedCluster(nodes=1, group_coordinator_rebalance_protocols=("classic",)) as cluster:
        cluster.create_topic("orders", 2)
        consumer = GroupConsumer("orders", bootstrap_servers=cluster.bootstrap_servers, group_id="g",
                                 group_protocol="consumer")
        try:
            with pytest.raises(FatalGroupError) as refused:
                for _ in range(50):
                    consumer.poll(100)
            message = str(refused.value)
            assert "UNSUPPORTED_VERSION" in message and "does not serve the consumer group protocol" in message
            assert "group_protocol='classic'" in message
            assert consumer.poll(100) == {} and consumer.assignment() == set()
            assert cluster.describe_group("g") is None  # it never joined as a classic member
            with caplog.at_level(logging.WARNING, logger="groupclient.consumer"):
                consumer.enforce_rebalance()  # Java's AsyncKafkaConsumer: a warning, nothing else
            assert "enforce_rebalance() does nothing under group_protocol='consumer'" in caplog.text
        finally:
            consumer.close()
