"""Raw KIP-848 wire machinery for the conformance tests (test_consumer_protocol_conformance.py):
a connection that decodes answers with the response class it is given (``Coordinator``), the
group's coordinator and a topic's id found over the wire, hand-driven consumer-protocol members
(``Scene``, ``Member``, ``Beat``), and the requests of the other group APIs as those tests send
them (OffsetCommit/OffsetFetch v9, ConsumerGroupDescribe, ListGroups, DescribeConfigs of a group,
and a classic member's JoinGroup/SyncGroup/Heartbeat).  Nothing here asserts what Kafka answers:
the tests do."""

from __future__ import annotations

import random
import uuid
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from kafka.protocol.admin.configs import DescribeConfigsRequest, DescribeConfigsResponse
from kafka.protocol.admin.groups import (
    DescribeGroupsRequest, DescribeGroupsResponse, ListGroupsRequest, ListGroupsResponse,
)
from kafka.protocol.consumer.group import (
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, OffsetCommitRequest,
    OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse, SyncGroupRequest, SyncGroupResponse,
)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from groupclient.errors import ErrorCode
from groupclient.protocol.consumer_group_heartbeat import (
    JOIN_EPOCH, LEAVE_EPOCH, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, new_member_id,
)
from groupclient.protocol.consumer_protocol import (
    Assignment, Subscription, decode_assignment, encode_assignment, encode_subscription,
)
from groupclient.structs import TopicPartition
from tests.integration import external
from tests.integration.peers import wait_until
from tests.integration.wire import WireClient

PARTITIONS = 6
ALL = frozenset(range(PARTITIONS))
NOTHING: frozenset[int] = frozenset()
HEARTBEAT_INTERVAL_MS = 1000  # the broker's group.consumer.heartbeat.interval.ms
REBALANCE_TIMEOUT_MS = 30_000  # members' default here: longer than any test
CLIENT_ID = "conformance"
CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE = 68, 69
GROUP_RESOURCE = 32  # ConfigResource.Type.GROUP (16 is CLIENT_METRICS)
NO_OPERATIONS = -2147483648  # authorized_operations when not asked for

E = ErrorCode
NOT_A_MEMBER = "Member {} is not a member of group <group>."


def fenced(which: str, sent: int, known: int) -> str:
    """Kafka's FENCED_MEMBER_EPOCH message; ``which`` is "greater" or "smaller"."""
    return (f"The consumer group member has a {which} member epoch ({sent}) than the one known by the group "
            f"coordinator ({known}). The member must abandon all its partitions and rejoin.")


def require_api(bootstrap: str, api_key: int) -> None:
    """Fail (not skip) when the broker does not list ``api_key`` in ApiVersions."""
    wire = WireClient(bootstrap)
    try:
        answer = wire.request(ApiVersionsRequest(version=3, client_software_name="t", client_software_version="1"))
    finally:
        wire.close()
    served = {a.api_key: (a.min_version, a.max_version) for a in answer.api_keys}
    if api_key not in served:
        pytest.fail(f"{bootstrap} does not serve API {api_key} (ApiVersions lists {sorted(served)})")


class Coordinator(WireClient):
    """A raw connection that decodes each answer with the response class it is given, not with
    groupclient.protocol.apis's table (the tests check the coordinator that uses that table)."""

    def call(self, request: Any, response_cls: Any) -> Any:
        self._correlation += 1
        request.with_header(correlation_id=self._correlation, client_id=CLIENT_ID)
        self.send_raw(bytes(request.encode(header=True, framed=True)))
        answer = response_cls.decode(self.read_frame(), version=request.version, header=True)
        assert answer.header.correlation_id == self._correlation
        return answer


