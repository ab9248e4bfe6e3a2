"""Wire compatibility of the consumer protocol and the sticky assignors' user data with
kafka-python's (and so Java's) encoders and decoders."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor as KafkaCooperativeSticky
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafka.structs import TopicPartition as TP

from groupclient.assignors import ClusterView, CooperativeStickyAssignor, RebalanceProtocol, StickyAssignor
from groupclient.assignors.base import validate_assignment
from groupclient.assignors.sticky import decode_sticky_user_data, encode_sticky_user_data
from groupclient.protocol.consumer_protocol import (
    SUBSCRIPTION_VERSION, Assignment, Subscription, decode_assignment, decode_subscription, encode_assignment,
    encode_subscription,
)

SETTINGS = settings(deadline=None, max_examples=60, database=None)

topic_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz._-0123456789", min_size=1, max_size=12)
partition_lists = st.lists(st.tuples(topic_names, st.integers(0, 2**31 - 1)), max_size=12, unique=True).map(
    lambda pairs: [TP(t, p) for t, p in pairs])
user_datas = st.one_of(st.none(), st.binary(max_size=40))
generations = st.integers(-1, 2**31 - 1)
racks = st.one_of(st.none(), topic_names)


def flat(topic_partitions: object) -> list[TP]:
    """kafka-python's [TopicPartition(topic, partitions)] as sorted TopicPartitions."""
    return sorted(TP(t.topic, p) for t in (topic_partitions or []) for p in t.partitions)  # type: ignore[attr-defined]


