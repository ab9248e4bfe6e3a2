"""API surface: every public KafkaConsumer method with a compatible signature, metrics(),
bootstrap_connected(), topics(), partitions_for_topic(), subscription(), the context manager
(ported in part from kafka-python's test/consumer/test_consumer.py).

kafka-python 3.0.12's metrics() (after joining, consuming and committing) has the groups
``consumer-metrics``, ``consumer-fetch-manager-metrics``, ``consumer-coordinator-metrics`` (plus
``kafka-metrics-count`` and ``consumer-node-metrics.node-*``); it has no rebalance counters
(no ``last-rebalance-seconds-ago`` / ``rebalance-total``).  ``metrics_enabled=False`` makes
metrics() return None.
"""

from __future__ import annotations

import inspect
import math

import pytest
import kafka.errors as Errors
from kafka import KafkaConsumer
from kafka.structs import OffsetAndMetadata, TopicPartition

import groupclient
from groupclient import GroupConsumer
from groupclient.coordinator import EmbeddedCluster

from .conftest import ConsumerFactory, drain, kafka_python_bug, new_topic, unique

pytestmark = pytest.mark.integration

PUBLIC_METHODS = sorted(name for name, member in inspect.getmembers(KafkaConsumer, callable)
                        if not name.startswith("_"))


@pytest.mark.parametrize("name", PUBLIC_METHODS)
def test_method_exists_with_a_compatible_signature(name: str) -> None:
    """Every parameter of kafka-python's method exists in GroupConsumer's, in the same order, of the
    same kind, with the same default; GroupConsumer may only add parameters that have defaults."""
    assert hasattr(GroupConsumer, name), f"GroupConsumer has no {name}()"
    theirs = list(inspect.signature(getattr(KafkaConsumer, name)).parameters.values())
    ours = list(inspect.signature(getattr(GroupConsumer, name)).parameters.values())
    assert [(p.name, p.kind, p.default) for p in ours[:len(theirs)]] == \
        [(p.name, p.kind, p.default) for p in theirs]
    extra = ours[len(theirs):]
    assert all(p.default is not inspect.Parameter.empty or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
               for p in extra), extra


def test_context_manager_and_dunder_methods() -> None:
    for name in ("__enter__", "__exit__", "__iter__", "__next__"):
        assert callable(getattr(GroupConsumer, name, None)), name


def test_kafka_python_types_are_used() -> None:
    assert groupclient.TopicPartition is TopicPartition
    assert groupclient.OffsetAndMetadata is OffsetAndMetadata


def test_default_config_class_attribute_lists_every_kafka_python_setting() -> None:
    """``KafkaConsumer.DEFAULT_CONFIG`` is public; code that filters its settings with it
    (``{k: v for k, v in conf.items() if k in KafkaConsumer.DEFAULT_CONFIG}``) must keep working."""
    ours = getattr(GroupConsumer, "DEFAULT_CONFIG", None)
    assert isinstance(ours, dict)
    assert set(KafkaConsumer.DEFAULT_CONFIG) <= set(ours)


