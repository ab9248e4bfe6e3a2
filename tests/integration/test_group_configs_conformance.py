"""A group's own configs, calibrated: IncrementalAlterConfigs (44) and DescribeConfigs (32) on GROUP
resources (32) answer on the embedded coordinator as Apache Kafka 4.4.0 answers, through one table of
expected answers (ALTERATIONS) run on both clusters, and a consumer group's members are held to the
group's heartbeat interval.

Kafka applies a change through its controller and each broker learns of it from the metadata log,
so on Kafka a describe or a heartbeat right after a change may still see the old value: those are
asserted as outcomes reached (``wait_until``), not at once."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse

from groupclient.errors import ErrorCode
from groupclient.protocol.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, new_member_id,
)
from tests.integration.kip848_wire import (
    GROUP_RESOURCE, KAFKA_GROUP_CONFIGS, Coordinator, Scene, coordinator_of, describe_group_configs, group_configs,
    opened_scene, unique,
)
from tests.integration.peers import wait_until

E = ErrorCode
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
GROUP_CONFIG = 8  # ConfigSource of a group's own value
Op = tuple[str, int, str | None]
Resource = tuple[str, list[Op]]  # (group, operations); "<g>" is the case's group id, "<h>" another


def alter(bootstrap: str, resources: list[Resource], validate_only: bool = False,
          resource_type: int = GROUP_RESOURCE) -> list[tuple[int, str | None]]:
    """IncrementalAlterConfigs v1: (error, message) per resource, in the request's order."""
    wire = Coordinator(bootstrap)
    try:
        answer = wire.call(IncrementalAlterConfigsRequest(version=1, validate_only=validate_only, resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(
                resource_type=resource_type, resource_name=name, configs=[
                    IncrementalAlterConfigsRequest.AlterConfigsResource.AlterableConfig(
                        name=key, config_operation=op, value=value) for key, op, value in ops])
            for name, ops in resources]), IncrementalAlterConfigsResponse)
    finally:
        wire.close()
    assert [(r.resource_type, r.resource_name) for r in answer.responses] == [
        (resource_type, name) for name, _ in resources], answer
    return [(r.error_code, r.error_message) for r in answer.responses]


def own_configs(bootstrap: str, group: str) -> dict[str, str]:
    """The configs DescribeConfigs reports as the group's own (source GROUP_CONFIG)."""
    _, _, configs = group_configs(bootstrap, group, None)
    return {name: value for name, (value, _, source) in configs.items() if source == GROUP_CONFIG}


def described_soon(bootstrap: str, group: str, expected: dict[str, str]) -> dict[str, str]:
    """The group's own configs once they are ``expected`` (Kafka's brokers learn of a change from
    the metadata log), or as last seen after 15 s."""
    seen: dict[str, str] = {}

    def arrived() -> bool:
        seen.clear()
        seen.update(own_configs(bootstrap, group))
        return seen == expected

    wait_until(arrived, 15)
    return seen


