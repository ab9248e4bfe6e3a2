"""Topics that grow, go and come back under consumer groups: CreatePartitions (API 37) and
DeleteTopics (API 20) on the embedded coordinator and on Apache Kafka 4.4 with the same test
(``kip848_bootstrap`` runs each on both, with the same group settings), and what the groups'
members and committed offsets do when a topic changes under them.

The raw answers asserted here were recorded from Kafka 4.1.1 (tests/kafka/broker.py), and each
test's docstring says what Kafka answers.  Kafka applies a topic change to its metadata and to its
group coordinator a moment after it answers: the tests wait on the outcome (Metadata listing the
change, a member's assignment, an OffsetFetch answer), each within a deadline, never for a fixed
time.  The members are GroupConsumers polled in turn from the test thread: only the one inside
``poll()`` can change what it owns, so checking every member after every poll, and the others'
ownership whenever a listener hears of partitions assigned, sees every instant.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient, NewPartitions
from kafka.protocol.admin.topics import (
    CreatePartitionsRequest, CreatePartitionsResponse, DeleteTopicsRequest, DeleteTopicsResponse,
)
from kafka.protocol.consumer.group import (
    OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse,
)
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from groupclient import GroupConsumer, TopicPartition
from groupclient.errors import ErrorCode as E
from tests.integration import external
from tests.integration.kip848_wire import Coordinator, coordinator_of, topic_id_of, unique
from tests.integration.peers import wait_until

pytestmark = pytest.mark.integration

DEADLINE_S = 60  # for each wait on a cluster's or a group's outcome
NO_SUCH_PARTITION = "This server does not host this topic-partition."  # Kafka's UNKNOWN_TOPIC_OR_PARTITION
NO_SUCH_TOPIC_ID = "This server does not host this topic ID."  # Kafka's UNKNOWN_TOPIC_ID


# -- raw requests -------------------------------------------------------------------------------------


@contextmanager
def connection(bootstrap: str) -> Iterator[Coordinator]:
    wire = Coordinator(bootstrap)
    try:
        yield wire
    finally:
        wire.close()


def create_partitions(wire: Coordinator, topic: str, count: int, validate_only: bool = False) -> tuple[int, str | None]:
    """CreatePartitions v3 of one topic to ``count`` partitions: its error code and message."""
    answer = wire.call(CreatePartitionsRequest(
        version=3, topics=[CreatePartitionsRequest.CreatePartitionsTopic(name=topic, count=count, assignments=None)],
        timeout_ms=10_000, validate_only=validate_only), CreatePartitionsResponse)
    [result] = answer.results
    assert result.name == topic, result
    return result.error_code, result.error_message


def delete_topic(wire: Coordinator, name: str | None = None,
                 topic_id: uuid.UUID | None = None) -> tuple[str | None, uuid.UUID | None, int, str | None]:
    """DeleteTopics v6 of one topic, by name or by id (or both): the answer's name, topic id (None
    for the zero id), error code and message."""
    answer = wire.call(DeleteTopicsRequest(version=6, timeout_ms=10_000, topics=[
        DeleteTopicsRequest.DeleteTopicState(name=name, topic_id=topic_id or uuid.UUID(int=0))]), DeleteTopicsResponse)
    [result] = answer.responses
    topic_id = result.topic_id if result.topic_id is not None and result.topic_id.int else None
    return result.name, topic_id, result.error_code, result.error_message


def metadata(wire: Coordinator, topic: str) -> tuple[int, uuid.UUID | None, int]:
    """Metadata v12 of one topic by name, not creating it: error code, topic id, partition count."""
    answer = wire.call(MetadataRequest(
        version=12, topics=[MetadataRequest.MetadataRequestTopic(topic_id=None, name=topic)],
        allow_auto_topic_creation=False, include_topic_authorized_operations=False), MetadataResponse)
    [found] = answer.topics
    topic_id = found.topic_id if found.topic_id is not None and found.topic_id.int else None
    return found.error_code, topic_id, len(found.partitions)


def topic_names(wire: Coordinator) -> set[str]:
    """Every topic Metadata v12 lists (topics null: all of them)."""
    answer = wire.call(MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False,
                                       include_topic_authorized_operations=False), MetadataResponse)
    return {t.name for t in answer.topics}


def gone_from_metadata(wire: Coordinator, topic: str) -> bool:
    return metadata(wire, topic) == (E.UNKNOWN_TOPIC_OR_PARTITION, None, 0) and topic not in topic_names(wire)


def commit_offsets(wire: Coordinator, group: str, offsets: dict[str, dict[int, int]]) -> dict[str, dict[int, int]]:
    """OffsetCommit v9 as an admin commits (no member: member id "", generation -1): each
    partition's error code."""
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    P = T.OffsetCommitRequestPartition
    answer = wire.call(OffsetCommitRequest(
        version=9, group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        topics=[T(name=topic, partitions=[
            P(partition_index=p, committed_offset=o, committed_leader_epoch=-1, committed_metadata="")
            for p, o in sorted(by_partition.items())]) for topic, by_partition in offsets.items()]),
        OffsetCommitResponse)
    return {t.name: {p.partition_index: p.error_code for p in t.partitions} for t in answer.topics}


