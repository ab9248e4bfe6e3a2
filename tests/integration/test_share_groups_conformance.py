"""Share groups on the wire, calibrated: the same raw ShareGroupHeartbeat, ShareFetch and
ShareAcknowledge requests sent to the embedded coordinator and to Apache Kafka 4.4.0 get the same
answers (errors and their messages; records acquired, their ranges and delivery counts; what an
acknowledgement does).  Kafka initialises a share-partition through its share coordinator before it
assigns it, so a member's first answers there may be empty: assignments are awaited, not expected
at once."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.protocol.admin.groups import (
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse, ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.consumer.group import JoinGroupRequest, JoinGroupResponse
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from groupclient.errors import ErrorCode
from groupclient.protocol.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, new_member_id,
)
from groupclient.protocol.share_group import (
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse, DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse,
    ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest, ShareFetchResponse,
    ShareGroupDescribeRequest, ShareGroupDescribeResponse, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
)
from tests.integration import external
from tests.integration.kip848_wire import Coordinator, coordinator_of, topic_id_of, unique, wait_until_assignable
from tests.integration.peers import wait_until

E = ErrorCode
Fetch = ShareFetchRequest.FetchTopic
Ack = ShareAcknowledgeRequest.AcknowledgeTopic


class Share:
    """One test's topic (one partition, ten records in one batch, read from the earliest offset),
    share group and connections (the group's coordinator, the partition's leader)."""

    def __init__(self, bootstrap: str, lock_ms: int | None = None) -> None:
        self.bootstrap = bootstrap
        self.group = unique("sgc")
        self.topic = external.new_topic(bootstrap, 1)
        self.topic_id = topic_id_of(bootstrap, self.topic, 1)
        wait_until_assignable(bootstrap, self.topic)
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, self.group, configs={
                "share.auto.offset.reset": "earliest", "share.assignment.interval.ms": "0",
                **({"share.record.lock.duration.ms": str(lock_ms)} if lock_ms else {})})])
        finally:
            admin.close()
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=100)
        for future in [producer.send(self.topic, f"r{i}".encode(), partition=0) for i in range(10)]:
            future.get(10)
        producer.close()
        self.coordinator = coordinator_of(bootstrap, self.group)
        self.leader = Coordinator(bootstrap, timeout_s=70)  # a ShareFetch may wait up to 60 s

    def close(self) -> None:
        self.coordinator.close()
        self.leader.close()

    def reconnect(self) -> None:
        """A new connection to the leader: the old one's share sessions end."""
        self.leader.close()
        self.leader = Coordinator(self.bootstrap, timeout_s=70)

    def heartbeat(self, member: str, epoch: int, topics: list[str] | None = None, group: str | None = None,
                  rack: str | None = None) -> Any:
        return self.coordinator.call(ShareGroupHeartbeatRequest(
            version=1, group_id=group or self.group, member_id=member, member_epoch=epoch, rack_id=rack,
            subscribed_topic_names=topics), ShareGroupHeartbeatResponse)

    def join(self, member: str) -> int:
        """Join, and heartbeat until the partition is assigned: the member's epoch."""
        answer = self.heartbeat(member, 0, [self.topic])
        assert answer.error_code == 0, answer
        epoch = [answer.member_epoch, answer.assignment]

        def assigned() -> bool:
            if epoch[1] is not None and any(tp.partitions for tp in epoch[1].topic_partitions):
                return True
            beat = self.heartbeat(member, int(epoch[0]))
            epoch[:] = [beat.member_epoch, beat.assignment]
            return False

        assert wait_until(assigned, 20), epoch
        return int(epoch[0])

    def fetch(self, member: str, session_epoch: int, acks: list[tuple[int, int, list[int]]] | None = None,
              topic_id: uuid.UUID | None = None, max_records: int = 500, wait_ms: int = 2000,
              wire: Coordinator | None = None) -> Any:
        """A ShareFetch v2 of the topic's partition (on ``wire``, else the leader connection)."""
        partition = Fetch.FetchPartition(partition_index=0, acknowledgement_batches=[
            Fetch.FetchPartition.AcknowledgementBatch(first_offset=f, last_offset=last, acknowledge_types=types)
            for f, last, types in acks or []])
        return (wire or self.leader).call(ShareFetchRequest(
            version=2, group_id=self.group, member_id=member, share_session_epoch=session_epoch, max_wait_ms=wait_ms,
            min_bytes=1, max_bytes=1 << 20, max_records=max_records, batch_size=500, share_acquire_mode=0,
            is_renew_ack=False, topics=[Fetch(topic_id=topic_id or self.topic_id, partitions=[partition])],
            forgotten_topics_data=[]), ShareFetchResponse)

    def acknowledge(self, member: str, session_epoch: int, acks: list[tuple[int, int, list[int]]]) -> Any:
        return self.leader.call(ShareAcknowledgeRequest(
            version=2, group_id=self.group, member_id=member, share_session_epoch=session_epoch, is_renew_ack=False,
            topics=[Ack(topic_id=self.topic_id, partitions=[Ack.AcknowledgePartition(
                partition_index=0, acknowledgement_batches=[
                    Ack.AcknowledgePartition.AcknowledgementBatch(first_offset=f, last_offset=last, acknowledge_types=t)
                    for f, last, t in acks])])]), ShareAcknowledgeResponse)


