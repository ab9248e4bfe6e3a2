"""The one table of server-side assignors (``SERVER_ASSIGNORS``): the coordinator's settings take
their default and their check from it, so an assignor added to the table is served with no other
change, and a name the table lacks is refused with a message naming the ones it has."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

import pytest

from groupclient.coordinator.config import CoordinatorConfig
from groupclient.coordinator.consumer_group.assignors import DEFAULT_ASSIGNOR, SERVER_ASSIGNORS, Assignment, \
    MemberSpec
from groupclient.coordinator.consumer_group.group import ConsumerGroup, GroupSettings
from groupclient.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest as Request

ORDERS = uuid.UUID(int=11)


def everything_to_the_first(members: Sequence[MemberSpec],
                            partitions: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
    """An assignor the coordinator does not have: every partition to the first member by id."""
    first = min(m.member_id for m in members)
    return {m.member_id: ({t: frozenset(range(n)) for t, n in partitions.items()} if m.member_id == first else {})
            for m in members}


def test_the_defaults_are_the_table_its_first_first() -> None:
    assert CoordinatorConfig().group_consumer_assignors == tuple(SERVER_ASSIGNORS) == GroupSettings().assignors
    assert CoordinatorConfig().group_consumer_assignors[0] == DEFAULT_ASSIGNOR


def test_an_assignor_added_to_the_table_is_accepted_and_served(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SERVER_ASSIGNORS, "to-the-first", everything_to_the_first)
    config = CoordinatorConfig(group_consumer_assignors=("to-the-first", "uniform"),  # no ValueError
                               group_consumer_assignment_interval_ms=0)
    group = ConsumerGroup("g", GroupSettings.of(config))
    join = {"rebalance_timeout_ms": 60000, "subscribed_topic_names": ["orders"], "topic_partitions": []}
    topics = {"orders": (ORDERS, 4)}
    group.heartbeat(Request(version=1, group_id="g", member_id="B", member_epoch=0, **join), 0, topics)
    group.heartbeat(Request(version=1, group_id="g", member_id="A", member_epoch=0, server_assignor="to-the-first",
                            **join), 0, topics)
    assert group.assignor_name == "to-the-first"
    assert group.target == {"A": {ORDERS: frozenset(range(4))}, "B": {}}


def test_a_name_the_table_lacks_is_refused_naming_the_known_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SERVER_ASSIGNORS, "to-the-first", everything_to_the_first)
    with pytest.raises(ValueError) as refused:
        CoordinatorConfig(group_consumer_assignors=("uniform", "sticky"))
    message = str(refused.value)
    assert "group_consumer_assignors must name some of" in message and "sticky" in message
    assert all(repr(name) in message for name in SERVER_ASSIGNORS), message  # the added one too
    with pytest.raises(ValueError, match="must name some of"):
        CoordinatorConfig(group_consumer_assignors=())
