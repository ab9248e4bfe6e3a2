"""A static classic member (a JoinGroup with a group instance id) in a consumer-protocol group, as
Kafka 4.4 has it (GroupMetadataManager.classicGroupJoinToConsumerGroup): the same raw requests to
Apache Kafka 4.4 and the embedded coordinator, one table of expected answers (recorded from Kafka
4.4.0; the machinery is kip848_wire.py's, as test_consumer_protocol_conformance.py's).

A static member joins without a member id at once (no MEMBER_ID_REQUIRED round); one that comes
back without its member id takes its predecessor's place, partitions and epoch under a new id,
without a new group epoch; the old id is then fenced from the instance, and unknown.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.kip848_wire import (
    ALL, E, Scene, classic_heartbeat, classic_join, classic_sync, listed, ok, opened_scene, synced, unique,
)

pytestmark = pytest.mark.integration

INSTANCE = "static-1"


@pytest.fixture
def scene(kip848_bootstrap: str) -> Iterator[Scene]:
    with opened_scene(kip848_bootstrap, unique("static")) as scene:
        yield scene


def test_a_static_classic_member_joins_and_comes_back_under_a_new_member_id(scene: Scene) -> None:
    """Kafka 4.4.0: A (consumer protocol) owns all six at epoch 2.  S's JoinGroup v9 with an
    instance id and no member id: no error, a member id, generation 3.  A gives up three (epoch
    3); S's Heartbeat then answers REBALANCE_IN_PROGRESS, its JoinGroup with its id generation 3,
    its SyncGroup the other three.  S's JoinGroup again without a member id (a restart): no error,
    another member id, generation 3, and its SyncGroup the same three, with no new group epoch (A's
    heartbeat answers epoch 3 and nothing new).  The old id's Heartbeat and JoinGroup with the
    instance answer FENCED_INSTANCE_ID, its Heartbeat without it UNKNOWN_MEMBER_ID; a JoinGroup
    naming an unknown instance with a member id answers UNKNOWN_MEMBER_ID."""
    a = scene.member("A")
    assert a.join() == ok(2, ALL)
    assert a.beat(ALL) == ok(2)
    joined = classic_join(scene, scene.group, instance_id=INSTANCE)
    assert (joined.error_code, joined.generation_id, bool(joined.member_id)) == (E.NONE, 3, True), joined
    scene.names[joined.member_id] = "<S>"
    kept = a.beat(ALL).assigned
    assert kept is not None and len(kept) == 3, kept
    assert a.beat(kept) == ok(3)
    assert classic_heartbeat(scene, scene.group, joined, INSTANCE) == E.REBALANCE_IN_PROGRESS
    again = classic_join(scene, scene.group, joined.member_id, instance_id=INSTANCE)
    assert (again.error_code, again.generation_id, again.member_id) == (E.NONE, 3, joined.member_id), again
    assert synced(scene, classic_sync(scene, scene.group, again, {}, instance_id=INSTANCE)) == (
        E.NONE, "consumer", "range", ALL - kept)
    back = classic_join(scene, scene.group, instance_id=INSTANCE)
    assert (back.error_code, back.generation_id) == (E.NONE, 3), back
    assert back.member_id not in ("", joined.member_id), back
    scene.names[back.member_id] = "<S2>"
    assert synced(scene, classic_sync(scene, scene.group, back, {}, instance_id=INSTANCE)) == (
        E.NONE, "consumer", "range", ALL - kept)
    assert a.beat(kept) == ok(3)
    assert classic_heartbeat(scene, scene.group, joined, INSTANCE) == E.FENCED_INSTANCE_ID
    assert classic_heartbeat(scene, scene.group, joined) == E.UNKNOWN_MEMBER_ID  # no instance: by id
    stale = classic_join(scene, scene.group, joined.member_id, instance_id=INSTANCE)
    assert stale.error_code == E.FENCED_INSTANCE_ID, stale
    stranger = classic_join(scene, scene.group, "someone", instance_id="static-9")
    assert stranger.error_code == E.UNKNOWN_MEMBER_ID, stranger
    assert classic_heartbeat(scene, scene.group, back, INSTANCE) == E.NONE


def test_a_static_member_coming_back_classic_turns_a_group_of_classic_members_classic_without_a_rebalance(
        scene: Scene) -> None:
    """Kafka 4.4.0 (classicGroupJoinToConsumerGroup's online downgrade): A, a static
    consumer-protocol member, shares the six with C, a classic member, at epoch 3.  A comes back as
    a classic member (JoinGroup with its instance id, no member id): the group then has classic
    members only and becomes a classic group in that JoinGroup.  Its assignment was current, so no
    rebalance: A gets a new member id and generation 3, its SyncGroup its three, and C's Heartbeat
    answers no error.  The group is listed classic and Stable; A's old member id is not a
    consumer-protocol member any more."""
    a = scene.member("A")
    assert a.join(instance_id=INSTANCE) == ok(2, ALL)
    assert a.beat(ALL) == ok(2)
    c = classic_join(scene, scene.group, instance_id="static-2")
    assert (c.error_code, c.generation_id) == (E.NONE, 3), c
    scene.names[c.member_id] = "<C>"
    kept = a.beat(ALL).assigned
    assert kept is not None and len(kept) == 3, kept
    assert a.beat(kept) == ok(3)
    assert classic_heartbeat(scene, scene.group, c, "static-2") == E.REBALANCE_IN_PROGRESS
    c = classic_join(scene, scene.group, c.member_id, instance_id="static-2")
    assert synced(scene, classic_sync(scene, scene.group, c, {}, instance_id="static-2")) == (
        E.NONE, "consumer", "range", ALL - kept)
    assert classic_heartbeat(scene, scene.group, c, "static-2") == E.NONE
    back = classic_join(scene, scene.group, instance_id=INSTANCE)
    assert (back.error_code, back.generation_id, back.protocol_type, back.protocol_name) == (
        E.NONE, 3, "consumer", "range"), back
    assert back.member_id not in ("", a.member_id), back
    scene.names[back.member_id] = "<A2>"
    assert synced(scene, classic_sync(scene, scene.group, back, {}, instance_id=INSTANCE)) == (
        E.NONE, "consumer", "range", kept)
    assert classic_heartbeat(scene, scene.group, c, "static-2") == E.NONE
    assert classic_heartbeat(scene, scene.group, back, INSTANCE) == E.NONE
    assert listed(scene, [], []) == [("consumer", "Stable", "classic")]
    assert a.beat(kept).error == E.GROUP_ID_NOT_FOUND
