"""Configuration parity: names, defaults, cross-setting checks, isolation_level, topic validation.

kafka-python 3.0.12 checks, in ``KafkaConsumer.__init__``: unknown config names
(KafkaConfigurationError, before connecting), ``fetch_max_wait_ms < request_timeout_ms <
connections_max_idle_ms`` (KafkaConfigurationError, before connecting), then after bootstrapping
``group_instance_id`` requires ``group_id`` and ``isolation_level`` must be an IsolationLevel
(enum, 0/1, or its name in any case) -- both KafkaConfigurationError.  ``subscribe()`` validates
topic names with Kafka's rules (ValueError; TypeError for a non-str).  Nothing else is checked:
kafka-python accepts ``heartbeat_interval_ms >= session_timeout_ms``, an unknown
``auto_offset_reset`` (it logs and uses NONE), ``max_poll_records=0`` and ``group_id=''``.

Deliberate differences (asserted per library):

- ``test_difference_unknown_config_names_a_close_match``: both raise KafkaConfigurationError;
  groupclient's message also says "did you mean ...".
- ``test_difference_values_kafka_python_accepts_are_rejected``: groupclient raises
  KafkaConfigurationError at once for values that cannot work (kafka-python accepts them and
  fails later, or silently behaves differently).
- ``test_difference_bootstrap_servers_of_the_wrong_type``: kafka-python fails with an accidental
  ``TypeError("'int' object is not iterable")``; groupclient raises KafkaConfigurationError naming
  the setting.
- ``test_difference_subscribe_topics_of_the_wrong_type``: kafka-python raises TypeError;
  groupclient raises KafkaConfigurationError naming the bad value.
- ``test_difference_subscribe_takes_any_iterable_of_topics``: kafka-python raises TypeError for a
  str or a set; groupclient takes a single topic name or any iterable of names.
"""

from __future__ import annotations

from typing import Any

import pytest
import kafka.errors as Errors
from kafka import IsolationLevel, KafkaConsumer
from kafka.structs import TopicPartition

from groupclient import GroupConsumer
from groupclient.coordinator import EmbeddedCluster

from .conftest import KP, ConsumerFactory, build, drain, new_topic, unique

pytestmark = pytest.mark.integration


def test_unknown_config_is_rejected(make_consumer: ConsumerFactory) -> None:
    with pytest.raises(Errors.KafkaConfigurationError, match="no_such_setting"):
        make_consumer(no_such_setting=1)


def test_difference_unknown_config_names_a_close_match(lib: str, make_consumer: ConsumerFactory) -> None:
    """Deliberate difference: groupclient's message suggests the setting that was meant."""
    with pytest.raises(Errors.KafkaConfigurationError) as caught:
        make_consumer(sesion_timeout_ms=10000)
    assert "sesion_timeout_ms" in str(caught.value)
    if lib != KP:
        assert "did you mean" in str(caught.value) and "'session_timeout_ms'" in str(caught.value)


@pytest.mark.parametrize("settings", [
    pytest.param({"fetch_max_wait_ms": 40000}, id="fetch_max_wait-above-request_timeout"),
    pytest.param({"fetch_max_wait_ms": 30000}, id="fetch_max_wait-equal-request_timeout"),
    pytest.param({"request_timeout_ms": 600000}, id="request_timeout-above-connections_max_idle"),
    pytest.param({"request_timeout_ms": 50000, "connections_max_idle_ms": 40000}, id="connections_max_idle-below"),
])
def test_timeouts_must_be_ordered(settings: dict[str, Any], make_consumer: ConsumerFactory) -> None:
    """Ported from kafka-python's test_fetch_max_wait_larger_than_request_timeout_raises and
    test_request_timeout_larger_than_connections_max_idle_ms_raises."""
    with pytest.raises(Errors.KafkaConfigurationError):
        make_consumer(fast=False, **settings)


@pytest.mark.parametrize("value", [
    "read_committed", "read_uncommitted", "READ_COMMITTED", IsolationLevel.READ_COMMITTED,
    IsolationLevel.READ_UNCOMMITTED, 1,
], ids=repr)
def test_isolation_level_accepted_values(value: Any, make_consumer: ConsumerFactory) -> None:
    """kafka-python's README passes ``isolation_level=IsolationLevel.READ_COMMITTED``."""
    consumer = make_consumer(isolation_level=value)
    consumer.close()