def test_subscription_returns_a_copy(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """Ported from kafka-python's test_subscription_copy."""
    topic = new_topic(cluster, 1)
    consumer = make_consumer(topic)
    sub = consumer.subscription()
    assert sub is not consumer.subscription()
    assert sub == {topic}
    sub.add("fizz")
    assert consumer.subscription() == {topic}


def test_context_manager_closes_the_consumer(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """Ported from kafka-python's test_context_manager_closes_on_exit."""
    topic = new_topic(cluster, 1)
    with make_consumer() as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        assert consumer.poll(timeout_ms=10) == {}
    with pytest.raises(Errors.IllegalStateError):
        consumer.poll()
    consumer.close()  # closing again is a no-op


def test_metrics_after_consuming_and_committing(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 2, [b"%d" % i for i in range(10)])
    consumer = make_consumer(topic, group_id=unique("group"), auto_offset_reset="earliest", enable_auto_commit=False)
    assert len(drain(consumer, 10)) == 10
    consumer.commit(timeout_ms=5000)
    metrics = consumer.metrics()
    assert isinstance(metrics, dict)
    assert all(isinstance(group, str) and isinstance(values, dict) for group, values in metrics.items())
    # kafka-python's values are floats; any real number (not a bool) reads the same
    assert all(isinstance(v, (int, float)) and not isinstance(v, bool)
               for values in metrics.values() for v in values.values()), metrics
    fetch = metrics["consumer-fetch-manager-metrics"]
    coordinator = metrics["consumer-coordinator-metrics"]
    client = metrics["consumer-metrics"]
    assert {"fetch-rate", "fetch-latency-avg", "fetch-latency-max", "fetch-size-avg", "records-lag-max",
            "records-consumed-rate", "bytes-consumed-rate", "records-per-request-avg"} <= set(fetch)
    assert {"commit-rate", "commit-latency-avg", "commit-latency-max", "join-rate", "join-time-avg",
            "join-time-max", "sync-rate", "sync-time-avg", "sync-time-max", "heartbeat-rate",
            "heartbeat-response-time-max", "last-heartbeat-seconds-ago", "assigned-partitions"} <= set(coordinator)
    assert {"request-rate", "request-latency-avg", "request-latency-max", "incoming-byte-rate",
            "outgoing-byte-rate", "connection-count"} <= set(client)
    assert fetch["fetch-rate"] > 0 and fetch["records-consumed-rate"] > 0 and fetch["bytes-consumed-rate"] > 0
    assert fetch["fetch-latency-avg"] >= 0 and fetch["records-lag-max"] >= 0
    assert coordinator["commit-rate"] > 0 and coordinator["join-rate"] > 0 and coordinator["sync-rate"] > 0
    assert coordinator["assigned-partitions"] == 2.0
    assert coordinator["heartbeat-rate"] >= 0
    assert client["request-rate"] > 0 and client["connection-count"] >= 1
    assert not any(math.isnan(v) for values in metrics.values() for v in values.values())


def test_metrics_disabled_returns_none(make_consumer: ConsumerFactory) -> None:
    assert make_consumer(metrics_enabled=False).metrics() is None


@pytest.mark.parametrize("lib", kafka_python_bug(
    "bootstrap_connected() is `future is not None and not future.is_done`: True only while the "
    "bootstrap is still in progress, False once it succeeded"))
def test_bootstrap_connected_after_connecting(lib: str, cluster: EmbeddedCluster,
                                              make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1)
    consumer = make_consumer()
    assert topic in consumer.topics()  # certainly connected now
    assert consumer.bootstrap_connected() is True


def test_bootstrap_method_waits_for_cluster_metadata(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 2)
    consumer = make_consumer()
    assert consumer.bootstrap(timeout_ms=5000) is None
    assert consumer.partitions_for_topic(topic) == {0, 1}


def test_topics_and_partitions_for_topic(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """Ported from kafka-python's test_consumer_topics."""
    topic = new_topic(cluster, 3)
    consumer = make_consumer(group_id=unique("group"))
    topics = consumer.topics()
    assert isinstance(topics, set) and topic in topics
    assert not any(t.startswith("__") for t in topics)  # no __consumer_offsets
    assert consumer.partitions_for_topic(topic) == {0, 1, 2}


def test_partitions_for_an_unknown_topic_is_empty_and_creates_nothing(
        cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """kafka-python answers ``set()`` from a metadata request for all topics, which never
    auto-creates the topic (the embedded cluster auto-creates topics a Metadata request names,
    as Kafka's auto.create.topics.enable does)."""
    missing = unique("missing")
    consumer = make_consumer(request_timeout_ms=3000)
    assert consumer.partitions_for_topic(missing) == set()
    assert missing not in consumer.topics()