BAD_INT = "Invalid value {} for configuration {}: Not a number of type INT"
# (what, resources, validate_only, each resource's (error, message), the case group's own configs after)
ALTERATIONS: list[tuple[str, list[Resource], bool, list[tuple[int, str | None]], dict[str, str]]] = [
    ("set two", [("<g>", [("consumer.heartbeat.interval.ms", SET, "2000"),
                          ("consumer.session.timeout.ms", SET, " 12000 ")])], False,
     [(E.NONE, None)], {"consumer.heartbeat.interval.ms": "2000", "consumer.session.timeout.ms": "12000"}),
    ("validate only", [("<g>", [("consumer.heartbeat.interval.ms", SET, "2000")])], True, [(E.NONE, None)], {}),
    ("below the broker's minimum", [("<g>", [("consumer.heartbeat.interval.ms", SET, "400")])], False,
     [(E.INVALID_CONFIG, "consumer.heartbeat.interval.ms must be in the range 500 to 15000 inclusive.")], {}),
    ("below the config's own minimum", [("<g>", [("consumer.heartbeat.interval.ms", SET, "0")])], False,
     [(E.INVALID_CONFIG, "Invalid value 0 for configuration consumer.heartbeat.interval.ms: Value must be at least 1")],
     {}),
    ("not a number", [("<g>", [("consumer.session.timeout.ms", SET, "10s")])], False,
     [(E.INVALID_CONFIG, BAD_INT.format("10s", "consumer.session.timeout.ms"))], {}),
    ("too big for an int", [("<g>", [("consumer.session.timeout.ms", SET, "2147483648")])], False,
     [(E.INVALID_CONFIG, BAD_INT.format("2147483648", "consumer.session.timeout.ms"))], {}),
    ("a session not above the heartbeat", [("<g>", [("consumer.heartbeat.interval.ms", SET, "9000"),
                                                    ("consumer.session.timeout.ms", SET, "9000")])], False,
     [(E.INVALID_CONFIG, "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")], {}),
    ("a heartbeat not below the broker's session", [("<g>", [("consumer.heartbeat.interval.ms", SET, "10000")])],
     False, [(E.INVALID_CONFIG, "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")],
     {}),
    ("share settings", [("<g>", [("share.session.timeout.ms", SET, "50000"), ("share.heartbeat.interval.ms", SET,
                                                                              "15000")])], False,
     [(E.NONE, None)], {"share.session.timeout.ms": "50000", "share.heartbeat.interval.ms": "15000"}),
    ("an unknown name", [("<g>", [("consumer.nope.ms", SET, "1")])], False,
     [(E.INVALID_CONFIG, "Unknown group config name: consumer.nope.ms")], {}),
    ("append to an int", [("<g>", [("consumer.heartbeat.interval.ms", APPEND, "1")])], False,
     [(E.INVALID_CONFIG, "Can't APPEND to key consumer.heartbeat.interval.ms because its type is not LIST.")], {}),
    ("subtract from an unknown name", [("<g>", [("nope", SUBTRACT, "1")])], False,
     [(E.INVALID_CONFIG, "Can't SUBTRACT to key nope because its type is not LIST.")], {}),
    ("append to the one list", [("<g>", [("streams.rack.aware.assignment.tags", APPEND, "zone")])], False,
     [(E.INVALID_CONFIG, "Can't APPEND to key streams.rack.aware.assignment.tags because its type is not LIST.")],
     {}),
    ("a list", [("<g>", [("streams.rack.aware.assignment.tags", SET, " zone , rack")])], False,
     [(E.NONE, None)], {"streams.rack.aware.assignment.tags": "zone,rack"}),
    ("a repeated tag", [("<g>", [("streams.rack.aware.assignment.tags", SET, "zone, rack ,zone")])], False,
     [(E.INVALID_CONFIG, "streams.rack.aware.assignment.tags must not contain duplicate tag keys.")], {}),
    ("a config named twice", [("<g>", [("consumer.heartbeat.interval.ms", SET, "2000"),
                                       ("consumer.heartbeat.interval.ms", DELETE, None)])], False,
     [(E.INVALID_REQUEST, "Error due to duplicate config keys")], {}),
    ("a group named twice", [("<g>", [("consumer.heartbeat.interval.ms", SET, "2000")]),
                             ("<h>", [("consumer.heartbeat.interval.ms", SET, "2000")]),
                             ("<g>", [("consumer.session.timeout.ms", SET, "20000")])], False,
     [(E.INVALID_REQUEST, "Each resource must appear at most once."), (E.NONE, None),
      (E.INVALID_REQUEST, "Each resource must appear at most once.")], {}),
    ("a null value", [("<g>", [("consumer.heartbeat.interval.ms", SET, None), ("share.isolation.level", SET, None)])],
     False, [(E.INVALID_REQUEST, "Null value not supported for : consumer.heartbeat.interval.ms, share.isolation.level")],
     {}),
    ("the default group", [("", [("consumer.heartbeat.interval.ms", SET, "2000")])], False,
     [(E.INVALID_REQUEST, "Default group resources are not allowed.")], {}),
    ("a string not allowed", [("<g>", [("share.isolation.level", SET, "READ_COMMITTED")])], False,
     [(E.INVALID_CONFIG, "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one "
                         "of: read_committed, read_uncommitted")], {}),
    ("a reset by duration", [("<g>", [("share.auto.offset.reset", SET, "by_duration:PT1H30M"),
                                      ("share.renew.acknowledge.enable", SET, " FALSE")])], False,
     [(E.NONE, None)], {"share.auto.offset.reset": "by_duration:PT1H30M", "share.renew.acknowledge.enable": "false"}),
    ("a negative duration", [("<g>", [("share.auto.offset.reset", SET, "by_duration:-PT1H")])], False,
     [(E.INVALID_CONFIG, "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value "
                         "`by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either "
                         "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")], {}),
    ("not a boolean", [("<g>", [("share.renew.acknowledge.enable", SET, "yes")])], False,
     [(E.INVALID_CONFIG, "Invalid value yes for configuration share.renew.acknowledge.enable: Expected value to be "
                         "either true or false")], {}),
    ("a lock below the broker's minimum", [("<g>", [("share.record.lock.duration.ms", SET, "2000")])], False,
     [(E.INVALID_CONFIG, "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.")], {}),
    ("too many standbys", [("<g>", [("streams.num.standby.replicas", SET, "3")])], False,
     [(E.INVALID_CONFIG, "streams.num.standby.replicas must be less than or equal to 2")], {}),
    ("an unknown task assignor", [("<g>", [("streams.assignor.name", SET, "greedy")])], False,
     [(E.INVALID_CONFIG, "streams.assignor.name 'greedy' is not a registered task assignor. Registered assignors "
                         "are: [sticky].")], {}),
    ("an internal name", [("<g>", [("streams.num.warmup.replicas", SET, "5")])], False,
     [(E.NONE, None)], {"streams.num.warmup.replicas": "5"}),
    ("a dead-letter topic of Kafka's own", [("<g>", [("errors.deadletterqueue.topic.name", SET, "__dlq")])], False,
     [(E.INVALID_CONFIG, "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")], {}),
    ("delete what is not set", [("<g>", [("consumer.heartbeat.interval.ms", DELETE, None)])], False,
     [(E.NONE, None)], {}),
]