def by_topic(cls: type, partitions: list[TP]) -> list[object]:
    grouped: dict[str, list[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return [cls.TopicPartition(topic=t, partitions=sorted(p)) for t, p in sorted(grouped.items())]  # type: ignore[attr-defined]


# -- subscriptions -------------------------------------------------------------------------------
@SETTINGS
@given(st.integers(0, 3), st.lists(topic_names, min_size=1, max_size=5, unique=True), user_datas, partition_lists,
       generations, racks)
def test_our_subscriptions_decode_with_kafka_python(version: int, topics: list[str], user_data: bytes | None,
                                                    owned: list[TP], generation: int, rack: str | None) -> None:
    data = encode_subscription(Subscription(topics, user_data, owned, generation, rack_id=rack), version)
    theirs = ConsumerProtocolSubscription.decode(data)
    assert theirs.version == version
    assert list(theirs.topics) == sorted(topics)
    assert theirs.user_data == user_data
    assert flat(theirs.owned_partitions) == (sorted(owned) if version >= 1 else [])
    assert theirs.generation_id == (generation if version >= 2 else -1)
    assert theirs.rack_id == (rack if version >= 3 else None)


@SETTINGS
@given(st.integers(0, 3), st.lists(topic_names, min_size=1, max_size=5, unique=True), user_datas, partition_lists,
       generations, racks)
def test_kafka_python_subscriptions_decode_with_ours(version: int, topics: list[str], user_data: bytes | None,
                                                     owned: list[TP], generation: int, rack: str | None) -> None:
    data = ConsumerProtocolSubscription(
        version=version, topics=topics, user_data=user_data,
        owned_partitions=by_topic(ConsumerProtocolSubscription, owned), generation_id=generation, rack_id=rack,
    ).encode()
    ours = decode_subscription(data)
    assert ours.topics == topics
    assert ours.user_data == user_data and (ours.user_data is None or type(ours.user_data) is bytes)
    assert sorted(ours.owned_partitions) == (sorted(owned) if version >= 1 else [])
    assert ours.generation_id == (generation if version >= 2 else -1)
    assert ours.rack_id == (rack if version >= 3 and rack else None)
    assert ours.group_instance_id is None  # not on the wire: the leader fills it in from JoinGroup


def test_we_write_subscription_v3_and_read_newer_versions_by_their_known_fields() -> None:
    assert SUBSCRIPTION_VERSION == 3
    sub = Subscription(["t"], b"ud", [TP("t", 2)], 9, rack_id="rack-a")
    data = encode_subscription(sub)
    assert struct.unpack_from(">h", data)[0] == 3
    newer = struct.pack(">h", 7) + data[2:] + b"\x00\x00\x00\x2a"  # a future version that appends a field
    assert decode_subscription(newer) == sub


# -- assignments ---------------------------------------------------------------------------------
@SETTINGS
@given(st.integers(0, 3), partition_lists, user_datas)
def test_assignments_decode_both_ways(version: int, partitions: list[TP], user_data: bytes | None) -> None:
    ours = encode_assignment(Assignment(partitions, user_data), version)
    theirs = ConsumerProtocolAssignment.decode(ours)
    assert theirs.version == version
    assert flat(theirs.assigned_partitions) == sorted(partitions) and theirs.user_data == user_data
    data = ConsumerProtocolAssignment(
        version=version, assigned_partitions=by_topic(ConsumerProtocolAssignment, partitions), user_data=user_data,
    ).encode()
    assert data == ours  # the same bytes: both group by topic, sorted
    decoded = decode_assignment(data)
    assert sorted(decoded.partitions) == sorted(partitions) and decoded.user_data == user_data


def test_empty_assignment_bytes_are_an_empty_assignment() -> None:
    """A leader sends empty bytes to members it gives nothing (kafka-python and Java do too)."""
    assert decode_assignment(b"") == Assignment([], None)
    assert decode_assignment(encode_assignment(Assignment([]))) == Assignment([], None)


# -- sticky user data ----------------------------------------------------------------------------
@SETTINGS
@given(partition_lists, generations)
def test_our_sticky_user_data_is_kafkas_v1_layout(partitions: list[TP], generation: int) -> None:
    """Java writes StickyAssignorUserData without a version in front (its StickyAssignor tries v1,
    then v0); kafka-python's schema reads our bytes as v1 without a header, and writes the same
    bytes for the same content."""
    ours = encode_sticky_user_data(partitions, generation)
    theirs = StickyAssignorUserData.decode(ours, version=1, header=False)
    assert flat(theirs.previous_assignment) == sorted(partitions) and theirs.generation == generation
    same = StickyAssignorUserData(version=1, previous_assignment=by_topic(StickyAssignorUserData, partitions),
                                  generation=generation)
    assert same.encode(header=False) == ours
    decoded, decoded_generation = decode_sticky_user_data(ours)
    assert sorted(decoded) == sorted(partitions) and decoded_generation == generation


@SETTINGS
@given(partition_lists, generations, st.booleans())
def test_kafka_python_sticky_user_data_decodes_with_ours(partitions: list[TP], generation: int,
                                                         with_header: bool) -> None:
    """kafka-python 3 writes its sticky user data with an int16 version in front; Java (and
    kafka-python's schema with header=False) without.  We read both."""
    theirs = StickyAssignorUserData(version=1, previous_assignment=by_topic(StickyAssignorUserData, partitions),
                                    generation=generation).encode(header=with_header)
    decoded, decoded_generation = decode_sticky_user_data(theirs)
    assert sorted(decoded) == sorted(partitions) and decoded_generation == generation


def test_sticky_user_data_v0_has_no_generation() -> None:
    v0 = StickyAssignorUserData(version=0, previous_assignment=by_topic(StickyAssignorUserData, [TP("t", 3)]))
    assert decode_sticky_user_data(v0.encode(header=False)) == ([TP("t", 3)], -1)


@pytest.mark.parametrize("garbage", [
    b"", b"\x00", b"\x00\x01", b"\x00\x00\x00\x02",
    bytes.fromhex("00000001 0005 746f70"),  # a topic name cut short
    bytes.fromhex("00000001 0001 74 ffffffff"),  # a negative partition count
    bytes.fromhex("7fffffff 0000 00000000 fffa"),  # a negative name length that would re-read the same bytes
])
def test_unreadable_sticky_user_data_is_a_value_error(garbage: bytes) -> None:
    with pytest.raises(ValueError, match="not sticky assignor user data"):
        decode_sticky_user_data(garbage)


def test_a_kafka_python_sticky_member_keeps_its_partitions_when_we_lead() -> None:
    """kafka-python's StickyPartitionAssignor sends its previous assignment; our leader reads it."""
    theirs = StickyPartitionAssignor._metadata(["t"], [TP("t", 2), TP("t", 3)], 6).encode()
    members = {"a-kafka-python": decode_subscription(theirs), "b-groupclient": Subscription(["t"])}
    result = StickyAssignor().assign(ClusterView({"t": 4}), members)
    assert sorted(result["a-kafka-python"].partitions) == [TP("t", 2), TP("t", 3)]


@pytest.mark.xfail(strict=True, reason="kafka-python 3.0 reads sticky user data only with the int16 version in "
                                       "front, which Java's StickyAssignor (and ours) does not write")
def test_a_kafka_python_leader_reads_our_sticky_user_data() -> None:
    ours = StickyAssignor()
    ours.on_assignment(Assignment([TP("t", 1)]), 4)
    data = encode_subscription(Subscription(["t"], ours.subscription_user_data({"t"})))
    parsed = StickyPartitionAssignor.parse_member_metadata(ConsumerProtocolSubscription.decode(data))
    assert parsed.partitions == [TP("t", 1)] and parsed.generation == 4


# -- cooperative-sticky generations --------------------------------------------------------------
def java_style(owned: list[TP], generation: int) -> Subscription:
    """A Java cooperative-sticky member's subscription as a v1 leader sees it: owned partitions,
    and the generation as 4 bytes of user data (there is no generation field before v2)."""
    data = ConsumerProtocolSubscription(
        version=1, topics=["t"], user_data=struct.pack(">i", generation),
        owned_partitions=by_topic(ConsumerProtocolSubscription, owned)).encode()
    return decode_subscription(data)


@pytest.mark.parametrize("newer", ["a", "b"])
def test_cooperative_sticky_reads_javas_four_byte_generation(newer: str) -> None:
    members = {m: java_style([TP("t", 0)], 8 if m == newer else 5) for m in ("a", "b")}
    assert all(s.generation_id == -1 for s in members.values())
    assignor = CooperativeStickyAssignor()
    result = assignor.assign(ClusterView({"t": 2}), members)
    assert result[newer].partitions == [TP("t", 0)]  # the newer claim wins
    validate_assignment(assignor, ClusterView({"t": 2}), members, result, RebalanceProtocol.COOPERATIVE)
    # the same claims without the generation are a tie: nobody keeps t-0 by claim, and given
    # afresh it goes to a, the first member
    tie = {m: java_style([TP("t", 0)], -1) for m in ("a", "b")}
    assert TP("t", 0) not in assignor.assign(ClusterView({"t": 2}), tie)["b"].partitions


def test_our_cooperative_sticky_sends_the_generation_as_java_does() -> None:
    assignor = CooperativeStickyAssignor()
    assert assignor.subscription_user_data({"t"}) == struct.pack(">i", -1)
    assignor.on_assignment(Assignment([TP("t", 0)]), 12)
    assert assignor.subscription_user_data({"t"}) == struct.pack(">i", 12)


def test_a_kafka_python_cooperative_member_keeps_what_it_owns_when_we_lead() -> None:
    theirs = KafkaCooperativeSticky()
    theirs.on_assignment(ConsumerProtocolAssignment.decode(encode_assignment(Assignment([TP("t", 3), TP("t", 1)]))), 4)
    members = {"a-kafka-python": decode_subscription(theirs.metadata({"t"}).encode()), "b-groupclient": Subscription(["t"])}
    assert sorted(members["a-kafka-python"].owned_partitions) == [TP("t", 1), TP("t", 3)]
    result = CooperativeStickyAssignor().assign(ClusterView({"t": 4}), members)
    assert sorted(result["a-kafka-python"].partitions) == [TP("t", 1), TP("t", 3)]
    assert sorted(result["b-groupclient"].partitions) == [TP("t", 0), TP("t", 2)]