def fetch_offsets(wire: Coordinator, group: str, topics: dict[str, int] | None) -> dict[str, dict[int, int]]:
    """OffsetFetch v9 without a member (null, epoch -1) of ``topics`` (name: partition count), or
    of every topic (None): each partition's committed offset, after checking no error."""
    G = OffsetFetchRequest.OffsetFetchRequestGroup
    wanted = None if topics is None else [
        G.OffsetFetchRequestTopics(name=topic, partition_indexes=list(range(count))) for topic, count in topics.items()]
    answer = wire.call(OffsetFetchRequest(version=9, require_stable=False, groups=[G(
        group_id=group, member_id=None, member_epoch=-1, topics=wanted)]), OffsetFetchResponse)
    [found] = answer.groups
    assert found.error_code == E.NONE, found
    assert all(p.error_code == E.NONE for t in found.topics for p in t.partitions), found
    return {t.name: {p.partition_index: p.committed_offset for p in t.partitions} for t in found.topics}


@contextmanager
def admin_of(bootstrap: str) -> Iterator[KafkaAdminClient]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        yield admin
    finally:
        admin.close()


def within(what: str, predicate: Callable[[], bool], timeout_s: float = DEADLINE_S) -> None:
    assert wait_until(predicate, timeout_s), f"not within {timeout_s} s: {what}"


# -- a: the answers ---------------------------------------------------------------------------------------


def test_create_partitions_answers_as_kafka_does(kip848_bootstrap: str) -> None:
    """Kafka 4.1.1, CreatePartitions v3 of a 4-partition topic: to 4 → INVALID_PARTITIONS "Topic
    already has 4 partition(s)."; to 2 → INVALID_PARTITIONS "The topic <t> currently has 4
    partition(s); 2 would not be an increase."; an unknown topic → UNKNOWN_TOPIC_OR_PARTITION with
    a null message; to 6 with validate_only → no error (null message) and nothing changes: Metadata
    still lists 4, and a real growth to 5 (no error) is then an increase; to 5 again → "Topic
    already has 5 partition(s)."  The topic keeps its id."""
    bootstrap = kip848_bootstrap
    topic = external.new_topic(bootstrap, 4)
    topic_id = topic_id_of(bootstrap, topic, 4)
    missing = unique("missing")
    with connection(bootstrap) as wire:
        answers = {"same": create_partitions(wire, topic, 4), "smaller": create_partitions(wire, topic, 2),
                   "unknown": create_partitions(wire, missing, 6),
                   "validate only": create_partitions(wire, topic, 6, validate_only=True)}
        assert answers == {
            "same": (E.INVALID_PARTITIONS, "Topic already has 4 partition(s)."),
            "smaller": (E.INVALID_PARTITIONS, f"The topic {topic} currently has 4 partition(s); 2 would not be an "
                                              "increase."),
            "unknown": (E.UNKNOWN_TOPIC_OR_PARTITION, None),
            "validate only": (E.NONE, None)}, answers
        assert metadata(wire, topic) == (E.NONE, topic_id, 4)
        assert create_partitions(wire, topic, 5) == (E.NONE, None)
        within(f"{topic} listed with 5 partitions", lambda: metadata(wire, topic) == (E.NONE, topic_id, 5))
        assert create_partitions(wire, topic, 5) == (E.INVALID_PARTITIONS, "Topic already has 5 partition(s).")
        assert metadata(wire, missing)[0] == E.UNKNOWN_TOPIC_OR_PARTITION