def coordinator_of(bootstrap: str, group: str) -> Coordinator:
    """A connection to the group's coordinator, once it has loaded the group's offsets partition
    (a fresh Kafka answers COORDINATOR_LOAD_IN_PROGRESS for a moment)."""
    wire = Coordinator(bootstrap)
    found: list[Any] = []

    def known() -> bool:
        found[:] = wire.call(FindCoordinatorRequest(version=4, key_type=0, coordinator_keys=[group]),
                             FindCoordinatorResponse).coordinators
        return not found[0].error_code

    try:
        assert wait_until(known, 15), f"no coordinator for {group}: {found}"
    finally:
        wire.close()
    coordinator = Coordinator(f"{found[0].host}:{found[0].port}")

    def loaded() -> bool:
        found[:] = coordinator.call(DescribeGroupsRequest(
            version=5, groups=[group], include_authorized_operations=False), DescribeGroupsResponse).groups
        return not found[0].error_code

    if not wait_until(loaded, 15):
        coordinator.close()
        raise AssertionError(f"the coordinator of {group} never loaded it: {found}")
    return coordinator


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def topic_id_of(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> uuid.UUID:
    """The topic's id, once Metadata v12 lists it with ``partitions`` partitions."""
    wire = Coordinator(bootstrap)
    found: list[Any] = []

    def known() -> bool:
        found[:] = wire.call(MetadataRequest(
            version=12, topics=[MetadataRequest.MetadataRequestTopic(topic_id=None, name=topic)],
            allow_auto_topic_creation=False, include_topic_authorized_operations=False), MetadataResponse).topics
        return not found[0].error_code and len(found[0].partitions) == partitions

    try:
        assert wait_until(known, 15), f"{topic} has no metadata: {found}"
        topic_id: uuid.UUID = found[0].topic_id
        return topic_id
    finally:
        wire.close()


def wait_until_assignable(bootstrap: str, topic: str) -> None:
    """Kafka's group coordinator learns of a new topic a moment after Metadata does: a member
    joining before gets epoch 1 and nothing, and all six at epoch 2 a heartbeat later.  Wait, with
    a member of a throwaway group, until a join gets the topic's partitions."""
    group = unique("probe")
    wire = coordinator_of(bootstrap, group)
    last: list[Any] = []

    def assigned() -> bool:
        member_id = new_member_id(random.Random())
        last[:] = [wire.call(ConsumerGroupHeartbeatRequest(
            version=1, group_id=group, member_id=member_id, member_epoch=JOIN_EPOCH, rebalance_timeout_ms=1000,
            subscribed_topic_names=[topic], topic_partitions=[]), ConsumerGroupHeartbeatResponse)]
        wire.call(ConsumerGroupHeartbeatRequest(version=1, group_id=group, member_id=member_id,
                                                member_epoch=LEAVE_EPOCH), ConsumerGroupHeartbeatResponse)
        return bool(not last[0].error_code and last[0].assignment is not None and last[0].assignment.topic_partitions)

    try:
        assert wait_until(assigned, 15), f"the group coordinator never assigned {topic}: {last}"
    finally:
        wire.close()


# -- members ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Beat:
    """What a ConsumerGroupHeartbeat answered: ``assigned`` is None when the answer has no
    assignment (unchanged), else the partitions of the scene's topic."""

    error: int
    message: str | None
    epoch: int
    assigned: frozenset[int] | None


def ok(epoch: int, assigned: frozenset[int] | None = None) -> Beat:
    return Beat(E.NONE, None, epoch, assigned)


def refused(error: int, message: str) -> Beat:
    return Beat(error, message, 0, None)


@dataclass
class Scene:
    """One test's topic (six partitions), group and coordinator connection, and the names its
    messages are normalized with."""

    bootstrap: str
    topic: str
    topic_id: uuid.UUID
    group: str
    wire: Coordinator
    names: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.names[self.group] = "<group>"

    def member(self, label: str) -> Member:
        member = Member(self, label)
        self.names[member.member_id] = f"<{label}>"
        return member

    def plain(self, message: str | None) -> str | None:
        """``message`` with the scene's member ids and group names as placeholders."""
        if message is None:
            return None
        for name in sorted(self.names, key=len, reverse=True):
            message = message.replace(name, self.names[name])
        return message

    def owned(self, partitions: Collection[int] | None) -> list[Any] | None:
        if partitions is None:
            return None
        if not partitions:
            return []
        return [ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=self.topic_id, partitions=sorted(partitions))]

    def partitions(self, topic_partitions: list[Any]) -> frozenset[int]:
        """The partitions of an answer's topic-partition list, which must all be the scene's topic's."""
        found: set[int] = set()
        for tp in topic_partitions:
            assert tp.topic_id == self.topic_id, f"a partition of another topic: {tp}"
            found |= set(tp.partitions)
        return frozenset(found)


