"""A group's own configs inside the coordinator (sans-IO, on the fake clock): a consumer group's
members held to its heartbeat interval and session timeout from their next heartbeat, the configs
kept across a restart and a compaction of the journal, a value beyond today's bounds clamped, and
share.auto.offset.reset's durations read as Java's ``Duration.parse`` reads them.  What Kafka 4.4
answers to IncrementalAlterConfigs is calibrated in tests/integration/test_group_configs_conformance.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupclient.coordinator.config import CoordinatorConfig
from groupclient.coordinator.group_base.configs import GROUP_CONFIGS, GroupConfigError, effective_int, parse
from tests.unit.group_harness import Harness, group_store
from tests.unit.test_consumer_groups_service import Node, hb

SESSION_KEY, INTERVAL_KEY = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"


def configure(node: Node, group: str, **configs: str) -> None:
    """What IncrementalAlterConfigs does once a change passed its checks."""
    node.h.store.put_group_configs(group, {k.replace("_", "."): v for k, v in configs.items()})
    node.coordinator.consumer.reconfigure(group)


def test_a_groups_heartbeat_interval_answers_its_members_next_heartbeat() -> None:
    node = Node()
    assert node.send(hb("A", 0, join=True)).heartbeat_interval_ms == 5000  # the coordinator's
    configure(node, "g", consumer_heartbeat_interval_ms="7000")
    assert node.send(hb("A", 2, [0, 1, 2, 3, 4, 5])).heartbeat_interval_ms == 7000
    configure(node, "g")  # every config deleted
    assert node.send(hb("A", 2, [0, 1, 2, 3, 4, 5])).heartbeat_interval_ms == 5000


def test_a_groups_session_timeout_counts_from_its_members_next_heartbeat() -> None:
    node = Node()
    node.send(hb("A", 0, join=True))
    configure(node, "g", consumer_session_timeout_ms="60000")
    node.h.advance(10_000)
    node.send(hb("A", 2, [0, 1, 2, 3, 4, 5]))  # its session now ends 60 s from here, not 45 s
    node.h.advance(59_999)
    assert set(node.coordinator.consumer.get("g").members) == {"A"}  # type: ignore[union-attr]
    node.h.advance(1)
    assert not node.coordinator.consumer.get("g").members  # type: ignore[union-attr]


def test_a_group_created_after_its_configs_were_set_has_them_from_its_first_member() -> None:
    node = Node()
    configure(node, "g", consumer_heartbeat_interval_ms="6000")
    assert node.send(hb("A", 0, join=True)).heartbeat_interval_ms == 6000
    assert node.send(hb("B", 0, join=True, group="other")).heartbeat_interval_ms == 5000


def test_configs_survive_a_restart_and_a_compaction_of_the_journal(tmp_path: Path) -> None:
    store = group_store(tmp_path, compaction_min_bytes=512)
    node = Node(Harness(store=store))
    node.send(hb("A", 0, join=True))
    for interval in range(6000, 6040):  # enough entries for compactions to rewrite the journal
        configure(node, "g", consumer_heartbeat_interval_ms=str(interval))
    configure(node, "other", consumer_session_timeout_ms="50000")
    configure(node, "gone", consumer_session_timeout_ms="50000")
    configure(node, "gone")
    store.close()
    reopened = group_store(tmp_path)
    assert reopened.group_configs == {"g": {INTERVAL_KEY: "6039"}, "other": {SESSION_KEY: "50000"}}
    again = Node(Harness(store=reopened))  # loads the journaled group with the coordinator's settings
    assert again.coordinator.consumer.get("g").settings.heartbeat_interval_ms == 6039  # type: ignore[union-attr]
    reopened.close()


def test_a_value_set_under_wider_bounds_is_held_to_todays() -> None:
    config = CoordinatorConfig(group_consumer_max_session_timeout_ms=50_000)
    assert effective_int({SESSION_KEY: "60000"}, SESSION_KEY, config) == 50_000
    assert effective_int({SESSION_KEY: "47000"}, SESSION_KEY, config) == 47_000
    assert effective_int({}, SESSION_KEY, config) == 45_000


@pytest.mark.parametrize("value", ["earliest", "LATEST", "by_duration:P1D", "BY_DURATION:pt0.5s", "by_duration:PT0S",
                                   "by_duration:-PT-1H", "by_duration:P1DT2H3M4,5S"])
def test_share_auto_offset_reset_takes_what_kafka_takes(value: str) -> None:
    assert parse(GROUP_CONFIGS["share.auto.offset.reset"], value) == value


@pytest.mark.parametrize("value", ["none", "by_duration", "by_duration:", "by_duration:P", "by_duration:PT",
                                   "by_duration:-P1D", "by_duration:1H", "by_duration:PT1.0000000001S", "soon"])
def test_share_auto_offset_reset_refuses_what_kafka_refuses(value: str) -> None:
    with pytest.raises(GroupConfigError, match="The value must be either 'earliest', 'latest'"):
        parse(GROUP_CONFIGS["share.auto.offset.reset"], value)


def test_a_groups_assignment_interval_batches_its_targets() -> None:
    """The coordinator computes each change's target at once (the harness's interval is 0); a group
    with its own consumer.assignment.interval.ms of 2 s waits that long after its last target."""
    node = Node()
    configure(node, "g", consumer_assignment_interval_ms="2000")
    node.send(hb("A", 0, join=True))  # the first target, at once: A has everything at epoch 2
    joined = node.send(hb("B", 0, join=True))
    assert (joined.member_epoch, joined.assignment) == (2, {})  # the group is at epoch 3, its target at 2
    node.h.advance(2000)
    node.send(hb("A", 2, [0, 1, 2, 3, 4, 5]))  # the first heartbeat after the interval computes epoch 3's
    assert node.send(hb("B", 2, [])).member_epoch == 3
    assert node.send(hb("C", 0, join=True, group="other")).member_epoch == 2  # other groups: the coordinator's
    assert node.send(hb("D", 0, join=True, group="other")).member_epoch == 3