def test_delete_topics_by_name_and_by_id_answers_as_kafka_does(kip848_bootstrap: str) -> None:
    """Kafka 4.1.1, DeleteTopics v6.  A name and an id in one entry → INVALID_REQUEST "You may not
    specify both topic name and topic id." (name and id echoed), and the topic stays.  An unknown
    name → UNKNOWN_TOPIC_OR_PARTITION, the name echoed, zero id, "This server does not host this
    topic-partition."; an unknown id → UNKNOWN_TOPIC_ID, null name, the id echoed, "This server
    does not host this topic ID.".  By name → no error, null message, the name and the topic's id;
    by id → the same (the name filled in).  Then Metadata by name answers UNKNOWN_TOPIC_OR_PARTITION
    (no id, no partitions) and Metadata of all topics lists neither; the deleted id answers
    UNKNOWN_TOPIC_ID and the deleted name UNKNOWN_TOPIC_OR_PARTITION, as unknown ones.  The name
    created again is a new topic with a new id."""
    bootstrap = kip848_bootstrap
    both, by_name, by_id = (external.new_topic(bootstrap, n) for n in (1, 2, 3))
    both_id, name_id, id_id = (topic_id_of(bootstrap, t, n) for t, n in ((both, 1), (by_name, 2), (by_id, 3)))
    missing, stranger = unique("missing"), uuid.uuid4()
    with connection(bootstrap) as wire:
        answers = {"name and id": delete_topic(wire, both, both_id), "unknown name": delete_topic(wire, missing),
                   "unknown id": delete_topic(wire, topic_id=stranger), "by name": delete_topic(wire, by_name),
                   "by id": delete_topic(wire, topic_id=id_id)}
        assert answers == {
            "name and id": (both, both_id, E.INVALID_REQUEST, "You may not specify both topic name and topic id."),
            "unknown name": (missing, None, E.UNKNOWN_TOPIC_OR_PARTITION, NO_SUCH_PARTITION),
            "unknown id": (None, stranger, E.UNKNOWN_TOPIC_ID, NO_SUCH_TOPIC_ID),
            "by name": (by_name, name_id, E.NONE, None),
            "by id": (by_id, id_id, E.NONE, None)}, answers
        for topic in (by_name, by_id):
            within(f"{topic} gone from Metadata", lambda: gone_from_metadata(wire, topic))  # noqa: B023
        assert metadata(wire, both) == (E.NONE, both_id, 1)
        assert delete_topic(wire, topic_id=name_id) == (None, name_id, E.UNKNOWN_TOPIC_ID, NO_SUCH_TOPIC_ID)
        assert delete_topic(wire, by_name) == (by_name, None, E.UNKNOWN_TOPIC_OR_PARTITION, NO_SUCH_PARTITION)
        external.create_topic(bootstrap, by_name, 2)
        again = topic_id_of(bootstrap, by_name, 2)
        assert again not in (name_id, id_id)
        assert by_name in topic_names(wire)


# -- members that watch each other -----------------------------------------------------------------------


def partitions_of(topic: str, count: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(count)}


def produced(bootstrap: str, topic: str, count: int, partitions: int) -> set[tuple[str, int, int]]:
    """``count`` records round-robin over the topic's first ``partitions``: (topic, partition, offset) of each."""
    return {(topic, p, o) for p, o in external.produce(bootstrap, topic, count, partitions, Counter())}


