"""A live group moving between the classic and the consumer group protocol, with real clients in
their own processes, on the embedded coordinator and on Apache Kafka 4.4 (``kip848_bootstrap``):
Kafka's default migration policy (``bidirectional``) lets consumer-protocol members join a live
classic group (it becomes a consumer group whose classic members stay) and classic members join a
live consumer group; when the last consumer-protocol member goes, the group is a classic group
again.  Throughout, no partition has two owners at any instant, every record is consumed and the
commits are exact."""

from __future__ import annotations

import time
import uuid
from collections import Counter

import pytest

from tests.integration import external
from tests.integration.ownership import double_ownership
from tests.integration.peers import Peer, PeerSet, all_consumed, wait_until

pytestmark = pytest.mark.integration
PARTITIONS = 6


def describe(members: list[Peer]) -> str:
    return "\n".join(m.describe() for m in members)  # a string: pytest shortens a list's repr


def group_type(bootstrap: str, group: str) -> str | None:
    """The group's type as ListGroups v5 says it ("classic" or "consumer")."""
    from kafka.protocol.admin.groups import ListGroupsRequest

    from tests.integration.wire import WireClient

    wire = WireClient(bootstrap)
    try:
        answer = wire.request(ListGroupsRequest(version=5, states_filter=[], types_filter=[]))
    finally:
        wire.close()
    return next((g.group_type for g in answer.groups if g.group_id == group), None)


def test_a_rolling_upgrade_from_classic_to_consumer_and_back(kip848_bootstrap: str, peers: PeerSet) -> None:
    bootstrap = kip848_bootstrap
    topic, group = external.new_topic(bootstrap, PARTITIONS), f"mig-{uuid.uuid4().hex[:6]}"
    counts: Counter[int] = Counter()
    expected: set[tuple[int, int]] = set()
    classic = [peers.start("kafka-python", bootstrap, group, topic) for _ in range(2)]
    assert external.peer_cover(classic, PARTITIONS, 90), describe(classic)
    assert wait_until(lambda: group_type(bootstrap, group) == "classic", 30)
    expected |= external.produce(bootstrap, topic, 60, PARTITIONS, counts)
    assert wait_until(lambda: all_consumed(classic, expected), 60), describe(classic)
    # consumer-protocol members join the live classic group: it becomes a consumer group
    modern = [peers.start(kind, bootstrap, group, topic, protocol="consumer") for kind in ("groupclient", "confluent")]
    everyone = classic + modern
    assert external.peer_cover(everyone, PARTITIONS, 90), describe(everyone)
    assert group_type(bootstrap, group) == "consumer"
    expected |= external.produce(bootstrap, topic, 60, PARTITIONS, counts)
    assert wait_until(lambda: all_consumed(everyone, expected), 60), describe(everyone)
    # the classic members leave one by one: the consumer-protocol members take everything
    for member in classic:
        assert member.terminate() == 0, member.describe()
    assert external.peer_cover(modern, PARTITIONS, 90), describe(modern)
    expected |= external.produce(bootstrap, topic, 60, PARTITIONS, counts)
    assert wait_until(lambda: all_consumed(everyone, expected), 60), describe(everyone)
    # and back: a classic member joins, the consumer-protocol members leave: a classic group again
    late = peers.start("kafka-python", bootstrap, group, topic)
    everyone.append(late)
    assert external.peer_cover(modern + [late], PARTITIONS, 90), describe(modern + [late])
    for member in modern:
        assert member.terminate() == 0, member.describe()
    assert external.peer_cover([late], PARTITIONS, 90), late.describe()
    assert wait_until(lambda: group_type(bootstrap, group) == "classic", 30)
    expected |= external.produce(bootstrap, topic, 60, PARTITIONS, counts)
    assert wait_until(lambda: all_consumed(everyone, expected), 60), describe(everyone)
    assert external.commits_match(bootstrap, group, topic, PARTITIONS, counts)
    assert not double_ownership(everyone, time.monotonic())
    assert not any(m.errors for m in everyone), describe(everyone)