def test_isolation_level_rejects_an_unknown_value(make_consumer: ConsumerFactory) -> None:
    with pytest.raises(Errors.KafkaConfigurationError):
        make_consumer(isolation_level="read_most_things")


def test_group_instance_id_requires_group_id(make_consumer: ConsumerFactory) -> None:
    with pytest.raises(Errors.KafkaConfigurationError):
        make_consumer(group_instance_id="instance-1")


def test_deprecated_auto_offset_reset_names(make_consumer: ConsumerFactory) -> None:
    assert make_consumer(auto_offset_reset="smallest").config["auto_offset_reset"] == "earliest"
    assert make_consumer(auto_offset_reset="largest").config["auto_offset_reset"] == "latest"


@pytest.mark.parametrize("settings", [
    pytest.param({"heartbeat_interval_ms": 6000, "session_timeout_ms": 6000}, id="heartbeat-not-below-session"),
    pytest.param({"auto_offset_reset": "begining"}, id="unknown-auto_offset_reset"),
    pytest.param({"max_poll_records": 0}, id="max_poll_records-0"),
    pytest.param({"group_id": ""}, id="empty-group_id"),
])
def test_difference_values_kafka_python_accepts_are_rejected(lib: str, settings: dict[str, Any],
                                                             make_consumer: ConsumerFactory) -> None:
    """Deliberate difference: kafka-python builds the consumer (and later fails, or silently uses
    auto_offset_reset NONE); groupclient raises KafkaConfigurationError at construction."""
    config = {**settings}
    if "session_timeout_ms" in settings:
        config["fast"] = False
    if lib == KP:
        make_consumer(**config).close()
    else:
        with pytest.raises(Errors.KafkaConfigurationError):
            make_consumer(**config)


def test_difference_bootstrap_servers_of_the_wrong_type(lib: str, make_consumer: ConsumerFactory) -> None:
    """Deliberate difference: kafka-python raises ``TypeError("'int' object is not iterable")``;
    groupclient a KafkaConfigurationError that names bootstrap_servers."""
    if lib == KP:
        with pytest.raises(TypeError):
            make_consumer(bootstrap_servers=9092)
    else:
        with pytest.raises(Errors.KafkaConfigurationError, match="bootstrap_servers"):
            make_consumer(bootstrap_servers=9092)


def test_difference_subscribe_topics_of_the_wrong_type(lib: str, make_consumer: ConsumerFactory) -> None:
    """Deliberate difference: kafka-python raises TypeError; groupclient a KafkaConfigurationError
    whose message shows the bad value."""
    consumer = make_consumer(group_id=unique("group"))
    if lib == KP:
        with pytest.raises(TypeError):
            consumer.subscribe(topics=123)
    else:
        with pytest.raises(Errors.KafkaConfigurationError, match="123"):
            consumer.subscribe(topics=123)
    assert consumer.subscription() is None


@pytest.mark.parametrize("name", [
    pytest.param("has space", id="space"),
    pytest.param("sl/ash", id="slash"),
    pytest.param("caf\u00e9", id="non-ascii"),
    pytest.param("a" * 250, id="250-chars"),
    pytest.param("", id="empty"),
    pytest.param(".", id="dot"),
    pytest.param("..", id="dot-dot"),
])
def test_subscribe_rejects_illegal_topic_names(name: str, make_consumer: ConsumerFactory) -> None:
    consumer = make_consumer(group_id=unique("group"))
    with pytest.raises(ValueError):
        consumer.subscribe(topics=["fine-topic", name])
    assert consumer.subscription() is None


def test_subscribe_accepts_the_longest_legal_name(make_consumer: ConsumerFactory) -> None:
    consumer = make_consumer(group_id=unique("group"))
    longest = "a.b_c-D" + "x" * 242
    assert len(longest) == 249
    consumer.subscribe(topics=[longest])
    assert consumer.subscription() == {longest}