class Group:
    """GroupConsumers of one group polled in turn from the test thread, each with a listener that
    records its calls and, when partitions are assigned to it, whether another member owns any of
    them at that instant.  ``overlaps`` lists every partition seen owned by two members at once."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.bootstrap, self.group = bootstrap, group
        self.members: dict[str, GroupConsumer] = {}
        self.calls: list[tuple[str, str, frozenset[TopicPartition]]] = []  # (member, method, partitions)
        self.overlaps: list[tuple[str, str, frozenset[TopicPartition]]] = []
        self.consumed: set[tuple[str, int, int]] = set()  # (topic, partition, offset)

    def join(self, name: str, topics: list[str], **settings: Any) -> GroupConsumer:
        group = self

        class Listener:
            def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
                group.calls.append((name, "assigned", frozenset(assigned)))
                group.check(name, assigned)

            def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
                group.calls.append((name, "revoked", frozenset(revoked)))

            def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
                group.calls.append((name, "lost", frozenset(lost)))

        consumer = GroupConsumer(bootstrap_servers=self.bootstrap, group_id=self.group, client_id=name,
                                 auto_offset_reset="earliest", **settings)
        self.members[name] = consumer
        consumer.subscribe(topics, listener=Listener())
        return consumer

    def owned(self) -> dict[str, set[TopicPartition]]:
        return {name: c.assignment() for name, c in self.members.items()}

    def check(self, name: str, partitions: set[TopicPartition]) -> None:
        for other, owned in self.owned().items():
            if other != name and owned & partitions:
                self.overlaps.append((name, other, frozenset(owned & partitions)))

    def split(self, partitions: set[TopicPartition]) -> bool:
        """Every member owns some of ``partitions``, and each of them is owned by exactly one."""
        owned = list(self.owned().values())
        return all(owned) and sum(len(o) for o in owned) == len(partitions) and set().union(*owned) == partitions

    def poll_until(self, what: str, predicate: Callable[[], bool], invariant: Callable[[], Any] = lambda: None,
                   timeout_s: float = DEADLINE_S) -> None:
        """Poll every member in turn, checking ownership after each poll and ``invariant`` (which
        asserts) after each round, until ``predicate`` holds."""
        deadline = time.monotonic() + timeout_s
        while True:
            for name, consumer in self.members.items():
                for tp, records in consumer.poll(timeout_ms=100).items():
                    self.consumed |= {(tp.topic, tp.partition, r.offset) for r in records}
                self.check(name, consumer.assignment())
            assert not self.overlaps, self.overlaps
            invariant()
            if predicate():
                return
            assert time.monotonic() < deadline, f"not within {timeout_s} s: {what}; owned {self.owned()}, " \
                                                f"calls {self.calls}"

    def close(self) -> None:
        for consumer in self.members.values():
            consumer.close()


@contextmanager
def group_of(bootstrap: str, prefix: str) -> Iterator[Group]:
    group = Group(bootstrap, unique(prefix))
    try:
        yield group
    finally:
        group.close()


# -- b, d: a topic grows under a group -----------------------------------------------------------------------


def grow_under_a_group(bootstrap: str, **settings: Any) -> list[tuple[str, str, frozenset[int]]]:
    """Two members share a 4-partition topic; it grows to 6; both end up sharing all six, no
    partition owned by two at once, and the records of every partition (the new ones too) are
    consumed.  The listener calls that named partitions from the growth on: (member, method,
    partitions)."""
    topic = external.new_topic(bootstrap, 4)
    topic_id = topic_id_of(bootstrap, topic, 4)
    expected = produced(bootstrap, topic, 40, 4)
    with group_of(bootstrap, "grow") as group:
        for name in ("a", "b"):
            group.join(name, [topic], **settings)
        group.poll_until("a and b share the 4 partitions and consumed their records",
                         lambda: group.split(partitions_of(topic, 4)) and expected <= group.consumed)
        heard = len(group.calls)
        with admin_of(bootstrap) as admin:
            admin.create_partitions({topic: NewPartitions(6)})
        assert topic_id_of(bootstrap, topic, 6) == topic_id
        expected |= produced(bootstrap, topic, 60, 6)
        assert {(p, o) for _, p, o in expected} >= {(4, 0), (5, 0)}
        group.poll_until("a and b share the 6 partitions and consumed every record",
                         lambda: group.split(partitions_of(topic, 6)) and expected <= group.consumed)
        return [(name, method, frozenset(tp.partition for tp in ps)) for name, method, ps in group.calls[heard:] if ps]


def test_a_consumer_group_takes_up_the_partitions_its_topic_grows(kip848_bootstrap: str) -> None:
    """Kafka 4.1.1, two consumer-protocol members (group.protocol "consumer", everything else as
    the client's defaults) owning two partitions each: after the topic grew from 4 partitions to 6,
    the members' next heartbeats get new targets, each member one new partition and nothing taken
    away (the uniform assignor is sticky: no revocation), no partition owned by both at any
    instant, and the records produced to partitions 4 and 5 are consumed from their start."""
    calls = grow_under_a_group(kip848_bootstrap, group_protocol="consumer")
    assert sorted(method for _, method, _ in calls) == ["assigned", "assigned"], calls
    assert {name for name, _, _ in calls} == {"a", "b"} and {ps for _, _, ps in calls} == {
        frozenset({4}), frozenset({5})}, calls


def test_a_classic_group_takes_up_the_partitions_its_topic_grows(kip848_bootstrap: str) -> None:
    """Kafka 4.1.1, two classic members (the default eager assignors) that refresh their metadata
    every second: the leader sees six partitions and rejoins, the group rebalances (each member
    revokes its two, then is assigned three), the six end up split between them, no partition
    owned by both at any instant, and the records produced to partitions 4 and 5 are consumed from
    their start."""
    calls = grow_under_a_group(kip848_bootstrap, metadata_max_age_ms=1000)
    assert calls and all(method in ("revoked", "assigned") for _, method, _ in calls), calls


# -- c: a topic goes and comes back under a member ----------------------------------------------------------


def test_a_member_gives_up_a_deleted_topic_keeps_the_other_and_takes_the_new_one(
        kip848_bootstrap: str) -> None:
    """Kafka 4.1.1, one consumer-protocol member subscribed to ``keep`` (2 partitions) and ``gone``
    (3), having consumed and committed 5 records of each of gone's partitions.  ``gone`` deleted:
    the member's next heartbeats take gone's partitions away (one listener call, revoked, naming
    exactly them) while it keeps keep's throughout (no call names them) and goes on consuming
    them.  ``gone`` created again (a new topic id): the member gets its three partitions and
    consumes the records produced to it from offset 0, the old topic's commits being gone.  The
    member does not create topics (allow_auto_create_topics=False: its Metadata requests would
    otherwise bring a deleted topic straight back, Kafka and the embedded coordinator both
    auto-creating topics here)."""
    bootstrap = kip848_bootstrap
    keep, gone = external.new_topic(bootstrap, 2), external.new_topic(bootstrap, 3)
    topic_id_of(bootstrap, keep, 2)
    gone_id = topic_id_of(bootstrap, gone, 3)
    keeps, goes = partitions_of(keep, 2), partitions_of(gone, 3)
    expected = produced(bootstrap, keep, 10, 2) | produced(bootstrap, gone, 15, 3)
    with group_of(bootstrap, "deleted") as group, closing(coordinator_of(bootstrap, group.group)) as wire:
        member = group.join("m", [keep, gone], group_protocol="consumer", enable_auto_commit=False,
                            allow_auto_create_topics=False)
        group.poll_until("m owns both topics and consumed their records",
                         lambda: member.assignment() == keeps | goes and expected <= group.consumed)
        member.commit()
        assert fetch_offsets(wire, group.group, {gone: 3}) == {gone: {0: 5, 1: 5, 2: 5}}
        heard = len(group.calls)

        def keeps_keep() -> None:
            assert keeps <= member.assignment(), (member.assignment(), group.calls[heard:])

        with admin_of(bootstrap) as admin:
            admin.delete_topics([gone])
        group.poll_until("m gives gone's partitions up", lambda: member.assignment() == keeps, keeps_keep)
        after_delete = [(method, ps) for _, method, ps in group.calls[heard:] if ps]
        expected = produced(bootstrap, keep, 4, 2)
        group.poll_until("m consumes keep's new records", lambda: expected <= group.consumed, keeps_keep)
        with connection(bootstrap) as admin_wire:
            within(f"{gone} gone from Metadata", lambda: gone_from_metadata(admin_wire, gone))
        heard = len(group.calls)
        external.create_topic(bootstrap, gone, 3)
        assert topic_id_of(bootstrap, gone, 3) != gone_id
        group.consumed.clear()
        expected = produced(bootstrap, gone, 6, 3)
        assert {o for _, _, o in expected} == {0, 1}
        group.poll_until("m owns the new gone and consumed it from its start",
                         lambda: member.assignment() == keeps | goes and expected <= group.consumed, keeps_keep)
        after_create = [(method, ps) for _, method, ps in group.calls[heard:] if ps]
    assert after_delete == [("revoked", frozenset(goes))], after_delete
    assert after_create == [("assigned", frozenset(goes))], after_create


# -- e: committed offsets of a deleted topic ---------------------------------------------------------------


def test_the_committed_offsets_of_a_deleted_topic_are_gone(kip848_bootstrap: str) -> None:
    """Kafka 4.1.1, a group without members with offsets committed (OffsetCommit v9 as an admin)
    for ``gone`` and ``kept``, two partitions each: once ``gone`` is deleted, OffsetFetch v9 of
    both answers -1 for gone's partitions (no error) and kept's offsets as committed; OffsetFetch
    of all the group's topics lists only kept.  ``gone`` created again does not bring them back."""
    bootstrap = kip848_bootstrap
    gone, kept = external.new_topic(bootstrap, 2), external.new_topic(bootstrap, 2)
    for topic in (gone, kept):
        topic_id_of(bootstrap, topic, 2)
    group = unique("offsets")
    both = {gone: 2, kept: 2}
    wire = coordinator_of(bootstrap, group)
    try:
        committed = {gone: {0: 7, 1: 9}, kept: {0: 3, 1: 4}}
        assert commit_offsets(wire, group, committed) == {gone: {0: E.NONE, 1: E.NONE}, kept: {0: E.NONE, 1: E.NONE}}
        assert fetch_offsets(wire, group, both) == committed
        with admin_of(bootstrap) as admin:
            admin.delete_topics([gone])
        dropped = {gone: {0: -1, 1: -1}, kept: committed[kept]}
        answers: list[Any] = []

        def forgotten() -> bool:
            answers[:] = [fetch_offsets(wire, group, both)]
            return bool(answers[0] == dropped)

        assert wait_until(forgotten, DEADLINE_S), f"the offsets of {gone} not dropped within {DEADLINE_S} s: {answers}"
        assert fetch_offsets(wire, group, None) == {kept: committed[kept]}
        with connection(bootstrap) as admin_wire:
            within(f"{gone} gone from Metadata", lambda: gone_from_metadata(admin_wire, gone))
        external.create_topic(bootstrap, gone, 2)
        topic_id_of(bootstrap, gone, 2)
        assert fetch_offsets(wire, group, both) == dropped
    finally:
        wire.close()


def test_metadata_by_topic_id_answers_as_kafka_does(kip848_bootstrap: str) -> None:
    """Kafka 4.1.1, Metadata v12 asked by topic id (as KIP-848 clients ask, to name the topics of
    their assignment): a known id by its name with its partitions; an unknown id UNKNOWN_TOPIC_ID
    with a null name; an entry with neither a name nor an id is left out; nothing is created."""
    bootstrap = kip848_bootstrap
    topic = external.new_topic(bootstrap, 2)
    topic_id, stranger = topic_id_of(bootstrap, topic, 2), uuid.uuid4()
    T = MetadataRequest.MetadataRequestTopic
    with connection(bootstrap) as wire:
        asked = [T(topic_id=topic_id, name=None), T(topic_id=None, name=None), T(topic_id=stranger, name=None)]
        answer = wire.call(MetadataRequest(version=12, topics=asked, allow_auto_topic_creation=True,
                                           include_topic_authorized_operations=False), MetadataResponse)
    seen = sorted(((t.error_code, t.name, t.topic_id, len(t.partitions)) for t in answer.topics),
                  key=lambda row: row[0])
    assert seen == [(E.NONE, topic, topic_id, 2), (E.UNKNOWN_TOPIC_ID, None, stranger, 0)], seen
