"""What Apache Kafka refuses, the embedded coordinator refuses too, with the same answer: each
request here runs against both (Kafka 4.4 from tests/kafka/broker.py, and an EmbeddedCluster),
and both must answer it the same way.  A test that passes on the embedded coordinator can then not
fail on Kafka for one of these reasons."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.admin.groups import DescribeGroupsRequest
from kafka.protocol.admin.topics import CreateTopicsRequest
from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetFetchRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from groupclient import GroupConsumer
from groupclient.error_codes import ErrorCode
from groupclient.coordinator import EmbeddedCluster
from tests.integration import external
from tests.integration.peers import wait_until
from tests.integration.wire import WireClient

pytestmark = pytest.mark.integration


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def bootstrap(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "kafka":
        yield request.getfixturevalue("kafka_broker").bootstrap
        return
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0) as cluster:
        yield cluster.bootstrap_servers


def coordinator_of(bootstrap: str, group: str) -> WireClient:
    """A raw connection to the group's coordinator, once it has loaded the group's offsets
    partition: a freshly started Kafka names the coordinator before it has, and answers the
    group's requests COORDINATOR_LOAD_IN_PROGRESS until then (the test's first request would
    get that, not the answer it checks)."""
    wire = WireClient(bootstrap)
    found: list[Any] = []

    def known() -> bool:
        found[:] = wire.request(FindCoordinatorRequest(version=4, key_type=0, coordinator_keys=[group])).coordinators
        return not found[0].error_code

    try:
        assert wait_until(known, 10), f"no coordinator for {group}: {found}"
        coordinator = WireClient(f"{found[0].host}:{found[0].port}")
    finally:
        wire.close()
    codes: list[int] = []

    def loaded() -> bool:
        answer = coordinator.request(OffsetFetchRequest(version=8, require_stable=False, groups=[
            OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=None)]))
        codes[:] = [answer.groups[0].error_code]
        return codes[0] != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    if not wait_until(loaded, 10):
        coordinator.close()
        raise AssertionError(f"the coordinator of {group} is still loading its offsets: {codes}")
    return coordinator


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_a_commit_to_a_partition_or_topic_that_does_not_exist_is_refused(bootstrap: str) -> None:
    """Kafka answers UNKNOWN_TOPIC_OR_PARTITION for each, and commits the rest."""
    topic, group = external.new_topic(bootstrap, 3), unique("g")
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    P = T.OffsetCommitRequestPartition
    wire = coordinator_of(bootstrap, group)
    try:
        for version in (2, 8):
            answer = wire.request(OffsetCommitRequest(
                version=version, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                group_instance_id=None, retention_time_ms=-1, topics=[
                    T(name=topic, partitions=[P(partition_index=i, committed_offset=0, committed_leader_epoch=-1,
                                                committed_metadata="") for i in (0, 99)]),
                    T(name=unique("missing"), partitions=[P(partition_index=0, committed_offset=0,
                                                           committed_leader_epoch=-1, committed_metadata="")])]))
            codes = {(t.name == topic, p.partition_index): p.error_code for t in answer.topics for p in t.partitions}
            assert codes == {(True, 0): 0, (True, 99): 3, (False, 0): 3}, (version, codes)
    finally:
        wire.close()


def test_describe_groups_of_an_empty_or_unknown_group_id(bootstrap: str) -> None:
    """Dead with no error up to v5; GROUP_ID_NOT_FOUND with Kafka's message from v6."""
    group = unique("never-joined")
    wire = coordinator_of(bootstrap, group)
    try:
        for version, code in ((0, 0), (5, 0), (6, 69)):
            answer = wire.request(DescribeGroupsRequest(version=version, groups=["", group],
                                                        include_authorized_operations=False))
            found = {g.group_id: (g.error_code, g.group_state, getattr(g, "error_message", None))
                     for g in answer.groups}
            messages = {"": "Group  not found.", group: f"Group {group} not found."} if version >= 6 else {}
            assert found == {g: (code, "Dead", messages.get(g)) for g in ("", group)}, (version, found)
    finally:
        wire.close()


