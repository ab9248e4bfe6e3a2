"""Third-party admin clients set and read a group's own configs, on the embedded coordinator and on
Apache Kafka 4.4 alike: kafka-python's ``KafkaAdminClient.alter_configs`` (IncrementalAlterConfigs)
and ``describe_configs``, confluent-kafka's ``AdminClient.incremental_alter_configs`` and
``describe_configs``, each seeing the other's change and Kafka's refusal of a value out of bounds.
Kafka's brokers learn of a change from the metadata log: reads are awaited, not expected at once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ResourceType
from confluent_kafka.admin import ConfigResource as ConfluentResource
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from tests.integration.kip848_wire import coordinator_of, unique
from tests.integration.peers import wait_until

GROUP_CONFIG = 8  # ConfigSource.GROUP_CONFIG (kafka-python: DYNAMIC_GROUP_CONFIG)


@pytest.fixture
def admins(kip848_bootstrap: str) -> Iterator[tuple[KafkaAdminClient, AdminClient]]:
    coordinator_of(kip848_bootstrap, unique("ready")).close()
    kafka_python = KafkaAdminClient(bootstrap_servers=kip848_bootstrap, request_timeout_ms=10_000)
    confluent = AdminClient({"bootstrap.servers": kip848_bootstrap, "log_level": 3})
    try:
        yield kafka_python, confluent
    finally:
        kafka_python.close()
        del confluent  # before the cluster stops: librdkafka logs every refused reconnect


def confluent_view(admin: AdminClient, group: str) -> dict[str, tuple[str, int]]:
    [future] = admin.describe_configs([ConfluentResource(ResourceType.GROUP, group)]).values()
    entries: dict[str, Any] = future.result(timeout=15)
    return {name: (entry.value, entry.source) for name, entry in entries.items()}


def kafka_python_view(admin: KafkaAdminClient, group: str) -> dict[str, str]:
    """The group's own configs as kafka-python describes them (it lists the dynamic ones)."""
    described = admin.describe_configs([ConfigResource(ConfigResourceType.GROUP, group)])
    return {name: entry["value"] for name, entry in described["group"][group].items()
            if entry["config_source"] == "DYNAMIC_GROUP_CONFIG"}


def test_kafka_python_sets_and_confluent_kafka_reads(admins: tuple[KafkaAdminClient, AdminClient]) -> None:
    kafka_python, confluent = admins
    group = unique("gcfg")
    assert kafka_python.alter_configs([ConfigResource(ConfigResourceType.GROUP, group, configs={
        "consumer.heartbeat.interval.ms": "2000", "share.auto.offset.reset": "earliest"})]) == {
        "group": {group: "OK"}}
    seen: dict[str, tuple[str, int]] = {}
    assert wait_until(lambda: seen.update(confluent_view(confluent, group)) or seen[
        "consumer.heartbeat.interval.ms"] == ("2000", GROUP_CONFIG), 15), seen
    assert seen["share.auto.offset.reset"] == ("earliest", GROUP_CONFIG)
    assert seen["consumer.session.timeout.ms"][1] != GROUP_CONFIG  # the broker's


def test_confluent_kafka_sets_deletes_and_is_refused_and_kafka_python_reads(
        admins: tuple[KafkaAdminClient, AdminClient]) -> None:
    kafka_python, confluent = admins
    group = unique("gcfg")

    def change(*entries: ConfigEntry) -> None:
        [future] = confluent.incremental_alter_configs([ConfluentResource(
            ResourceType.GROUP, group, incremental_configs=list(entries))]).values()
        future.result(timeout=15)

    change(ConfigEntry("consumer.session.timeout.ms", "20000", incremental_operation=AlterConfigOpType.SET),
           ConfigEntry("share.delivery.count.limit", "3", incremental_operation=AlterConfigOpType.SET))
    assert wait_until(lambda: kafka_python_view(kafka_python, group) == {
        "consumer.session.timeout.ms": "20000", "share.delivery.count.limit": "3"}, 15)
    change(ConfigEntry("share.delivery.count.limit", None, incremental_operation=AlterConfigOpType.DELETE))
    assert wait_until(lambda: kafka_python_view(kafka_python, group) == {"consumer.session.timeout.ms": "20000"}, 15)
    with pytest.raises(KafkaException) as refused:
        change(ConfigEntry("consumer.session.timeout.ms", "2", incremental_operation=AlterConfigOpType.SET))
    assert refused.value.args[0].name() == "INVALID_CONFIG"
    assert refused.value.args[0].str() == "consumer.session.timeout.ms must be in the range 6000 to 60000 inclusive."
    assert kafka_python_view(kafka_python, group) == {"consumer.session.timeout.ms": "20000"}