class Member:
    """A hand-driven consumer-protocol member: its id (made up, as v1 wants), its epoch (the last
    one an answer without error gave it)."""

    def __init__(self, scene: Scene, label: str) -> None:
        self.scene = scene
        self.label = label
        self.member_id = new_member_id(random.Random())
        self.epoch = JOIN_EPOCH

    def send(self, epoch: int, **fields: Any) -> Beat:
        request = {"group_id": self.scene.group, "member_id": self.member_id, "member_epoch": epoch} | fields
        answer = self.scene.wire.call(ConsumerGroupHeartbeatRequest(version=1, **request),
                                      ConsumerGroupHeartbeatResponse)
        if answer.error_code:  # Kafka's errors carry no member, epoch, interval or assignment
            assert (answer.member_id, answer.member_epoch, answer.heartbeat_interval_ms, answer.assignment) == (
                None, 0, 0, None), (self.label, answer)
        else:  # a leave's answer has no heartbeat interval
            interval = HEARTBEAT_INTERVAL_MS if answer.member_epoch >= 0 else 0
            assert (answer.member_id, answer.heartbeat_interval_ms, answer.error_message) == (
                request["member_id"], interval, None), (self.label, answer)
            self.epoch = answer.member_epoch
        assigned = None if answer.assignment is None else self.scene.partitions(answer.assignment.topic_partitions)
        return Beat(answer.error_code, self.scene.plain(answer.error_message), answer.member_epoch, assigned)

    def join(self, epoch: int = JOIN_EPOCH, **fields: Any) -> Beat:
        """A join as Kafka's client sends it (subscribed to the topic, owning nothing), ``fields``
        overriding."""
        defaults = {"subscribed_topic_names": [self.scene.topic], "topic_partitions": [],
                    "rebalance_timeout_ms": REBALANCE_TIMEOUT_MS}
        return self.send(epoch, **(defaults | fields))

    def beat(self, owned: Collection[int] | None, *, epoch: int | None = None, **fields: Any) -> Beat:
        """A heartbeat at the member's epoch (or ``epoch``) stating it owns ``owned`` (None: not stated)."""
        return self.send(self.epoch if epoch is None else epoch, topic_partitions=self.scene.owned(owned), **fields)

    def leave(self, epoch: int = LEAVE_EPOCH, **fields: Any) -> Beat:
        return self.send(epoch, **fields)


@contextmanager
def opened_scene(bootstrap: str, group: str) -> Iterator[Scene]:
    """A new topic of PARTITIONS partitions that the coordinator can assign, the group, and a
    connection to its coordinator, closed after."""
    topic = external.new_topic(bootstrap, PARTITIONS)
    topic_id = topic_id_of(bootstrap, topic)
    wait_until_assignable(bootstrap, topic)
    wire = coordinator_of(bootstrap, group)
    try:
        yield Scene(bootstrap, topic, topic_id, group, wire)
    finally:
        wire.close()


def settle(scene: Scene, a_fields: dict[str, Any] | None = None,
           b_fields: dict[str, Any] | None = None) -> tuple[Member, Member, frozenset[int], frozenset[int]]:
    """A and B through the handshake of test 1 to a stable group at epoch 2 (A's previous epoch
    is 1): the members and their partitions."""
    a, b = scene.member("A"), scene.member("B")
    assert a.join(**(a_fields or {})) == ok(2, ALL)
    assert a.beat(ALL) == ok(2)
    assert b.join(**(b_fields or {})) == ok(3, NOTHING)
    kept_a = a.beat(ALL).assigned
    assert kept_a is not None and len(kept_a) == PARTITIONS // 2, kept_a
    assert a.beat(kept_a) == ok(3)
    assert b.beat(NOTHING) == ok(3, ALL - kept_a)
    assert b.beat(ALL - kept_a) == ok(3)
    return a, b, kept_a, ALL - kept_a


# -- offsets under member epochs -------------------------------------------------------------------


def commit(scene: Scene, member_id: str, epoch: int, partitions: Collection[int]) -> dict[int, int]:
    """OffsetCommit v9 of offset 5 to ``partitions``: each partition's error code."""
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    P = T.OffsetCommitRequestPartition
    answer = scene.wire.call(OffsetCommitRequest(
        version=9, group_id=scene.group, generation_id_or_member_epoch=epoch, member_id=member_id,
        group_instance_id=None, topics=[T(name=scene.topic, partitions=[
            P(partition_index=p, committed_offset=5, committed_leader_epoch=-1, committed_metadata="")
            for p in sorted(partitions)])]), OffsetCommitResponse)
    return {p.partition_index: p.error_code for t in answer.topics for p in t.partitions}


