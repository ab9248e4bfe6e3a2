"""Mixed share groups: groupclient's ShareConsumer, confluent-kafka's ShareConsumer and Java's
KafkaShareConsumer (kafka-clients 4.4.0) in one share group, on the embedded coordinator and on
Apache Kafka 4.4.  One member is killed (SIGKILL: its records go back to the group when its
connections close) and one leaves gracefully while the group works; a fresh member then drains
what is left.  Nothing is lost (every record is reported accepted, or was the killed member's and its
acceptance reached the broker: the broker counts nothing unacknowledged), no record is accepted by
two members, and none is delivered again after a member's acceptance of it was confirmed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka import KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from groupclient.coordinator import EmbeddedCluster
from tests.integration import external
from groupclient.protocol.share_group import (
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)
from tests.integration.kip848_wire import coordinator_of, unique
from tests.integration.peers import wait_until
from tests.integration.share_peers import SharePeer

PARTITIONS = 2
WAVE = 120  # records produced at a time
WAVES = 20


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def bootstrap(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "kafka":
        yield request.getfixturevalue("kafka_broker").bootstrap
        return
    with EmbeddedCluster(nodes=1) as embedded:
        yield embedded.bootstrap_servers


def _prepare(bootstrap: str) -> tuple[str, str]:
    topic, group = unique("mix"), unique("mixg")
    external.create_topic(bootstrap, topic, PARTITIONS)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, group, configs={
            "share.auto.offset.reset": "earliest", "share.assignment.interval.ms": "0"})])
    finally:
        admin.close()
    return topic, group


def _members_assigned(bootstrap: str, group: str) -> int:
    """How many members of the share group have partitions assigned (ShareGroupDescribe)."""
    wire = coordinator_of(bootstrap, group)
    try:
        [described] = wire.call(ShareGroupDescribeRequest(version=1, group_ids=[group],
                                                          include_authorized_operations=False),
                                ShareGroupDescribeResponse).groups
    finally:
        wire.close()
    return sum(1 for m in described.members if any(tp.partitions for tp in m.assignment.topic_partitions))


def _lag(bootstrap: str, group: str) -> int | None:
    """The share group's records not yet acknowledged, over its partitions, as its broker counts
    them (DescribeShareGroupOffsets v1); None while it reports none."""
    wire = coordinator_of(bootstrap, group)
    try:
        [answer] = wire.call(DescribeShareGroupOffsetsRequest(version=1, groups=[
            DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)]),
            DescribeShareGroupOffsetsResponse).groups
    finally:
        wire.close()
    lags = [p.lag for t in answer.topics for p in t.partitions if p.start_offset >= 0]
    return sum(lags) if lags and min(lags) >= 0 else None


def _produce(bootstrap: str, topic: str, first: int, count: int) -> None:
    """Records m<first> .. m<first + count - 1>, spread over the partitions in turn."""
    # small batches: a member in batch_optimized mode acquires a whole batch at a time
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, batch_size=256)
    try:
        for future in [producer.send(topic, f"m{i}".encode(), partition=i % PARTITIONS)
                       for i in range(first, first + count)]:
            future.get(20)
    finally:
        producer.close()


def _offsets(records: int) -> set[tuple[int, int]]:
    """The (partition, offset) of records m0 .. m<records - 1>."""
    return {(i % PARTITIONS, i // PARTITIONS) for i in range(records)}


def test_three_clients_share_a_group_through_a_kill_and_a_leave(bootstrap: str) -> None:
    topic, group = _prepare(bootstrap)
    start = {"groupclient": SharePeer("groupclient", bootstrap, group, topic, "gc-1", max_records=5, work_ms=10),
             "confluent": SharePeer("confluent", bootstrap, group, topic, "ck-1", max_records=5, work_ms=10),
             "java": SharePeer("java", bootstrap, group, topic, "java-1", max_records=5, work_ms=10)}
    peers = list(start.values())
    try:
        # the records come once every member has its partitions, in waves until every client
        # has worked in the group (one slower to fetch, a JVM warming up, gets fewer of a wave)
        assert wait_until(lambda: _members_assigned(bootstrap, group) == 3, 90), [p.describe() for p in peers]
        produced = 0
        for _ in range(WAVES):
            _produce(bootstrap, topic, produced, WAVE)
            produced += WAVE
            if all(peer.wait_for(lambda p: len(p.accepted) >= 10, 10) for peer in peers):
                break
        assert all(len(peer.accepted) >= 10 for peer in peers), [p.describe() for p in peers]
        # while they hold records: one is killed, one leaves; a new member joins for the rest
        _produce(bootstrap, topic, produced, WAVE)
        produced += WAVE
        start["confluent"].kill()
        start["java"].terminate()
        last = SharePeer("groupclient", bootstrap, group, topic, "gc-2", max_records=50)
        peers.append(last)
        everything = _offsets(produced)

        killed = start["confluent"]

        def in_doubt() -> set[tuple[int, int]]:
            """What the killed member was delivered, never reported accepted and nobody got again:
            its acknowledgements may have reached the broker (librdkafka sends them with its
            background fetches, and the kill may fall between the broker's answer and the report)."""
            again = {(p, o) for peer in peers if peer is not killed for p, o, *_ in peer.delivered}
            return {(p, o) for p, o, *_ in killed.delivered} - set(killed.accepted) - again

        def settled() -> bool:
            done = {k for p in peers for k in p.accepted} | in_doubt()
            return done >= everything and _lag(bootstrap, group) == 0

        assert wait_until(settled, 120), ([p.describe() for p in peers], _lag(bootstrap, group))
        got = {k for p in peers for k in p.accepted}
        # nothing lost: each record accepted by a report, or (in doubt) by the broker's count of
        # what is not acknowledged yet, which is none
        assert got | in_doubt() == everything, (len(got), [p.describe() for p in peers])
        # accepted once: no two members' acceptances of one record
        owners: dict[tuple[int, int], list[str]] = {}
        for peer in peers:
            for key in peer.accepted:
                owners.setdefault(key, []).append(peer.name)
        twice = {k: v for k, v in owners.items() if len(v) > 1}
        assert not twice, list(twice.items())[:5]
        # no delivery of a record after its acceptance was confirmed to anyone
        confirmed = {k: min(p.accepted[k] for p in peers if k in p.accepted) for k in got}
        late = [(peer.name, p, o, n) for peer in peers for p, o, _, n, at in peer.delivered
                if (p, o) in confirmed and at > confirmed[(p, o)]]
        assert not late, late[:5]
        for peer in peers:
            assert not peer.errors, peer.describe()
        # what the killed member held came back, one delivery later (at least)
        held = {(p, o) for p, o, *_ in killed.delivered} - set(killed.accepted) - in_doubt()
        redelivered = {(p, o): n for peer in peers if peer is not killed for p, o, _, n, _ in peer.delivered}
        assert all(redelivered.get(k, 0) >= 2 for k in held), [(k, redelivered.get(k)) for k in held][:5]
    finally:
        for peer in peers:
            peer.terminate()