def acquired(answer: Any) -> list[tuple[int, int, int]]:
    """The ranges an answer acquired, after checking it is the topic's one partition without error."""
    assert answer.error_code == 0, answer
    ranges = []
    for topic in answer.responses:
        for p in topic.partitions:
            assert (p.partition_index, p.error_code) == (0, 0), p
            ranges += [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records]
    return ranges


def acked(answer: Any) -> tuple[int, str | None]:
    """The acknowledgement outcome of a ShareFetch answer's one partition."""
    [topic] = answer.responses
    [p] = topic.partitions
    return p.acknowledge_error_code, p.acknowledge_error_message


@pytest.fixture
def share(kip848_bootstrap: str) -> Iterator[Share]:
    scene = Share(kip848_bootstrap)
    try:
        yield scene
    finally:
        scene.close()


def member() -> str:
    return new_member_id(random.Random())


def test_heartbeats_are_refused_with_kafkas_codes_and_messages(share: Share) -> None:
    """Kafka 4.4.0: an empty member id is INVALID_REQUEST without a message (its broker checks it
    before the group coordinator); the group coordinator's checks come with Kafka's messages."""
    m = member()

    def refusal(answer: Any) -> tuple[int, str | None]:
        assert (answer.member_id, answer.member_epoch, answer.assignment) == (None, 0, None), answer
        return answer.error_code, answer.error_message

    assert refusal(share.heartbeat("", 0, [share.topic])) == (E.INVALID_REQUEST, None)
    assert refusal(share.heartbeat(m, 0, [])) == (E.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
    assert refusal(share.heartbeat(m, -2)) == (E.INVALID_REQUEST, "MemberEpoch is invalid.")
    assert refusal(share.heartbeat(m, 0, [share.topic], rack=" ")) == (E.INVALID_REQUEST, "RackId can't be empty.")
    assert refusal(share.heartbeat(m, 3)) == (E.GROUP_ID_NOT_FOUND, f"Share group {share.group} not found.")
    assert refusal(share.heartbeat(m, -1)) == (E.GROUP_ID_NOT_FOUND, f"Group {share.group} not found.")
    epoch = share.join(m)
    stranger = member()
    assert refusal(share.heartbeat(stranger, 1)) == (
        E.UNKNOWN_MEMBER_ID, f"Member {stranger} is not a member of group {share.group}.")
    assert refusal(share.heartbeat(m, epoch + 1)) == (E.FENCED_MEMBER_EPOCH, (
        f"The share group member has a greater member epoch ({epoch + 1}) than the one known by the group "
        f"coordinator ({epoch}). The member must abandon all its partitions and rejoin."))
    left = share.heartbeat(m, -1)
    assert (left.error_code, left.member_id, left.member_epoch, left.heartbeat_interval_ms) == (0, m, -1, 0)


def test_share_sessions_are_refused_out_of_turn(share: Share) -> None:
    """Kafka 4.4.0: a ShareFetch on no session is SHARE_SESSION_NOT_FOUND; one carrying
    acknowledgements at epoch 0 is INVALID_REQUEST; a session's wrong epoch is
    INVALID_SHARE_SESSION_EPOCH, as is a ShareAcknowledge at epoch 0 — all top-level, no message."""
    m = member()
    share.join(m)
    assert share.fetch(m, 4).error_code == E.SHARE_SESSION_NOT_FOUND
    assert share.acknowledge(m, 4, [(0, 0, [1])]).error_code == E.SHARE_SESSION_NOT_FOUND
    assert share.fetch(m, 0, acks=[(0, 0, [1])]).error_code == E.INVALID_REQUEST
    assert acquired(share.fetch(m, 0)) == [(0, 9, 1)]
    assert share.fetch(m, 3).error_code == E.INVALID_SHARE_SESSION_EPOCH
    assert share.acknowledge(m, 0, [(0, 0, [1])]).error_code == E.INVALID_SHARE_SESSION_EPOCH
    assert share.fetch(m, 1, wait_ms=0).error_code == E.NONE  # the session's own epoch still works


def test_records_are_released_redelivered_accepted_and_refused_as_kafka_does(share: Share) -> None:
    """Kafka 4.4.0: a member acquires the ten records of the batch at delivery count 1; releasing
    them brings them back to another member at count 2; the first member's acknowledgement then
    is INVALID_RECORD_STATE ("Member is not the owner of batch record"); malformed batches are
    INVALID_REQUEST without a message; once accepted, nothing more comes."""
    a, b = member(), member()
    share.join(a)
    share.join(b)
    assert acquired(share.fetch(a, 0)) == [(0, 9, 1)]
    released = share.acknowledge(a, 1, [(0, 9, [2])])
    assert [(p.error_code, p.error_message) for t in released.responses for p in t.partitions] == [(0, None)]
    assert acquired(share.fetch(b, 0)) == [(0, 9, 2)]
    refused = share.acknowledge(a, 2, [(0, 9, [1])])
    assert [(p.error_code, p.error_message) for t in refused.responses for p in t.partitions] == [
        (E.INVALID_RECORD_STATE, "Member is not the owner of batch record")]
    assert acked(share.fetch(b, 1, acks=[(5, 3, [1])], wait_ms=0)) == (E.INVALID_REQUEST, None)
    assert acked(share.fetch(b, 2, acks=[(0, 3, [1, 1])], wait_ms=0)) == (E.INVALID_REQUEST, None)
    accepted = share.fetch(b, 3, acks=[(0, 9, [1])], wait_ms=500)
    assert acked(accepted) == (0, None) and acquired(accepted) == []


def test_a_fetch_from_an_unknown_topic_id_is_refused_for_that_partition_at_once(share: Share) -> None:
    """Kafka 4.4.0: UNKNOWN_TOPIC_ID for the partition, answered without waiting out MaxWaitMs; a
    ShareFetch v2 with an acquire mode other than 0 and 1 is served (as batch_optimized), its session
    moving on."""
    m = member()
    share.join(m)
    started = time.monotonic()
    answer = share.fetch(m, 0, topic_id=uuid.UUID(int=42), wait_ms=30_000)
    assert time.monotonic() - started < 20  # not the 30 s asked for
    assert answer.error_code == 0
    assert [(p.partition_index, p.error_code) for t in answer.responses for p in t.partitions] == [
        (0, E.UNKNOWN_TOPIC_ID)]
    bad_mode = share.leader.call(ShareFetchRequest(
        version=2, group_id=share.group, member_id=m, share_session_epoch=1, max_wait_ms=0, min_bytes=1,
        max_bytes=1 << 20, max_records=10, batch_size=10, share_acquire_mode=5, is_renew_ack=False, topics=[],
        forgotten_topics_data=[]), ShareFetchResponse)
    assert bad_mode.error_code == 0
    assert share.fetch(m, 2, wait_ms=0).error_code == 0


def test_a_consumer_groups_id_is_not_a_share_group_and_describe_says_what_a_group_is(share: Share) -> None:
    """Kafka 4.4.0: ShareGroupHeartbeat for the id of a consumer-protocol group is GROUP_ID_NOT_FOUND
    "Group X is not a share group."; ShareGroupDescribe answers a share group Stable with the simple
    assignor and its member on the partition, an unknown id "Group X not found."."""
    consumer_group = unique("cg")
    joined = share.coordinator.call(ConsumerGroupHeartbeatRequest(
        version=1, group_id=consumer_group, member_id=member(), member_epoch=0, rebalance_timeout_ms=30000,
        subscribed_topic_names=[share.topic], topic_partitions=[]), ConsumerGroupHeartbeatResponse)
    assert joined.error_code == 0, joined
    wire = coordinator_of(share.bootstrap, consumer_group)
    try:
        answer = wire.call(ShareGroupHeartbeatRequest(
            version=1, group_id=consumer_group, member_id=member(), member_epoch=0, rack_id=None,
            subscribed_topic_names=[share.topic]), ShareGroupHeartbeatResponse)
    finally:
        wire.close()
    assert (answer.error_code, answer.error_message) == (
        E.GROUP_ID_NOT_FOUND, f"Group {consumer_group} is not a share group.")
    m = member()
    epoch = share.join(m)
    missing = unique("none")
    described = share.coordinator.call(ShareGroupDescribeRequest(
        version=1, group_ids=[share.group, missing], include_authorized_operations=False),
        ShareGroupDescribeResponse).groups
    by_id = {g.group_id: g for g in described}  # Kafka answers in the order of its coordinator shards
    group, absent = by_id[share.group], by_id[missing]
    assert (group.error_code, group.group_state, group.assignor_name, group.group_epoch >= epoch) == (
        0, "Stable", "simple", True)
    assert [(x.member_id, x.member_epoch, [list(tp.partitions) for tp in x.assignment.topic_partitions])
            for x in group.members] == [(m, epoch, [[0]])]
    assert (absent.error_code, absent.error_message) == (E.GROUP_ID_NOT_FOUND, f"Group {missing} not found.")


def test_a_share_groups_id_is_not_a_consumer_group_nor_a_classic_one(share: Share) -> None:
    """Kafka 4.4.0: ConsumerGroupHeartbeat naming a share group is GROUP_ID_NOT_FOUND "Group X is not
    a consumer group."; a classic JoinGroup is INCONSISTENT_GROUP_PROTOCOL; the share group goes on."""
    m = member()
    epoch = share.join(m)
    joined = share.coordinator.call(ConsumerGroupHeartbeatRequest(
        version=1, group_id=share.group, member_id=member(), member_epoch=0, rebalance_timeout_ms=30000,
        subscribed_topic_names=[share.topic], topic_partitions=[]), ConsumerGroupHeartbeatResponse)
    assert (joined.error_code, joined.error_message) == (
        E.GROUP_ID_NOT_FOUND, f"Group {share.group} is not a consumer group.")
    classic = share.coordinator.call(JoinGroupRequest(
        version=9, group_id=share.group, session_timeout_ms=10000, rebalance_timeout_ms=30000, member_id="",
        group_instance_id=None, protocol_type="consumer", reason=None,
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")]), JoinGroupResponse)
    assert classic.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert share.heartbeat(m, epoch).error_code == 0


def test_a_closed_connection_releases_its_share_sessions_records(share: Share) -> None:
    """Kafka 4.4.0: a member's connection closing ends its share session, and what it held comes
    to another member at once (at its second delivery), not after the 30 s lock."""
    a, b = member(), member()
    share.join(a)
    share.join(b)
    gone = Coordinator(share.bootstrap)
    answer = share.fetch(a, 0, wire=gone)
    assert acquired(answer) == [(0, 9, 1)]
    gone.close()
    got: list[tuple[int, int, int]] = []
    epoch = [0]

    def redelivered() -> bool:
        got.extend(acquired(share.fetch(b, epoch[0], wait_ms=500)))
        epoch[0] += 1
        return bool(got)

    assert wait_until(redelivered, 10)  # well under the lock's 30 s
    assert got == [(0, 9, 2)]


def test_a_waiting_fetch_wakes_when_a_lock_runs_out(kip848_bootstrap: str, request: pytest.FixtureRequest) -> None:
    """A member that acquired and went silent, its connection open, holds its records for the
    group's lock (15 s, the broker's least); another member's ShareFetch waiting up to 60 s gets them
    when the lock runs out, at their second delivery, not at the end of its wait.  The embedded
    coordinator only: Kafka 4.4 answers it as well, after the same 15 s, and the suite does not wait
    for that twice."""
    if request.node.callspec.params["kip848_bootstrap"] == "kafka":
        pytest.skip("the embedded coordinator's wake; Kafka's is its own delayed-fetch purgatory")
    share = Share(kip848_bootstrap, lock_ms=15000)
    try:
        a, b = member(), member()
        share.join(a)
        share.join(b)
        assert acquired(share.fetch(a, 0)) == [(0, 9, 1)]
        started = time.monotonic()
        assert acquired(share.fetch(b, 0, wait_ms=60_000)) == [(0, 9, 2)]
        assert time.monotonic() - started < 45  # the lock's 15 s, not the 60 s asked for
    finally:
        share.close()


def test_share_groups_in_the_classic_admin_apis(share: Share) -> None:
    """Kafka 4.4.0: ListGroups v5 lists a share group as type and protocol type ``share``, Stable
    (and with the types filter ``share``); DescribeGroups answers it Dead, from v6 with
    GROUP_ID_NOT_FOUND "Group X is not a classic group."; DeleteGroups refuses it with
    NON_EMPTY_GROUP while it has a member and deletes it once it has none."""
    m = member()
    share.join(m)

    def listed(types: list[str]) -> list[tuple[str, str, str]]:
        answer = share.coordinator.call(ListGroupsRequest(version=5, states_filter=[], types_filter=types),
                                        ListGroupsResponse)
        return [(g.protocol_type, g.group_state, g.group_type) for g in answer.groups if g.group_id == share.group]

    assert listed(["share"]) == listed([]) == [("share", "Stable", "share")]
    assert listed(["consumer", "classic"]) == []
    for version, expected in ((5, (0, None)), (6, (E.GROUP_ID_NOT_FOUND, f"Group {share.group} is not a classic group."))):
        [g] = share.coordinator.call(DescribeGroupsRequest(version=version, groups=[share.group],
                                                           include_authorized_operations=False),
                                     DescribeGroupsResponse).groups
        assert (g.error_code, getattr(g, "error_message", None), g.group_state, list(g.members)) == (
            *expected, "Dead", [])

    def delete() -> int:
        [result] = share.coordinator.call(DeleteGroupsRequest(version=2, groups_names=[share.group]),
                                          DeleteGroupsResponse).results
        return int(result.error_code)

    assert delete() == E.NON_EMPTY_GROUP
    assert share.heartbeat(m, -1).error_code == 0
    assert delete() == 0
    assert listed([]) == []


def test_describe_share_group_offsets_gives_start_offsets_and_lag(share: Share) -> None:
    """Kafka 4.4.0, DescribeShareGroupOffsets v1: acquiring writes nothing (start -1, lag -1); the
    start offset is the one last written, as it stood before that write's acknowledgement moved it,
    and the lag counts what is not finished: accepting 0-3 gives start 0 and lag 6, then 4-5 start 4
    and lag 4, then 7 start 6 and lag 3; no topics asked gives the same; a topic that does not exist,
    and a group that does not exist, start at -1 with lag -1."""
    m = member()
    share.join(m)
    assert acquired(share.fetch(m, 0)) == [(0, 9, 1)]

    def offsets(group: str, topics: list[str] | None) -> list[tuple[str, bool, int, int, int, int]]:
        request = DescribeShareGroupOffsetsRequest(version=1, groups=[
            DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None if topics is None else [
                DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup.DescribeShareGroupOffsetsRequestTopic(
                    topic_name=t, partitions=[0]) for t in topics])])
        wire = coordinator_of(share.bootstrap, group)
        try:
            [answer] = wire.call(request, DescribeShareGroupOffsetsResponse).groups
        finally:
            wire.close()
        assert (answer.group_id, answer.error_code) == (group, 0), answer
        return [(t.topic_name, t.topic_id == share.topic_id, p.partition_index, p.start_offset, p.lag, p.error_code)
                for t in answer.topics for p in t.partitions]

    assert offsets(share.group, [share.topic]) == [(share.topic, True, 0, -1, -1, 0)]
    for epoch, (first, last), start, lag in ((1, (0, 3), 0, 6), (2, (4, 5), 4, 4), (3, (7, 7), 6, 3)):
        assert share.acknowledge(m, epoch, [(first, last, [1])]).error_code == 0
        here = [(share.topic, True, 0, start, lag, 0)]
        assert wait_until(lambda: offsets(share.group, [share.topic]) == here, 10), offsets(share.group, [share.topic])
    assert offsets(share.group, None) == here
    assert offsets(share.group, ["no-such-topic"]) == [("no-such-topic", False, 0, -1, -1, 0)]
    assert offsets(unique("none"), [share.topic]) == [(share.topic, True, 0, -1, -1, 0)]


def test_alter_and_delete_share_group_offsets_on_an_empty_group_only(share: Share) -> None:
    """Kafka 4.4.0: AlterShareGroupOffsets and DeleteShareGroupOffsets refuse a group with a member
    (NON_EMPTY_GROUP "The group is not empty."); once it is empty and its members' connections are
    gone (Kafka's broker keeps serving a share-partition it cached while one stays open; this
    coordinator applies the change at once), altering partition 0 to offset 7
    makes the next member start there (records 7-9), a partition the topic lacks is
    UNKNOWN_TOPIC_OR_PARTITION; deleting forgets the topic (the next fetch starts from
    share.auto.offset.reset: earliest, all ten again), a second delete has "There is no offset
    information to delete.", and a group that does not exist is "Group X not found."."""
    m = member()
    share.join(m)
    assert acquired(share.fetch(m, 0)) == [(0, 9, 1)]
    alter_topic = AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic

    def alter(group: str, partition: int, offset: int) -> Any:
        wire = coordinator_of(share.bootstrap, group)
        try:
            return wire.call(AlterShareGroupOffsetsRequest(version=0, group_id=group, topics=[alter_topic(
                topic_name=share.topic, partitions=[alter_topic.AlterShareGroupOffsetsRequestPartition(
                    partition_index=partition, start_offset=offset)])]), AlterShareGroupOffsetsResponse)
        finally:
            wire.close()

    def delete(group: str) -> Any:
        wire = coordinator_of(share.bootstrap, group)
        try:
            return wire.call(DeleteShareGroupOffsetsRequest(version=0, group_id=group, topics=[
                DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic(topic_name=share.topic)]),
                DeleteShareGroupOffsetsResponse)
        finally:
            wire.close()

    not_empty: tuple[int, str, list[Any]] = (E.NON_EMPTY_GROUP, "The group is not empty.", [])
    refused = alter(share.group, 0, 7)
    assert (refused.error_code, refused.error_message, list(refused.responses)) == not_empty
    refused = delete(share.group)
    assert (refused.error_code, refused.error_message, list(refused.responses)) == not_empty
    assert share.heartbeat(m, -1).error_code == 0
    share.reconnect()  # the member's connection ends too (Kafka's broker then drops what it cached)
    altered = alter(share.group, 0, 7)
    assert (altered.error_code, [(t.topic_name, t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions])
                                 for t in altered.responses]) == (0, [(share.topic, share.topic_id, [(0, 0)])])
    missing = alter(share.group, 3, 0)
    assert [(p.partition_index, p.error_code) for t in missing.responses for p in t.partitions] == [
        (3, E.UNKNOWN_TOPIC_OR_PARTITION)]
    n = member()
    share.join(n)
    assert acquired(share.fetch(n, 0)) == [(7, 9, 1)]
    assert share.heartbeat(n, -1).error_code == 0
    share.reconnect()
    deleted = delete(share.group)
    assert (deleted.error_code, [(t.topic_name, t.topic_id, t.error_code, t.error_message)
                                 for t in deleted.responses]) == (0, [(share.topic, share.topic_id, 0, None)])
    again = delete(share.group)
    assert [(t.error_code, t.error_message) for t in again.responses] == [
        (E.UNKNOWN_TOPIC_OR_PARTITION, "There is no offset information to delete.")]
    ghost = unique("none")
    gone = delete(ghost)
    assert (gone.error_code, gone.error_message) == (E.GROUP_ID_NOT_FOUND, f"Group {ghost} not found.")
    o = member()
    share.join(o)
    assert acquired(share.fetch(o, 0)) == [(0, 9, 1)]