def fetch(scene: Scene, member_id: str | None, epoch: int) -> tuple[int, dict[int, int]]:
    """OffsetFetch v9 of the six partitions: the group's error code and the committed offsets."""
    G = OffsetFetchRequest.OffsetFetchRequestGroup
    answer = scene.wire.call(OffsetFetchRequest(version=9, require_stable=False, groups=[G(
        group_id=scene.group, member_id=member_id, member_epoch=epoch,
        topics=[G.OffsetFetchRequestTopics(name=scene.topic, partition_indexes=sorted(ALL))])]), OffsetFetchResponse)
    [group] = answer.groups
    offsets = {p.partition_index: p.committed_offset for t in group.topics for p in t.partitions if not p.error_code}
    return group.error_code, offsets


# -- the group as the other APIs see it ---------------------------------------------------------------


@dataclass(frozen=True)
class Described:
    """One member of a ConsumerGroupDescribe answer."""

    epoch: int
    assigned: frozenset[int]
    target: frozenset[int]
    instance_id: str | None = None
    rack_id: str | None = None


def describe(scene: Scene, describe_classes: tuple[Any, Any], groups: list[str]) -> list[Any]:
    request_cls, response_cls = describe_classes
    answer = scene.wire.call(request_cls(version=1, group_ids=groups, include_authorized_operations=False),
                             response_cls)
    return list(answer.groups)


def described(scene: Scene, group: Any) -> tuple[tuple[Any, ...], dict[str, Described]]:
    """A described group: (state, group epoch, assignment epoch, assignor) and its members by label,
    after checking what is the same for every member here."""
    members = {}
    for m in group.members:
        common = (m.client_id, m.client_host, list(m.subscribed_topic_names), m.subscribed_topic_regex, m.member_type)
        assert common == (CLIENT_ID, "/127.0.0.1", [scene.topic], "", 1), m
        for assignment in (m.assignment, m.target_assignment):
            assert {tp.topic_name for tp in assignment.topic_partitions} <= {scene.topic}, m
        members[scene.plain(m.member_id) or ""] = Described(
            m.member_epoch, scene.partitions(m.assignment.topic_partitions),
            scene.partitions(m.target_assignment.topic_partitions), m.instance_id, m.rack_id)
    assert (group.error_code, group.error_message, group.group_id, group.authorized_operations) == (
        E.NONE, None, scene.group, NO_OPERATIONS), group
    return (group.group_state, group.group_epoch, group.assignment_epoch, group.assignor_name), members


def listed(scene: Scene, types: list[str], states: list[str]) -> list[tuple[str, str, str]]:
    """ListGroups v5: the scene's group as listed (protocol type, state, group type), if it is."""
    answer = scene.wire.call(ListGroupsRequest(version=5, states_filter=states, types_filter=types),
                             ListGroupsResponse)
    assert answer.error_code == E.NONE, answer
    return [(g.protocol_type, g.group_state, g.group_type) for g in answer.groups if g.group_id == scene.group]


def classic_join(scene: Scene, group: str, member_id: str = "", protocol_type: str = "consumer",
                 instance_id: str | None = None) -> Any:
    """JoinGroup v9 subscribed to the scene's topic (protocol "range"), static with ``instance_id``:
    its answer."""
    protocol = JoinGroupRequest.JoinGroupRequestProtocol(
        name="range", metadata=encode_subscription(Subscription([scene.topic])))
    return scene.wire.call(JoinGroupRequest(
        version=9, group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=5000, member_id=member_id,
        group_instance_id=instance_id, protocol_type=protocol_type, protocols=[protocol], reason=None),
        JoinGroupResponse)


def classic_member(scene: Scene, group: str, protocol_type: str = "consumer") -> Any:
    """A classic member's JoinGroup answer, after the MEMBER_ID_REQUIRED round of v4+."""
    first = classic_join(scene, group, protocol_type=protocol_type)
    assert first.error_code == E.MEMBER_ID_REQUIRED and first.member_id, first
    scene.names[first.member_id] = "<classic>"
    return classic_join(scene, group, first.member_id, protocol_type)