def test_subscribe_needs_topics_or_a_pattern(make_consumer: ConsumerFactory) -> None:
    consumer = make_consumer(group_id=unique("group"))
    with pytest.raises(ValueError):
        consumer.subscribe()
    with pytest.raises(ValueError):
        consumer.subscribe(topics=[])


def test_subscribe_to_topics_and_a_pattern_raises_illegal_state(make_consumer: ConsumerFactory) -> None:
    consumer = make_consumer(group_id=unique("group"))
    with pytest.raises(Errors.IllegalStateError):
        consumer.subscribe(topics=["a-topic"], pattern="^a-.*")


@pytest.mark.parametrize("form", ["str", "set"])
def test_difference_subscribe_takes_any_iterable_of_topics(lib: str, form: str, cluster: EmbeddedCluster,
                                                          make_consumer: ConsumerFactory) -> None:
    """Deliberate difference: kafka-python raises TypeError('Topics must be a list (or non-str
    sequence)'); groupclient takes one topic name, or any iterable of names."""
    topic = new_topic(cluster, 1)
    consumer = make_consumer(group_id=unique("group"))
    topics: Any = topic if form == "str" else {topic}
    if lib == KP:
        with pytest.raises(TypeError):
            consumer.subscribe(topics=topics)
    else:
        consumer.subscribe(topics=topics)
        assert consumer.subscription() == {topic}


def test_pattern_subscription(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    prefix = unique("pattern")
    for suffix in ("a", "b"):
        cluster.create_topic(f"{prefix}.{suffix}", 1)
        cluster.produce(f"{prefix}.{suffix}", [suffix.encode()])
    cluster.create_topic(f"other-{prefix}", 1)
    cluster.produce(f"other-{prefix}", [b"not matched"])
    consumer = make_consumer(group_id=unique("group"), auto_offset_reset="earliest")
    consumer.subscribe(pattern=f"^{prefix}\\..*")
    assert consumer.subscription() == set()  # nothing matched yet: no metadata
    assert sorted(r.value for r in drain(consumer, 2)) == [b"a", b"b"]
    assert consumer.subscription() == {f"{prefix}.a", f"{prefix}.b"}
    assert consumer.assignment() == {TopicPartition(f"{prefix}.a", 0), TopicPartition(f"{prefix}.b", 0)}


def test_every_kafka_python_setting_is_accepted_with_its_default_value(cluster: EmbeddedCluster) -> None:
    """A configuration copied from kafka-python's defaults must build a GroupConsumer (settings
    that only tune kafka-python's internals are accepted and ignored)."""
    refused = {}
    for name, default in KafkaConsumer.DEFAULT_CONFIG.items():
        if name == "bootstrap_servers":
            continue
        try:
            build(GroupConsumer, bootstrap_servers=cluster.bootstrap_servers, **{name: default}).close()
        except Exception as exc:  # noqa: BLE001  (collect every refusal)
            refused[name] = repr(exc)
    assert refused == {}


MEANINGFUL_DEFAULTS = (
    "group_id", "group_instance_id", "key_deserializer", "value_deserializer", "fetch_max_wait_ms",
    "fetch_min_bytes", "fetch_max_bytes", "max_partition_fetch_bytes", "request_timeout_ms", "retry_backoff_ms",
    "reconnect_backoff_ms", "reconnect_backoff_max_ms", "max_in_flight_requests_per_connection",
    "auto_offset_reset", "enable_auto_commit", "auto_commit_interval_ms", "check_crcs", "isolation_level",
    "allow_auto_create_topics", "metadata_max_age_ms", "max_poll_records", "max_poll_interval_ms",
    "session_timeout_ms", "heartbeat_interval_ms", "consumer_timeout_ms", "exclude_internal_topics",
    "bootstrap_timeout_ms", "security_protocol",
)


def test_defaults_are_kafka_pythons(cluster: EmbeddedCluster) -> None:
    consumer = GroupConsumer(bootstrap_servers=cluster.bootstrap_servers)
    try:
        ours = {name: consumer.config[name] for name in MEANINGFUL_DEFAULTS}
    finally:
        consumer.close()
    theirs = {name: KafkaConsumer.DEFAULT_CONFIG[name] for name in MEANINGFUL_DEFAULTS}
    assert ours == theirs
