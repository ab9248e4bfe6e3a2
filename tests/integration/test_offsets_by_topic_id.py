"""OffsetCommit and OffsetFetch v10, which name topics by id (advertised from Kafka 4.2), on Apache
Kafka 4.4 and the embedded coordinator side by side, with the same raw requests and the same
expected answers (as test_consumer_protocol_conformance.py, whose machinery this uses); then
groupclient's consumer on both, which sends v10 when it knows every topic's id.

Every answer asserted here was recorded from Kafka 4.4.0: a topic id no topic has gets
UNKNOWN_TOPIC_ID on each of its partitions and the rest of the commit is taken; a partition past
the topic's end gets UNKNOWN_TOPIC_OR_PARTITION; an answer names topics by id only (its name is
empty); a fetch of all the group's offsets names each topic by its id, and one of an unknown id
answers -1 and UNKNOWN_TOPIC_ID per partition, after the known topics.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse

from groupclient import GroupConsumer, TopicPartition
from groupclient.network.connection import BrokerConnection
from groupclient.structs import OffsetAndMetadata
from tests.integration import external
from tests.integration.kip848_wire import ALL, E, Scene, opened_scene, unique

pytestmark = pytest.mark.integration

OFFSET_COMMIT, OFFSET_FETCH = 8, 9
NO_TOPIC = uuid.UUID("0f0e0d0c-0b0a-4908-8706-050403020100")  # no topic has this id


@pytest.fixture
def scene(kip848_bootstrap: str) -> Iterator[Scene]:
    with opened_scene(kip848_bootstrap, unique("byid")) as scene:
        yield scene


def commit_by_id(scene: Scene, topics: dict[uuid.UUID, list[int]], offset: int = 5) -> dict[tuple[uuid.UUID, int], int]:
    """A "simple" OffsetCommit v10 (no member, as an admin's): each partition's error code."""
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    P = T.OffsetCommitRequestPartition
    answer = scene.wire.call(OffsetCommitRequest(
        version=10, group_id=scene.group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        topics=[T(topic_id=topic_id, partitions=[
            P(partition_index=p, committed_offset=offset, committed_leader_epoch=-1, committed_metadata="m")
            for p in partitions]) for topic_id, partitions in topics.items()]), OffsetCommitResponse)
    return {(t.topic_id, p.partition_index): p.error_code for t in answer.topics for p in t.partitions}


def fetch_by_id(scene: Scene, topics: dict[uuid.UUID, list[int]] | None) -> tuple[int, list[Any]]:
    """OffsetFetch v10 (no member): the group's error code and its answer's topics, in order, as
    (topic id, name, [(partition, offset, metadata, error code)])."""
    G = OffsetFetchRequest.OffsetFetchRequestGroup
    wanted = None if topics is None else [
        G.OffsetFetchRequestTopics(topic_id=topic_id, partition_indexes=partitions) for topic_id, partitions in topics.items()]
    answer = scene.wire.call(OffsetFetchRequest(version=10, require_stable=False, groups=[G(
        group_id=scene.group, member_id=None, member_epoch=-1, topics=wanted)]), OffsetFetchResponse)
    [group] = answer.groups
    return group.error_code, [
        (t.topic_id, t.name, [(p.partition_index, p.committed_offset, p.metadata, p.error_code) for p in t.partitions])
        for t in group.topics]


def test_both_advertise_v10(scene: Scene) -> None:
    """Kafka 4.4.0 advertises OffsetCommit 2–10 and OffsetFetch 1–10."""
    answer = scene.wire.call(ApiVersionsRequest(version=3, client_software_name="t", client_software_version="1"),
                             ApiVersionsResponse)
    served = {a.api_key: (a.min_version, a.max_version) for a in answer.api_keys}
    assert (served[OFFSET_COMMIT], served[OFFSET_FETCH]) == ((2, 10), (1, 10))


def test_a_commit_by_topic_id_is_answered_per_partition(scene: Scene) -> None:
    """Kafka 4.4.0: partitions 0 and 1 of the topic by id → NONE; partition 99 → UNKNOWN_TOPIC_OR_PARTITION;
    partitions 0 and 3 of an id no topic has → UNKNOWN_TOPIC_ID; the committed ones are then fetched
    by id (offset 5, metadata "m"; the others -1, metadata "")."""
    assert commit_by_id(scene, {scene.topic_id: [0, 1, 99], NO_TOPIC: [0, 3]}) == {
        (scene.topic_id, 0): E.NONE, (scene.topic_id, 1): E.NONE,
        (scene.topic_id, 99): E.UNKNOWN_TOPIC_OR_PARTITION,
        (NO_TOPIC, 0): E.UNKNOWN_TOPIC_ID, (NO_TOPIC, 3): E.UNKNOWN_TOPIC_ID,
    }
    assert fetch_by_id(scene, {scene.topic_id: [0, 1, 2]}) == (E.NONE, [
        (scene.topic_id, "", [(0, 5, "m", 0), (1, 5, "m", 0), (2, -1, "", 0)])])


def test_a_fetch_by_topic_id_answers_unknown_ids_last_and_all_offsets_by_id(scene: Scene) -> None:
    """Kafka 4.4.0: a fetch of an unknown id and the topic → the topic's offsets first, then the
    unknown id's partitions at -1 with UNKNOWN_TOPIC_ID; a fetch of all (topics null) → every
    committed partition, named by the topic's id."""
    assert commit_by_id(scene, {scene.topic_id: sorted(ALL)}, offset=7) == {(scene.topic_id, p): E.NONE for p in ALL}
    error, topics = fetch_by_id(scene, {NO_TOPIC: [1], scene.topic_id: [4]})
    assert (error, topics) == (E.NONE, [(scene.topic_id, "", [(4, 7, "m", 0)]),
                                        (NO_TOPIC, "", [(1, -1, "", E.UNKNOWN_TOPIC_ID)])])
    error, topics = fetch_by_id(scene, None)
    assert error == E.NONE
    assert [(topic_id, name) for topic_id, name, _ in topics] == [(scene.topic_id, "")]
    assert sorted(topics[0][2]) == [(p, 7, "m", 0) for p in sorted(ALL)]


def test_the_consumer_commits_and_reads_its_offsets_by_topic_id(kip848_bootstrap: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """groupclient's consumer, manually assigned, commits and reads back two topics' offsets; it
    knows both topics' ids from its metadata, so both requests go at v10 (seen on the way out)."""
    sent: list[tuple[int, int]] = []
    send = BrokerConnection.send

    def seen(self: BrokerConnection, request: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append((int(request.API_KEY), int(request.version)))
        return send(self, request, *args, **kwargs)

    monkeypatch.setattr(BrokerConnection, "send", seen)
    topics = [external.new_topic(kip848_bootstrap, 2), external.new_topic(kip848_bootstrap, 1)]
    consumer = GroupConsumer(bootstrap_servers=kip848_bootstrap, group_id=unique("byid-client"),
                             enable_auto_commit=False, request_timeout_ms=10_000)
    try:
        wanted = {TopicPartition(topics[0], 0): OffsetAndMetadata(11, "a", None),
                  TopicPartition(topics[0], 1): OffsetAndMetadata(12, "", None),
                  TopicPartition(topics[1], 0): OffsetAndMetadata(13, "c", None)}
        consumer.assign(sorted(wanted))
        for tp in wanted:  # the metadata names both topics, with their ids
            assert consumer.partitions_for_topic(tp.topic)
        consumer.commit(wanted)
        committed = {tp: consumer.committed(tp, metadata=True) for tp in wanted}
        assert {tp: (om.offset, om.metadata) for tp, om in committed.items() if isinstance(om, OffsetAndMetadata)} == {
            tp: (om.offset, om.metadata) for tp, om in wanted.items()}
        assert (OFFSET_COMMIT, 10) in sent and (OFFSET_FETCH, 10) in sent, sent
        assert not [s for s in sent if s[0] in (OFFSET_COMMIT, OFFSET_FETCH) and s[1] != 10], sent
    finally:
        consumer.close()
