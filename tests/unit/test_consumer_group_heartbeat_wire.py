"""ConsumerGroupHeartbeat's schema is ours (kafka-python has none): its bytes must be the Java
client's.  The hex below was written by Kafka 4.1.1's own ``ConsumerGroupHeartbeatRequestData``/
``ResponseData`` classes (``MessageUtil.toByteBuffer``), so a field out of place, a wrong
nullability or a missing tagged-field section fails here."""

from __future__ import annotations

import random
import uuid

import pytest

from groupclient.protocol.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest as Request, ConsumerGroupHeartbeatResponse as Response, new_member_id, topic_id_text,
)
from groupclient.protocol.decoding import decode_body

TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
JAVA = {
    "join v1": "0267176d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d000000000000000493e002027400000100",
    "join v0": "0267176d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d000000000000000493e0020274000100",
    "unchanged v1": "0267026d000000050000ffffffff0000000000",
    "every field v1": "0267026d0000000002690272000493e00004742e2a08756e69666f726d02"
                      "00112233445566778899aabbccddeeff0300000000000000010000",
    "assignment": "00000000000000026d0000000300001388010200112233445566778899aabbccddeeff030000000000000001000000",
    "no new assignment": "00000000000000026d0000000300001388ff00",
    "error": "00000000006e0766656e63656400ffffffff00000000ff00",
}


def test_requests_encode_as_the_java_client_encodes_them() -> None:
    join = dict(group_id="g", member_id="m" * 22, member_epoch=0, rebalance_timeout_ms=300000,
                subscribed_topic_names=["t"], topic_partitions=[])
    assert Request(**join).encode(version=1).hex() == JAVA["join v1"]
    assert Request(**join).encode(version=0).hex() == JAVA["join v0"]
    # every field left out is "unchanged": nulls and -1
    assert Request(group_id="g", member_id="m", member_epoch=5).encode(version=1).hex() == JAVA["unchanged v1"]
    every = Request(group_id="g", member_id="m", member_epoch=0, subscribed_topic_regex="t.*",
                    rebalance_timeout_ms=300000, instance_id="i", rack_id="r", server_assignor="uniform",
                    topic_partitions=[Request.TopicPartitions(topic_id=TOPIC_ID, partitions=[0, 1])])
    assert every.encode(version=1).hex() == JAVA["every field v1"]


def test_responses_encode_as_the_broker_encodes_them() -> None:
    # the embedded coordinator writes these
    assigned = Response(member_id="m", member_epoch=3, heartbeat_interval_ms=5000, assignment=Response.Assignment(
        topic_partitions=[Response.Assignment.TopicPartitions(topic_id=TOPIC_ID, partitions=[0, 1])]))
    assert assigned.encode(version=1).hex() == JAVA["assignment"]
    same = Response(member_id="m", member_epoch=3, heartbeat_interval_ms=5000, assignment=None)
    assert same.encode(version=1).hex() == JAVA["no new assignment"]


@pytest.mark.parametrize("name", ["assignment", "no new assignment", "error"])
def test_responses_decode_strictly(name: str) -> None:
    response = decode_body(Response, bytes.fromhex(JAVA[name]), 1)
    if name == "assignment":
        assert response.member_epoch == 3 and response.heartbeat_interval_ms == 5000
        [topic] = response.assignment.topic_partitions
        assert (topic.topic_id, list(topic.partitions)) == (TOPIC_ID, [0, 1])
    elif name == "no new assignment":
        assert response.assignment is None
    else:
        assert (response.error_code, response.error_message, response.member_id) == (110, "fenced", None)


def test_a_truncated_answer_is_refused() -> None:
    with pytest.raises(Exception):
        decode_body(Response, bytes.fromhex(JAVA["assignment"])[:-5], 1)


def test_member_ids_are_java_shaped_and_come_from_the_injected_random_source() -> None:
    first, again = new_member_id(random.Random(7)), new_member_id(random.Random(7))
    assert first == again and len(first) == 22
    raw = uuid.UUID(bytes=__import__("base64").urlsafe_b64decode(first + "=="))
    assert raw.version == 4
    assert topic_id_text(TOPIC_ID) == "ABEiM0RVZneImaq7zN3u_w"