def test_describe_groups_shows_the_members_host_as_kafka_does(bootstrap: str) -> None:
    """Kafka's client host is InetAddress.toString(): '/127.0.0.1'."""
    topic, group = external.new_topic(bootstrap, 1), unique("g")
    consumer = GroupConsumer(topic, bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=6000,
                             heartbeat_interval_ms=500)
    try:
        for _ in range(150):  # 30 s at most
            if consumer.assignment():
                break
            consumer.poll(200)
        wire = coordinator_of(bootstrap, group)
        try:
            answer = wire.request(DescribeGroupsRequest(version=6, groups=[group], include_authorized_operations=False))
        finally:
            wire.close()
        assert [m.client_host for g in answer.groups for m in g.members] == ["/127.0.0.1"]
    finally:
        consumer.close()


def test_create_topics_with_a_name_twice_is_an_invalid_request(bootstrap: str) -> None:
    name, other = unique("dup"), unique("single")
    Creatable = CreateTopicsRequest.CreatableTopic
    wire = WireClient(bootstrap)
    try:
        answer = wire.request(CreateTopicsRequest(version=5, timeout_ms=10_000, validate_only=False, topics=[
            Creatable(name=n, num_partitions=1, replication_factor=1, assignments=[], configs=[])
            for n in (name, other, name)]))
    finally:
        wire.close()
    results = sorted((t.name == name, t.error_code, t.error_message) for t in answer.topics)
    assert results == [(False, 0, None), (True, 42, "Duplicate topic name.")], results
    assert name not in external.topics(bootstrap)


def test_the_metadata_request_that_auto_creates_a_topic_answers_unknown_topic_or_partition(bootstrap: str) -> None:
    name = unique("auto")
    wire = WireClient(bootstrap)
    try:
        answer = wire.request(MetadataRequest(version=12, topics=[MetadataRequest.MetadataRequestTopic(
            topic_id=None, name=name)], allow_auto_topic_creation=True, include_topic_authorized_operations=False))
        assert [(t.name, t.error_code) for t in answer.topics] == [(name, 3)]

        def created() -> bool:  # meanwhile: a later request sees it
            again = wire.request(MetadataRequest(version=12, topics=[MetadataRequest.MetadataRequestTopic(
                topic_id=None, name=name)], allow_auto_topic_creation=True, include_topic_authorized_operations=False))
            return bool(again.topics[0].error_code == 0 and again.topics[0].partitions)

        assert wait_until(created, 10)
    finally:
        wire.close()


@pytest.mark.parametrize("session_timeout_ms", [3000, 3_600_000])
def test_a_session_timeout_outside_the_brokers_bounds_is_refused_naming_them(bootstrap: str,
                                                                              session_timeout_ms: int) -> None:
    """INVALID_SESSION_TIMEOUT from both; the consumer's error names its own value, the broker
    settings it is outside of, and their Kafka defaults, so the user knows what to change."""
    from groupclient import FatalGroupError

    topic = external.new_topic(bootstrap, 1)
    consumer = GroupConsumer(topic, bootstrap_servers=bootstrap, group_id=unique("g"),
                             session_timeout_ms=session_timeout_ms, heartbeat_interval_ms=1000)
    try:
        with pytest.raises(FatalGroupError) as raised:
            for _ in range(100):  # bounded: the refusal comes with the first JoinGroup answer
                consumer.poll(timeout_ms=100)
    finally:
        consumer.close(autocommit=False, timeout_ms=5000)
    message = str(raised.value)
    assert raised.value.code == 26, message
    for part in (f"session_timeout_ms={session_timeout_ms}", "group.min.session.timeout.ms",
                 "group.max.session.timeout.ms", "6000", "1800000"):
        assert part in message, message