def classic_sync(scene: Scene, group: str, joined: Any, assignments: dict[str, frozenset[int]],
                 user_data: bytes | None = None, instance_id: str | None = None) -> Any:
    """SyncGroup v5 (the leader's ``assignments`` by member id, or none, each with ``user_data``
    as a custom assignor leaves): its answer."""
    answer = scene.wire.call(SyncGroupRequest(
        version=5, group_id=group, generation_id=joined.generation_id, member_id=joined.member_id,
        group_instance_id=instance_id, protocol_type="consumer", protocol_name="range", assignments=[
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=encode_assignment(
                Assignment([TopicPartition(scene.topic, p) for p in sorted(ps)], user_data)))
            for m, ps in assignments.items()]),
        SyncGroupResponse)
    return answer


def classic_heartbeat(scene: Scene, group: str, joined: Any, instance_id: str | None = None) -> int:
    return int(scene.wire.call(HeartbeatRequest(version=4, group_id=group, generation_id=joined.generation_id,
                                                member_id=joined.member_id, group_instance_id=instance_id),
                               HeartbeatResponse).error_code)


def synced(scene: Scene, answer: Any) -> tuple[int, str, str, frozenset[int]]:
    partitions = decode_assignment(bytes(answer.assignment)).partitions
    assert {tp.topic for tp in partitions} <= {scene.topic}, partitions
    return answer.error_code, answer.protocol_type, answer.protocol_name, frozenset(tp.partition for tp in partitions)


def describe_group_configs(bootstrap: str, group: str, names: list[str] | None, synonyms: bool = False) -> Any:
    """The result of DescribeConfigs v4 for one GROUP resource (with synonyms if asked)."""
    wire = Coordinator(bootstrap)
    try:
        answer = wire.call(DescribeConfigsRequest(version=4, include_synonyms=synonyms, include_documentation=False,
                                                  resources=[DescribeConfigsRequest.DescribeConfigsResource(
                                                      resource_type=GROUP_RESOURCE, resource_name=group,
                                                      configuration_keys=names)]), DescribeConfigsResponse)
    finally:
        wire.close()
    [result] = answer.results
    assert (result.resource_type, result.resource_name) == (GROUP_RESOURCE, group), result
    return result


def group_configs(bootstrap: str, group: str, names: list[str] | None) -> tuple[int, str | None, dict[str, Any]]:
    """DescribeConfigs v4 of a GROUP resource: error, message, and each config's (value, type,
    source), after checking they are all read-write, not sensitive, without synonyms."""
    result = describe_group_configs(bootstrap, group, names)
    configs = {}
    for c in result.configs:
        assert (c.read_only, c.is_sensitive, list(c.synonyms), c.documentation) == (False, False, [], None), c
        configs[c.name] = (c.value, c.config_type, c.config_source)
    return result.error_code, result.error_message, configs


STATIC, DEFAULT = 4, 5  # ConfigSource: the broker's server.properties, or Kafka's default
KAFKA_GROUP_CONFIGS = {  # name: (value, config type, source); Kafka 4.4.0's for a group without its own
    # the broker's group.consumer.* (tests/kafka/broker.py), reported as set on it
    "consumer.session.timeout.ms": ("10000", 3, STATIC),
    "consumer.heartbeat.interval.ms": ("1000", 3, STATIC),
    "consumer.assignment.interval.ms": ("0", 3, STATIC),
    "share.auto.offset.reset": ("latest", 2, DEFAULT),
    "share.heartbeat.interval.ms": ("5000", 3, DEFAULT),
    "share.isolation.level": ("read_uncommitted", 2, DEFAULT),
    "share.record.lock.duration.ms": ("30000", 3, DEFAULT),
    "share.session.timeout.ms": ("45000", 3, DEFAULT),
    "share.delivery.count.limit": ("5", 3, DEFAULT),
    "share.partition.max.record.locks": ("2000", 3, DEFAULT),
    "share.assignment.interval.ms": ("1000", 3, DEFAULT),
    "share.renew.acknowledge.enable": ("true", 1, DEFAULT),
    "streams.heartbeat.interval.ms": ("5000", 3, DEFAULT),
    "streams.num.standby.replicas": ("0", 3, DEFAULT),
    "streams.session.timeout.ms": ("45000", 3, DEFAULT),
    "streams.assignor.name": ("sticky", 2, DEFAULT),
    "streams.initial.rebalance.delay.ms": ("3000", 3, DEFAULT),
    "streams.assignment.interval.ms": ("1000", 3, DEFAULT),
    "streams.rack.aware.assignment.tags": ("", 7, DEFAULT),
    "errors.deadletterqueue.topic.name": ("", 2, DEFAULT),
    "errors.deadletterqueue.copy.record.enable": ("false", 1, DEFAULT),
}