@pytest.fixture
def bootstrap(kip848_bootstrap: str) -> Iterator[str]:
    """Either cluster (tests/conftest.py), once a group's coordinator answers there."""
    coordinator_of(kip848_bootstrap, unique("ready")).close()
    yield kip848_bootstrap


@pytest.fixture
def scene(kip848_bootstrap: str) -> Iterator[Scene]:
    """A topic, a group, and a connection to its coordinator, on either cluster."""
    with opened_scene(kip848_bootstrap, unique("gcfg")) as scene:
        yield scene


@pytest.mark.parametrize("case", ALTERATIONS, ids=[case[0] for case in ALTERATIONS])
def test_incremental_alter_configs_answers_as_kafka_4_4(bootstrap: str, case: Any) -> None:
    """Kafka 4.4.0: each case of ALTERATIONS on a group with no configs of its own answers each
    resource's (error, message), then DescribeConfigs reports the group's own configs as given
    (parsed: trimmed, booleans in lower case, a list without repeats), and nothing of a refused
    or validate-only request."""
    _, resources, validate_only, answers, after = case
    group, other = unique("gcfg"), unique("gcfg")
    named = [({"<g>": group, "<h>": other}.get(name, name), ops) for name, ops in resources]
    assert alter(bootstrap, named, validate_only) == answers
    assert described_soon(bootstrap, group, after) == after


def test_a_change_adds_to_what_the_group_has_and_delete_restores_the_brokers(bootstrap: str) -> None:
    """Kafka 4.4.0: configs set one request after another add up, and a refused request changes
    none of them; DELETE restores the broker's value (STATIC_BROKER_CONFIG, as before any change)."""
    group = unique("gcfg")
    tags = "streams.rack.aware.assignment.tags"
    assert alter(bootstrap, [(group, [("consumer.heartbeat.interval.ms", SET, "2000"), (tags, SET, "a,b")])]) == [
        (E.NONE, None)]
    assert alter(bootstrap, [(group, [(tags, SET, "b"), (tags + "s", SET, "c")])]) == [
        (E.INVALID_CONFIG, f"Unknown group config name: {tags}s")]
    assert alter(bootstrap, [(group, [("consumer.session.timeout.ms", SET, "20000"), (tags, SET, "b"),
                                      ("consumer.heartbeat.interval.ms", DELETE, None)])]) == [(E.NONE, None)]
    assert described_soon(bootstrap, group, {"consumer.session.timeout.ms": "20000", tags: "b"}) == {
        "consumer.session.timeout.ms": "20000", tags: "b"}
    # the whole map is checked: a heartbeat of 20000 would not be below the session the group has
    assert alter(bootstrap, [(group, [("consumer.heartbeat.interval.ms", SET, "15000"),
                                      ("consumer.session.timeout.ms", SET, "15000")])]) == [
        (E.INVALID_CONFIG, "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")]
    assert alter(bootstrap, [(group, [("consumer.session.timeout.ms", DELETE, None), (tags, DELETE, None)])]) == [
        (E.NONE, None)]
    assert described_soon(bootstrap, group, {}) == {}
    assert group_configs(bootstrap, group, None) == (E.NONE, "", KAFKA_GROUP_CONFIGS)


