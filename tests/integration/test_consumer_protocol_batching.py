"""KIP-1263's assignment batching (Kafka 4.3) on the wire, Apache Kafka 4.4 and the embedded
coordinator side by side, as test_consumer_protocol_conformance.py compares them: the same raw
ConsumerGroupHeartbeat and ConsumerGroupDescribe requests, the same answers.

A group computes a new target at most once per ``consumer.assignment.interval.ms``, by the first
heartbeat that comes after it; meanwhile members move towards the previous target at its epoch
and the group is Assigning.  Kafka's group gets a three-second interval of its own
(IncrementalAlterConfigs on the GROUP resource, as ``kafka-configs --entity-type groups`` sets
it), the embedded coordinator the same as its setting; everything else is KIP848_SETTINGS.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse

from groupclient.coordinator import EmbeddedCluster
from groupclient.protocol.consumer_group_describe import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse
from tests.conftest import KIP848_SETTINGS
from tests.integration.kip848_wire import (
    ALL, GROUP_RESOURCE, NOTHING, PARTITIONS, Coordinator, Described, E, Scene, describe, described, ok, opened_scene,
    unique,
)

pytestmark = pytest.mark.integration
INTERVAL_MS = 3000
SET = 0  # IncrementalAlterConfigs' operation


def set_group_interval(bootstrap: str, group: str, interval_ms: int) -> None:
    Resource = IncrementalAlterConfigsRequest.AlterConfigsResource
    wire = Coordinator(bootstrap)
    try:
        answer = wire.call(IncrementalAlterConfigsRequest(version=1, validate_only=False, resources=[Resource(
            resource_type=GROUP_RESOURCE, resource_name=group, configs=[Resource.AlterableConfig(
                name="consumer.assignment.interval.ms", config_operation=SET, value=str(interval_ms))])]),
            IncrementalAlterConfigsResponse)
    finally:
        wire.close()
    assert [(r.error_code, r.error_message) for r in answer.responses] == [(0, None)], answer


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def scene(request: pytest.FixtureRequest) -> Iterator[Scene]:
    """A topic, a group whose assignment interval is INTERVAL_MS, and its coordinator."""
    group = unique("batch")
    with ExitStack() as stack:
        if request.param == "kafka":
            bootstrap = request.getfixturevalue("kafka_broker").bootstrap
            set_group_interval(bootstrap, group, INTERVAL_MS)
        else:
            bootstrap = stack.enter_context(EmbeddedCluster(nodes=1, **{  # type: ignore[arg-type]
                **KIP848_SETTINGS, "group_consumer_assignment_interval_ms": INTERVAL_MS})).bootstrap_servers
        yield stack.enter_context(opened_scene(bootstrap, group))


def test_a_second_member_waits_for_the_interval_at_the_previous_targets_epoch(scene: Scene) -> None:
    """Kafka 4.4.0, interval 3 s: A's join computes the group's first target at once (epoch 2, all
    six).  B's join moves the group epoch to 3 but the target stays at epoch 2: B is answered
    epoch 2 and nothing, the group is Assigning (3/2) and B is at epoch 2 with no target; A's
    heartbeats answer epoch 2 and no change.  The first heartbeat (A's) at least 3 s after A's join
    computes epoch 3's target: A is told its three at epoch 2, the group is Reconciling (3/3).  The
    handshake then runs as without batching: A's release moves it to epoch 3, B gets the other
    three at epoch 3.  (Kafka 4.1.1 had no interval: B's join computed epoch 2's target at once.)"""
    classes = (ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse)

    def now() -> tuple[tuple[Any, ...], dict[str, Described]]:
        [group] = describe(scene, classes, [scene.group])
        return described(scene, group)

    a, b = scene.member("A"), scene.member("B")
    computed = time.monotonic()
    assert a.join() == ok(2, ALL)
    assert a.beat(ALL) == ok(2)
    assert b.join() == ok(2, NOTHING)
    state, members = now()
    assert state == ("Assigning", 3, 2, "uniform"), state
    assert (members["<B>"].epoch, members["<B>"].assigned, members["<B>"].target) == (2, NOTHING, NOTHING)
    assert a.beat(ALL) == ok(2)
    assert time.monotonic() - computed < INTERVAL_MS / 1000, "the machine was too slow to stay within the interval"
    time.sleep(max(0.0, computed + INTERVAL_MS / 1000 + 0.2 - time.monotonic()))
    revoking = a.beat(ALL)
    kept = revoking.assigned
    assert (revoking.error, revoking.epoch, kept is not None and len(kept)) == (E.NONE, 2, PARTITIONS // 2), revoking
    assert kept is not None
    assert now()[0] == ("Reconciling", 3, 3, "uniform")
    assert b.beat(NOTHING) == ok(3)
    assert a.beat(kept) == ok(3)
    assert b.beat(NOTHING) == ok(3, ALL - kept)
    assert now()[0] == ("Stable", 3, 3, "uniform")
