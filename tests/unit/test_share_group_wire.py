"""The share group APIs' schemas are ours (kafka-python has none): their bytes must be the Java
client's.  The hex below was written by Kafka 4.4.0's own ``*RequestData``/``*ResponseData`` classes
(``Message.write`` at the version named), so a field out of place, a wrong nullability or default, or
a missing tagged-field section fails here; each message also decodes back (strictly) to what it was."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from groupclient.protocol import share_group as sg
from groupclient.protocol.decoding import decode_body

TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
JAVA = {
    "heartbeat join": "0267176d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d000000000002027400",
    "heartbeat unchanged": "0267026d00000005000000",
    "heartbeat assignment": "00000000000000026d0000000300001388010200112233445566778899aabbccddeeff030000000000000001000000",
    "heartbeat error": "00000000006e0766656e636564000000000000000000ff00",
    "fetch v2": "0267026d00000001000001f400000001000003e8000001f4000001f401010200112233445566778899aabbccddeeff020000000202000000000000000a000000000000000c040104020000000200112233445566778899aabbccddeeff02000000050000",
    "fetch v1": "0267026d00000001000001f400000001000003e8000001f4000001f40200112233445566778899aabbccddeeff020000000202000000000000000a000000000000000c040104020000000200112233445566778899aabbccddeeff02000000050000",
    "fetch response": "00000000000000000075300200112233445566778899aabbccddeeff020000000200000000790a6c6f636b20676f6e650000000000000000000102000000000000000d000000000000001400020000000200000001026800002384000000",
    "acknowledge v2": "0267026d00000002000200112233445566778899aabbccddeeff02000000000200000000000000000000000000000004020300000000",
    "acknowledge response": "00000000000000000075300200112233445566778899aabbccddeeff02000000000079027800000000000000000000000100",
    "describe": "0202670000",
    "describe response": "0000000002000000026707537461626c6500000002000000020773696d706c6502026d00000000020263032f680202740200112233445566778899aabbccddeeff02740200000000000000800000000000",
    "offsets": "020267000000",
    "offsets response": "0000000002026702027400112233445566778899aabbccddeeff02000000000000000000000007ffffffff000000000000000300000000000000000000",
    "alter offsets": "026702027402000000000000000000000005000000",
    "alter offsets response": "0000000000000002027400112233445566778899aabbccddeeff02000000000003026d000000",
    "delete offsets response": "000000000044185468652067726f7570206973206e6f7420656d7074792e0100",
    "delete offsets": "02670202740000",
}
F = sg.ShareFetchRequest.FetchTopic
FR = sg.ShareFetchResponse.ShareFetchableTopicResponse
A = sg.ShareAcknowledgeRequest.AcknowledgeTopic
AR = sg.ShareAcknowledgeResponse.ShareAcknowledgeTopicResponse
DG = sg.ShareGroupDescribeResponse.DescribedGroup
DO = sg.DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseGroup


def fetch(version: int) -> Any:
    batch = F.FetchPartition.AcknowledgementBatch(first_offset=10, last_offset=12, acknowledge_types=[1, 4, 2])
    return sg.ShareFetchRequest(
        group_id="g", member_id="m", share_session_epoch=1, max_wait_ms=500, min_bytes=1, max_bytes=1000,
        max_records=500, batch_size=500, share_acquire_mode=1 if version >= 2 else 0, is_renew_ack=version >= 2,
        topics=[F(topic_id=TOPIC_ID, partitions=[F.FetchPartition(partition_index=2, acknowledgement_batches=[batch])])],
        forgotten_topics_data=[sg.ShareFetchRequest.ForgottenTopic(topic_id=TOPIC_ID, partitions=[5])])


MESSAGES: dict[str, tuple[Any, int]] = {
    "heartbeat join": (sg.ShareGroupHeartbeatRequest(group_id="g", member_id="m" * 22, member_epoch=0,
                                                     subscribed_topic_names=["t"]), 1),
    "heartbeat unchanged": (sg.ShareGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=5), 1),
    "heartbeat assignment": (sg.ShareGroupHeartbeatResponse(
        member_id="m", member_epoch=3, heartbeat_interval_ms=5000, assignment=sg.ShareGroupHeartbeatResponse.Assignment(
            topic_partitions=[sg.ShareGroupHeartbeatResponse.Assignment.TopicPartitions(topic_id=TOPIC_ID,
                                                                                       partitions=[0, 1])])),
        1),
    "heartbeat error": (sg.ShareGroupHeartbeatResponse(error_code=110, error_message="fenced"), 1),
    "fetch v2": (fetch(2), 2),
    "fetch v1": (fetch(1), 1),
    "fetch response": (sg.ShareFetchResponse(acquisition_lock_timeout_ms=30000, responses=[FR(
        topic_id=TOPIC_ID, partitions=[FR.PartitionData(
            partition_index=2, current_leader=FR.PartitionData.LeaderIdAndEpoch(leader_id=0, leader_epoch=0),
            acknowledge_error_code=121, acknowledge_error_message="lock gone", records=b"",
            acquired_records=[FR.PartitionData.AcquiredRecords(first_offset=13, last_offset=20, delivery_count=2)])])],
        node_endpoints=[sg.ShareFetchResponse.NodeEndpoint(node_id=1, host="h", port=9092)]), 2),
    "acknowledge v2": (sg.ShareAcknowledgeRequest(group_id="g", member_id="m", share_session_epoch=2, topics=[A(
        topic_id=TOPIC_ID, partitions=[A.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
            A.AcknowledgePartition.AcknowledgementBatch(first_offset=0, last_offset=4, acknowledge_types=[3])])])]), 2),
    "acknowledge response": (sg.ShareAcknowledgeResponse(acquisition_lock_timeout_ms=30000, responses=[AR(
        topic_id=TOPIC_ID, partitions=[AR.PartitionData(
            partition_index=0, error_code=121, error_message="x",
            current_leader=AR.PartitionData.LeaderIdAndEpoch(leader_id=0, leader_epoch=0))])]), 2),
    "describe": (sg.ShareGroupDescribeRequest(group_ids=["g"], include_authorized_operations=False), 1),
    "describe response": (sg.ShareGroupDescribeResponse(groups=[DG(
        group_id="g", group_state="Stable", group_epoch=2, assignment_epoch=2, assignor_name="simple", members=[
            DG.Member(member_id="m", member_epoch=2, client_id="c", client_host="/h", subscribed_topic_names=["t"],
                      assignment=DG.Member.Assignment(topic_partitions=[
                          DG.Member.Assignment.TopicPartitions(topic_id=TOPIC_ID, topic_name="t", partitions=[0])]))])]),
        1),
    "offsets": (sg.DescribeShareGroupOffsetsRequest(groups=[
        sg.DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id="g", topics=None)]), 1),
    "offsets response": (sg.DescribeShareGroupOffsetsResponse(groups=[DO(group_id="g", topics=[
        DO.DescribeShareGroupOffsetsResponseTopic(topic_name="t", topic_id=TOPIC_ID, partitions=[
            DO.DescribeShareGroupOffsetsResponseTopic.DescribeShareGroupOffsetsResponsePartition(
                partition_index=0, start_offset=7, leader_epoch=-1, lag=3)])])]), 1),
    "alter offsets": (sg.AlterShareGroupOffsetsRequest(group_id="g", topics=[
        sg.AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic(topic_name="t", partitions=[
            sg.AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic.AlterShareGroupOffsetsRequestPartition(
                partition_index=0, start_offset=5)])]), 0),
    "alter offsets response": (sg.AlterShareGroupOffsetsResponse(responses=[
        sg.AlterShareGroupOffsetsResponse.AlterShareGroupOffsetsResponseTopic(topic_name="t", topic_id=TOPIC_ID, partitions=[
            sg.AlterShareGroupOffsetsResponse.AlterShareGroupOffsetsResponseTopic.AlterShareGroupOffsetsResponsePartition(
                partition_index=0, error_code=3, error_message="m")])]), 0),
    "delete offsets response": (sg.DeleteShareGroupOffsetsResponse(error_code=68, error_message="The group is not empty.",
                                                                   responses=[]), 0),
    "delete offsets": (sg.DeleteShareGroupOffsetsRequest(group_id="g", topics=[
        sg.DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic(topic_name="t")]), 0),
}


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_messages_encode_as_kafka_4_4_encodes_them(name: str) -> None:
    message, version = MESSAGES[name]
    assert bytes(message.encode(version=version)).hex() == JAVA[name]


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_kafka_4_4s_bytes_decode_strictly_to_the_same_message(name: str) -> None:
    message, version = MESSAGES[name]
    decoded = decode_body(type(message), bytes.fromhex(JAVA[name]), version)
    assert decoded.to_dict() == type(message).decode(message.encode(version=version), version=version).to_dict()