def test_an_unknown_operation_is_refused_with_the_operations_there_are(kip848_bootstrap: str,
                                                                      request: pytest.FixtureRequest) -> None:
    """Operation 7 of IncrementalAlterConfigs: INVALID_REQUEST naming the four operations here.
    Kafka 4.4.0 answers UNKNOWN_SERVER_ERROR without a message (its controller meets a null
    operation), which says nothing a client can act on: a deliberate difference
    (docs/coordinator.md)."""
    kafka = request.node.callspec.params["kip848_bootstrap"] == "kafka"
    answer = alter(kip848_bootstrap, [(unique("gcfg"), [("consumer.heartbeat.interval.ms", 7, "2000")])])
    assert answer == ([(E.UNKNOWN_SERVER_ERROR, None)] if kafka else [(
        E.INVALID_REQUEST, "Unknown operations type 7: the operations are 0 (SET), 1 (DELETE), 2 (APPEND), "
                           "3 (SUBTRACT)")])


def test_describe_configs_gives_the_synonyms_of_a_groups_configs(bootstrap: str) -> None:
    """Kafka 4.4.0, DescribeConfigs v4 with synonyms: a group's own value first (GROUP_CONFIG),
    then the broker setting behind it (its server.properties value, STATIC_BROKER_CONFIG, then
    Kafka's default, DEFAULT_CONFIG); a config no broker setting is behind has its own default."""
    group = unique("gcfg")
    assert alter(bootstrap, [(group, [("consumer.heartbeat.interval.ms", SET, "2000")])]) == [(E.NONE, None)]
    described_soon(bootstrap, group, {"consumer.heartbeat.interval.ms": "2000"})
    result = describe_group_configs(bootstrap, group, None, synonyms=True)
    synonyms = {c.name: [(s.name, s.value, s.source) for s in c.synonyms] for c in result.configs}
    assert synonyms["consumer.heartbeat.interval.ms"] == [
        ("consumer.heartbeat.interval.ms", "2000", GROUP_CONFIG),
        ("group.consumer.heartbeat.interval.ms", "1000", 4), ("group.consumer.heartbeat.interval.ms", "5000", 5)]
    assert synonyms["consumer.session.timeout.ms"] == [
        ("group.consumer.session.timeout.ms", "10000", 4), ("group.consumer.session.timeout.ms", "45000", 5)]
    assert synonyms["share.record.lock.duration.ms"] == [("group.share.record.lock.duration.ms", "30000", 5)]
    assert synonyms["share.auto.offset.reset"] == [("share.auto.offset.reset", "latest", 5)]
    assert synonyms["streams.assignor.name"] == [("group.streams.assignors", "sticky", 5)]
    assert synonyms["streams.rack.aware.assignment.tags"] == [("group.streams.rack.aware.assignment.tags", "", 5)]
    assert len(synonyms) == len(KAFKA_GROUP_CONFIGS), sorted(synonyms)


def test_a_groups_heartbeat_interval_reaches_its_members(scene: Scene) -> None:
    """Kafka 4.4.0: a consumer group's own consumer.heartbeat.interval.ms is the interval its
    members' heartbeats are answered with (the broker's, 1000, before and after it is deleted),
    for a group that exists and one created after."""
    def interval(member_id: str, epoch: int) -> tuple[int, int]:
        answer = scene.wire.call(ConsumerGroupHeartbeatRequest(
            version=1, group_id=scene.group, member_id=member_id, member_epoch=epoch, rebalance_timeout_ms=30_000,
            subscribed_topic_names=[scene.topic], topic_partitions=[]), ConsumerGroupHeartbeatResponse)
        assert answer.error_code == E.NONE, answer
        return answer.member_epoch, answer.heartbeat_interval_ms

    assert alter(scene.bootstrap, [(scene.group, [("consumer.heartbeat.interval.ms", SET, "2500")])]) == [
        (E.NONE, None)]
    member = new_member_id(random.Random())
    seen: list[tuple[int, int]] = [interval(member, 0)]
    epoch = seen[0][0]

    def answered_with(expected: int) -> bool:
        seen.append(interval(member, epoch))
        return seen[-1][1] == expected

    assert wait_until(lambda: answered_with(2500), 15), seen
    assert alter(scene.bootstrap, [(scene.group, [("consumer.heartbeat.interval.ms", DELETE, None)])]) == [
        (E.NONE, None)]
    assert wait_until(lambda: answered_with(1000), 15), seen
