"""The consumer group protocol (KIP-848) on the wire, Apache Kafka 4.4 and the embedded coordinator
side by side: each test sends the same raw requests (ConsumerGroupHeartbeat, API 68;
ConsumerGroupDescribe, API 69; and the older group APIs as they meet a consumer group) to both,
Apache Kafka 4.4 and the embedded coordinator, and both must answer them the same way: error
codes, Kafka's error messages, member epochs, the
order in which partitions are revoked and assigned, and the assignments up to the assignor's
choice (sizes, disjointness and cover, not which member gets which partitions).

Every answer asserted here was recorded from Kafka 4.4.0 (tests/kafka/broker.py: a 1 s heartbeat
interval, a 10 s session, a new target at every change: an assignment interval of 0), and each
test's docstring says what Kafka answers, and where Kafka 4.1.1 answered otherwise
(docs/coordinator.md tables every difference).  test_consumer_protocol_batching.py has Kafka's
default assignment interval.
Member ids, topic ids and group names vary from run to run: messages are compared with them
replaced by ``<A>``, ``<B>``, ... and ``<group>`` (``Scene.plain``).

The members here are hand-driven: one request at a time on one connection, so that what a
member states (its epoch, the partitions it owns) is exactly what the test says.  Where Kafka's
answer depends on time (a rebalance timeout), the tests wait on the outcome, within a deadline.

Both sides get the same settings (``KIP848_SETTINGS`` of tests/conftest.py for the embedded
coordinator); each case first checks that the cluster lists ConsumerGroupHeartbeat (API 68) in
ApiVersions, and fails, not skips, when it does not.  The machinery (the raw connection, the
hand-driven members, the requests of the other group APIs) is in kip848_wire.py beside this file.
"""

from __future__ import annotations

import random
import time
from collections.abc import Collection, Iterator
from typing import Any

import pytest
from kafka.protocol.admin.groups import DescribeGroupsRequest, DescribeGroupsResponse
from kafka.protocol.consumer.group import LeaveGroupRequest, LeaveGroupResponse

from groupclient.protocol.consumer_group_heartbeat import LEAVE_EPOCH, STATIC_LEAVE_EPOCH, new_member_id
from tests.integration.kip848_wire import (
    ALL, CONSUMER_GROUP_DESCRIBE, KAFKA_GROUP_CONFIGS, NOT_A_MEMBER, NOTHING, PARTITIONS,
    REBALANCE_TIMEOUT_MS, Beat, Described, E, Scene, classic_heartbeat, classic_join, classic_member,
    classic_sync, commit, coordinator_of, describe, described, fenced, fetch, group_configs, listed, ok,
    opened_scene, refused, require_api, settle, synced, unique,
)

pytestmark = pytest.mark.integration


# -- the clusters -----------------------------------------------------------------------------------


@pytest.fixture
def scene(kip848_bootstrap: str) -> Iterator[Scene]:
    """A topic, a group, and a connection to its coordinator, on each cluster (tests/conftest.py)."""
    with opened_scene(kip848_bootstrap, unique("g848")) as scene:
        yield scene


# -- 1-3: the handshake, null owned partitions, a member that never releases --------------------------


def test_the_handshake_revokes_before_it_assigns(scene: Scene) -> None:
    """Kafka 4.4.0: A's join answers epoch 2 (a group starts at epoch 1; Kafka 4.1.1 answered 1)
    and all six partitions at once; A's acknowledgement (owning six) answers epoch 2 and no
    assignment.  B's join answers epoch 3 and an empty assignment, as A holds everything.  A's next
    heartbeat, still owning six, gets its shrunk target (three) at the SAME epoch 2; B meanwhile
    gets nothing new at epoch 3.  A's heartbeat owning only its three moves it to epoch 3 (no
    assignment); only then does B's heartbeat get the other three (epoch 3), which it acknowledges
    (no assignment).  (A join before Kafka's coordinator has learned of a just-created topic
    answers epoch 1 and nothing, then epoch 2 and all six: the ``scene`` fixture waits until it has.)"""
    a, b = scene.member("A"), scene.member("B")
    assert a.join() == ok(2, ALL)
    assert a.beat(ALL) == ok(2)
    assert b.join() == ok(3, NOTHING)
    revoking = a.beat(ALL)
    assert (revoking.error, revoking.epoch) == (E.NONE, 2), revoking
    kept = revoking.assigned
    assert kept is not None and kept < ALL and len(kept) == PARTITIONS // 2, kept
    assert b.beat(NOTHING) == ok(3)  # nothing for B while A still holds them
    assert a.beat(kept) == ok(3)
    assert b.beat(NOTHING) == ok(3, ALL - kept)
    assert b.beat(ALL - kept) == ok(3)
    assert a.beat(kept) == ok(3)


def test_a_heartbeat_without_owned_partitions_acknowledges_nothing(scene: Scene) -> None:
    """Kafka 4.4.0 (4.1.1 the same, each epoch one lower): topic_partitions=null states nothing:
    while A must revoke, its null heartbeat still gets the shrunk target (epoch 2), the next one
    nothing (epoch 2): A stays at epoch 2 and B gets nothing, until a heartbeat owning only the
    three moves A to epoch 3.  A "full" heartbeat
    (rebalance timeout, subscription and owned partitions all set) is answered with the assignment
    even when unchanged; the same without owned partitions is not."""
    a, b = scene.member("A"), scene.member("B")
    assert a.join() == ok(2, ALL)
    assert a.beat(None) == ok(2)
    assert a.beat(ALL) == ok(2)
    assert b.join() == ok(3, NOTHING)
    revoking = a.beat(None)
    assert (revoking.epoch, revoking.assigned is not None and len(revoking.assigned)) == (2, 3), revoking
    kept = revoking.assigned
    assert kept is not None
    assert a.beat(None) == ok(2)
    assert b.beat(NOTHING) == ok(3)
    assert a.beat(ALL) == ok(2)
    assert a.beat(None) == ok(2)
    assert b.beat(NOTHING) == ok(3)
    assert a.beat(kept) == ok(3)
    assert b.beat(NOTHING) == ok(3, ALL - kept)
    full: dict[str, Any] = {"rebalance_timeout_ms": REBALANCE_TIMEOUT_MS, "subscribed_topic_names": [scene.topic]}
    assert a.beat(kept, **full) == ok(3, kept)
    assert a.beat(None, **full) == ok(3)


def test_a_member_that_never_releases_is_fenced_after_its_rebalance_timeout(scene: Scene) -> None:
    """Kafka 4.4.0 (4.1.1 the same, each epoch one lower), rebalance_timeout_ms=3000: A keeps
    reporting all six while it should revoke three; its heartbeats answer epoch 2 and nothing
    until, 3 s after it got the shrunk target, the coordinator removes it: its next heartbeat
    answers UNKNOWN_MEMBER_ID "Member <A> is not a member of group <group>." and B's next one all
    six at epoch 4.  A may then rejoin with its own member id (epoch 5, nothing: B holds everything)."""
    a, b = scene.member("A"), scene.member("B")
    assert a.join(rebalance_timeout_ms=3000) == ok(2, ALL)
    assert a.beat(ALL) == ok(2)
    assert b.join(rebalance_timeout_ms=3000) == ok(3, NOTHING)
    started = time.monotonic()
    revoking = a.beat(ALL)
    assert revoking.epoch == 2 and revoking.assigned is not None and len(revoking.assigned) == 3, revoking
    a_answers: list[Beat] = []  # A's heartbeats, the last one the refusal
    b_answers: list[Beat] = []
    fenced_after: float | None = None
    b_owned = NOTHING
    deadline = started + 20
    while time.monotonic() < deadline and not (fenced_after is not None and b_owned):
        time.sleep(0.4)
        if fenced_after is None:
            a_answers.append(a.beat(ALL))
            fenced_after = time.monotonic() - started if a_answers[-1].error else None
        b_answers.append(b.beat(b_owned))
        b_owned = b_answers[-1].assigned or b_owned
    assert a_answers[:-1] == [ok(2)] * (len(a_answers) - 1), a_answers
    assert a_answers[-1:] == [refused(E.UNKNOWN_MEMBER_ID, NOT_A_MEMBER.format("<A>"))], a_answers
    assert fenced_after is not None and fenced_after >= 2.9, fenced_after  # not before its timeout
    assert ok(4, ALL) in b_answers, b_answers
    given = b_answers.index(ok(4, ALL))
    assert b_answers == [ok(3)] * given + [ok(4, ALL)] + [ok(4)] * (len(b_answers) - given - 1), b_answers
    assert a.join(rebalance_timeout_ms=3000) == ok(5, NOTHING)


# -- 4-7: refusals, epochs, leaving, assignors ----------------------------------------------------------


def test_a_join_is_validated_before_anything_else(scene: Scene) -> None:
    """Kafka 4.4.0 answers INVALID_REQUEST to each, with these messages:
    no subscription (names and regex null): "Either SubscribedTopicNames or SubscribedTopicRegex
    must be non-null when (re-)joining."; owned partitions non-empty, or null: "TopicPartitions
    must be empty when (re-)joining."; rebalance_timeout_ms=-1: "RebalanceTimeoutMs must be
    provided in first request."; group id "": "GroupId can't be empty."; epoch -3: "MemberEpoch is
    invalid."; member id "" (v1): "MemberId can't be empty."; instance id "": "InstanceId can't be
    empty."; rack id "": "RackId can't be empty.".  None leaves a trace: a valid join after them
    is the group's first (epoch 2, all six; epoch 1 on Kafka 4.1.1)."""
    owned_on_join = "TopicPartitions must be empty when (re-)joining."
    refusals: dict[str, tuple[dict[str, Any], str]] = {
        "no subscription": ({"subscribed_topic_names": None},
                            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
        "owned partitions": ({"topic_partitions": scene.owned([0])}, owned_on_join),
        "owned partitions null": ({"topic_partitions": None}, owned_on_join),
        "no rebalance timeout": ({"rebalance_timeout_ms": -1}, "RebalanceTimeoutMs must be provided in first request."),
        "empty group id": ({"group_id": ""}, "GroupId can't be empty."),
        "epoch -3": ({"epoch": -3}, "MemberEpoch is invalid."),
        "empty member id": ({"member_id": ""}, "MemberId can't be empty."),
        "empty instance id": ({"instance_id": ""}, "InstanceId can't be empty."),
        "empty rack id": ({"rack_id": ""}, "RackId can't be empty."),
    }
    answers = {case: scene.member("X").join(**fields) for case, (fields, _) in refusals.items()}
    assert answers == {case: refused(E.INVALID_REQUEST, message) for case, (_, message) in refusals.items()}
    assert scene.member("A").join() == ok(2, ALL)


def test_a_heartbeat_at_another_epoch_is_fenced_and_an_unknown_member_refused(scene: Scene) -> None:
    """Kafka 4.4.0 (4.1.1 the same, each epoch one lower), A at epoch 3 (previously 2): epoch 4 or
    13 → FENCED_MEMBER_EPOCH "The consumer group member has a greater member epoch (4) than the one
    known by the group coordinator (3). The member must abandon all its partitions and rejoin.";
    epoch 2 owning a subset of its assignment is accepted (the answer with epoch 3 may have been
    lost: epoch 3, no assignment); epoch 2 owning null or all six → FENCED_MEMBER_EPOCH "...
    smaller member epoch (2) ... (3) ..."; A is still a member after each.  An unknown member id at
    epoch 5, or leaving (-1) → UNKNOWN_MEMBER_ID
    "Member <X> is not a member of group <group>."."""
    a, _, kept, _ = settle(scene)
    assert a.beat(kept, epoch=4) == refused(E.FENCED_MEMBER_EPOCH, fenced("greater", 4, 3))
    assert a.beat(None, epoch=13) == refused(E.FENCED_MEMBER_EPOCH, fenced("greater", 13, 3))
    assert a.beat(kept, epoch=2) == ok(3)
    assert a.beat(None, epoch=2) == refused(E.FENCED_MEMBER_EPOCH, fenced("smaller", 2, 3))
    assert a.beat(ALL, epoch=2) == refused(E.FENCED_MEMBER_EPOCH, fenced("smaller", 2, 3))
    assert a.beat(kept) == ok(3)
    stranger = scene.member("X")
    assert stranger.beat(None, epoch=6) == refused(E.UNKNOWN_MEMBER_ID, NOT_A_MEMBER.format("<X>"))
    assert stranger.leave() == refused(E.UNKNOWN_MEMBER_ID, NOT_A_MEMBER.format("<X>"))


def test_a_member_that_leaves_gives_the_others_its_partitions(scene: Scene) -> None:
    """Kafka 4.4.0: A's leave (epoch -1) answers epoch -1, A's member id, no heartbeat interval and
    no assignment; B's next heartbeat gets all six at epoch 4 (3 on Kafka 4.1.1).  A's heartbeats after that, or a
    second leave, answer UNKNOWN_MEMBER_ID "Member <A> is not a member of group <group>."."""
    a, b, kept_a, kept_b = settle(scene)
    assert a.leave() == ok(LEAVE_EPOCH)
    assert b.beat(kept_b) == ok(4, ALL)
    assert b.beat(ALL) == ok(4)
    assert a.beat(kept_a, epoch=3) == refused(E.UNKNOWN_MEMBER_ID, NOT_A_MEMBER.format("<A>"))
    assert a.leave() == refused(E.UNKNOWN_MEMBER_ID, NOT_A_MEMBER.format("<A>"))


def test_a_static_member_comes_back_with_a_new_member_id_to_the_same_partitions(scene: Scene) -> None:
    """Kafka 4.4.0, A and B static (instance ids "a", "b"): C joining as "a" while A is there →
    UNRELEASED_INSTANCE_ID "Static member <C> with instance id a cannot join the group because the
    instance id is owned by <A> member.".  A's leave at -2 without its instance id → INVALID_REQUEST
    "InstanceId can't be null."; with it: epoch -2 (again: the same), and B sees no change.  A's old
    id at epoch 2 is then FENCED_MEMBER_EPOCH (greater than -2).  A2, a new member id with instance
    "a", joins at epoch 3 (2 on Kafka 4.1.1) with A's partitions at once; B sees no change; A's old id is now
    UNKNOWN_MEMBER_ID.  Leaving as an unknown instance → UNKNOWN_MEMBER_ID "Instance id z is unknown."."""
    a, b, kept_a, kept_b = settle(scene, {"instance_id": "a"}, {"instance_id": "b"})
    owner = "Static member <C> with instance id a cannot join the group because the instance id is owned by {} member."
    assert scene.member("C").join(instance_id="a") == refused(E.UNRELEASED_INSTANCE_ID, owner.format("<A>"))
    assert a.leave(STATIC_LEAVE_EPOCH) == refused(E.INVALID_REQUEST, "InstanceId can't be null.")
    assert a.leave(STATIC_LEAVE_EPOCH, instance_id="a") == ok(STATIC_LEAVE_EPOCH)
    assert a.leave(STATIC_LEAVE_EPOCH, instance_id="a") == ok(STATIC_LEAVE_EPOCH)
    assert b.beat(kept_b) == ok(3)
    assert a.beat(kept_a, epoch=3) == refused(E.FENCED_MEMBER_EPOCH, fenced("greater", 3, -2))
    a2 = scene.member("A2")
    assert a2.join(instance_id="a") == ok(3, kept_a)
    assert b.beat(kept_b) == ok(3)
    assert a2.beat(kept_a) == ok(3)
    assert a.beat(kept_a, epoch=3) == refused(E.UNKNOWN_MEMBER_ID, NOT_A_MEMBER.format("<A>"))
    assert scene.member("C").join(instance_id="a") == refused(E.UNRELEASED_INSTANCE_ID, owner.format("<A2>"))
    assert scene.member("Z").leave(STATIC_LEAVE_EPOCH, instance_id="z") == refused(
        E.UNKNOWN_MEMBER_ID, "Instance id z is unknown.")


def test_a_member_asks_for_a_server_assignor_by_name(scene: Scene) -> None:
    """Kafka 4.4.0: server_assignor "nope" → UNSUPPORTED_ASSIGNOR "ServerAssignor nope is not
    supported. Supported assignors: uniform, range." (and "" the same, naming "").  With "range"
    the handshake runs as with the default and the halves are ranges: {0,1,2} and {3,4,5}."""
    supported = "ServerAssignor {} is not supported. Supported assignors: uniform, range."
    assert scene.member("X").join(server_assignor="nope") == refused(E.UNSUPPORTED_ASSIGNOR, supported.format("nope"))
    assert scene.member("Y").join(server_assignor="") == refused(E.UNSUPPORTED_ASSIGNOR, supported.format(""))
    a, _, kept_a, kept_b = settle(scene, {"server_assignor": "range"}, {"server_assignor": "range"})
    assert {kept_a, kept_b} == {frozenset({0, 1, 2}), frozenset({3, 4, 5})}
    assert a.beat(kept_a) == ok(3)


# -- 8: offsets under member epochs ---------------------------------------------------------------------


def test_offsets_are_committed_and_fetched_at_the_members_epoch(scene: Scene) -> None:
    """Kafka 4.4.0, A at epoch 3 holding three partitions since epoch 2, B at epoch 3 holding the
    other three since epoch 3: OffsetCommit v9 with A's id at epoch 3 → NONE (B's partitions too:
    at the member's own epoch there is no ownership check); at epoch 2 → NONE for A's partitions
    (assigned to it by then: KIP-1251), STALE_MEMBER_EPOCH for all when one of B's is among them;
    B's id at 2 → STALE_MEMBER_EPOCH (it got them at 3); at 1, 4 (greater) or -1 →
    STALE_MEMBER_EPOCH; an unknown member id (at 3 or -1), or "" at -1 (an admin commit) while the
    group has members → UNKNOWN_MEMBER_ID.  Once every member left, "" at -1 → NONE.  Kafka 4.1.1
    took the member's exact epoch only.  OffsetFetch v9 with A's id at 3, or no member id (null)
    at -1 → the offsets; at 2 or 4 → the group's error STALE_MEMBER_EPOCH (the exact epoch still);
    an unknown member id, or "" at -1 → UNKNOWN_MEMBER_ID."""
    a, b, kept_a, kept_b = settle(scene)
    stranger = new_member_id(random.Random())

    def each(code: int, partitions: Collection[int]) -> dict[int, int]:
        return {p: code for p in partitions}

    assert commit(scene, a.member_id, 3, kept_a) == each(E.NONE, kept_a)
    assert commit(scene, a.member_id, 3, kept_b) == each(E.NONE, kept_b)
    assert commit(scene, a.member_id, 2, kept_a) == each(E.NONE, kept_a)
    assert commit(scene, a.member_id, 2, [*kept_a, *kept_b]) == each(E.STALE_MEMBER_EPOCH, [*kept_a, *kept_b])
    for epoch in (1, 4, -1):
        assert commit(scene, a.member_id, epoch, kept_a) == each(E.STALE_MEMBER_EPOCH, kept_a), epoch
    assert commit(scene, b.member_id, 2, kept_b) == each(E.STALE_MEMBER_EPOCH, kept_b)
    for member_id, epoch in ((stranger, 3), (stranger, -1), ("", -1)):
        assert commit(scene, member_id, epoch, kept_a) == each(E.UNKNOWN_MEMBER_ID, kept_a), (member_id, epoch)
    everything = {p: 5 for p in ALL}
    assert fetch(scene, a.member_id, 3) == (E.NONE, everything)
    assert fetch(scene, None, -1) == (E.NONE, everything)
    assert fetch(scene, a.member_id, 2) == (E.STALE_MEMBER_EPOCH, {})
    assert fetch(scene, a.member_id, 4) == (E.STALE_MEMBER_EPOCH, {})
    assert fetch(scene, stranger, 3) == (E.UNKNOWN_MEMBER_ID, {})
    assert fetch(scene, "", -1) == (E.UNKNOWN_MEMBER_ID, {})
    assert (a.leave(), b.leave()) == (ok(LEAVE_EPOCH), ok(LEAVE_EPOCH))
    assert commit(scene, "", -1, ALL) == each(E.NONE, ALL)


# -- 9-12: the group as the other APIs see it -------------------------------------------------------------


def test_describe_shows_the_group_mid_rebalance(scene: Scene) -> None:
    """Kafka 4.4.0, ConsumerGroupDescribe v1.  An unknown group → GROUP_ID_NOT_FOUND "Group <id> not
    found." and group id "" → INVALID_GROUP_ID without a message, both with state "" and epochs 0.
    A alone: Stable, group and assignment epoch 2, assignor "uniform", A at epoch 2 with all six
    assigned and as target.  After B (rack "r1") joined: Reconciling, epochs 3/3; A at epoch 2
    assigned all six, target three; B at epoch 3 assigned nothing, target the other three.  Once A
    got its shrunk target, A's assignment still shows all six: the three it keeps and the three it
    must give up (KAFKA-20431; Kafka 4.1.1 showed the three only); once A released, A is at epoch 3
    with its three and the group still Reconciling; once B got its three: Stable.  Every member:
    client id as sent, host "/127.0.0.1", subscribed [topic], regex "", member type 1.  After both
    left: Empty, group epoch 5 and assignment epoch 5 (an empty group's target catches up,
    KAFKA-20442; Kafka 4.1.1: 4 and 2), no members."""
    try:
        from groupclient.protocol.consumer_group_describe import (
            ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
        )
    except ImportError as exc:
        pytest.fail(f"no ConsumerGroupDescribe classes (API 69) yet: {exc}")
    require_api(scene.bootstrap, CONSUMER_GROUP_DESCRIBE)
    classes = (ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse)
    unknown = unique("unknown")
    scene.names[unknown] = "<unknown>"
    missing = {scene.plain(g.group_id): (g.error_code, scene.plain(g.error_message), g.group_state, g.group_epoch,
                                         g.assignment_epoch, g.members)
               for g in describe(scene, classes, [unknown, ""])}
    assert missing == {"<unknown>": (E.GROUP_ID_NOT_FOUND, "Group <unknown> not found.", "", 0, 0, []),
                       "": (E.INVALID_GROUP_ID, None, "", 0, 0, [])}, missing  # Kafka answers "" first

    def now() -> tuple[tuple[Any, ...], dict[str, Described]]:
        [group] = describe(scene, classes, [scene.group])
        return described(scene, group)

    a, b = scene.member("A"), scene.member("B")
    assert a.join() == ok(2, ALL)
    assert now() == (("Stable", 2, 2, "uniform"), {"<A>": Described(2, ALL, ALL)})
    assert a.beat(ALL) == ok(2)
    assert b.join(rack_id="r1") == ok(3, NOTHING)
    state, members = now()
    kept = members["<A>"].target
    assert len(kept) == 3 and (state, members) == (("Reconciling", 3, 3, "uniform"), {
        "<A>": Described(2, ALL, kept), "<B>": Described(3, NOTHING, ALL - kept, rack_id="r1")})
    assert a.beat(ALL) == ok(2, kept)
    assert now()[1]["<A>"] == Described(2, ALL, kept)  # the three it gives up still listed
    assert a.beat(kept) == ok(3)
    assert now() == (("Reconciling", 3, 3, "uniform"), {
        "<A>": Described(3, kept, kept), "<B>": Described(3, NOTHING, ALL - kept, rack_id="r1")})
    assert b.beat(NOTHING) == ok(3, ALL - kept)
    assert now() == (("Stable", 3, 3, "uniform"), {
        "<A>": Described(3, kept, kept), "<B>": Described(3, ALL - kept, ALL - kept, rack_id="r1")})
    assert (a.leave(), b.leave()) == (ok(LEAVE_EPOCH), ok(LEAVE_EPOCH))
    assert now() == (("Empty", 5, 5, "uniform"), {})


def test_list_groups_and_describe_groups_see_a_consumer_group(scene: Scene) -> None:
    """Kafka 4.4.0, ListGroups v5: the group is listed as protocol type "consumer", type "consumer",
    state "Stable" with no filter, types ["consumer"] (or "Consumer": case does not matter) and
    states ["Stable"] (or "stable"); not with types ["classic"] or an unknown type, nor states
    ["Reconciling"] -- until B joined, when it is listed as "Reconciling".  DescribeGroups: v5
    answers no error and state "Dead", no protocol, no members (as for an unknown group); v6
    GROUP_ID_NOT_FOUND "Group <group> is not a classic group."."""
    a = scene.member("A")
    assert a.join() == ok(2, ALL)
    stable = [("consumer", "Stable", "consumer")]
    cases = {"none": ([], []), "consumer": (["consumer"], []), "Consumer": (["Consumer"], []),
             "classic": (["classic"], []), "unknown type": (["bogus"], []), "Stable": ([], ["Stable"]),
             "stable": ([], ["stable"]), "Reconciling": ([], ["Reconciling"])}
    found = {case: listed(scene, *filters) for case, filters in cases.items()}
    assert found == {"none": stable, "consumer": stable, "Consumer": stable, "classic": [], "unknown type": [],
                     "Stable": stable, "stable": stable, "Reconciling": []}, found
    assert a.beat(ALL) == ok(2)
    assert scene.member("B").join() == ok(3, NOTHING)
    assert listed(scene, ["consumer"], ["Reconciling"]) == [("consumer", "Reconciling", "consumer")]
    answers = {}
    for version in (5, 6):
        [group] = scene.wire.call(DescribeGroupsRequest(version=version, groups=[scene.group],
                                                        include_authorized_operations=False),
                                  DescribeGroupsResponse).groups
        answers[version] = (group.error_code, scene.plain(getattr(group, "error_message", None)), group.group_id,
                            group.group_state, group.protocol_type, group.protocol_data, group.members)
    assert answers == {5: (E.NONE, None, scene.group, "Dead", "", "", []),
                       6: (E.GROUP_ID_NOT_FOUND, "Group <group> is not a classic group.", scene.group, "Dead", "",
                           "", [])}, answers


def test_a_classic_member_joins_a_consumer_group(scene: Scene) -> None:
    """Kafka 4.4.0 (group.consumer.migration.policy at its default, bidirectional): a JoinGroup v9
    to the consumer group of A answers MEMBER_ID_REQUIRED with a member id, then, with it: no error,
    generation 3 (the group epoch), protocol "consumer"/"range", leader "" and no members.  A's next
    heartbeat gets its shrunk target (three, epoch 2).  The classic member's SyncGroup answers no
    error and an empty assignment (A still holds them), its Heartbeat no error; once A released,
    its Heartbeat answers REBALANCE_IN_PROGRESS; it joins again (generation 3) and its SyncGroup
    gets the other three.  When it leaves (LeaveGroup v5) A's next heartbeat gets all six at
    epoch 4.  (Kafka 4.1.1: each epoch one lower.)"""
    a = scene.member("A")
    assert a.join() == ok(2, ALL)
    assert a.beat(ALL) == ok(2)
    joined = classic_member(scene, scene.group)
    assert (joined.error_code, joined.generation_id, joined.protocol_type, joined.protocol_name, joined.leader,
            joined.members, joined.skip_assignment) == (E.NONE, 3, "consumer", "range", "", [], False), joined
    revoking = a.beat(ALL)
    kept = revoking.assigned
    assert revoking.epoch == 2 and kept is not None and len(kept) == 3, revoking
    assert synced(scene, classic_sync(scene, scene.group, joined, {})) == (E.NONE, "consumer", "range", NOTHING)
    assert classic_heartbeat(scene, scene.group, joined) == E.NONE
    assert a.beat(kept) == ok(3)
    assert classic_heartbeat(scene, scene.group, joined) == E.REBALANCE_IN_PROGRESS
    again = classic_join(scene, scene.group, joined.member_id)
    assert (again.error_code, again.generation_id, again.leader, again.members) == (E.NONE, 3, "", []), again
    assert synced(scene, classic_sync(scene, scene.group, again, {})) == (E.NONE, "consumer", "range", ALL - kept)
    left = scene.wire.call(LeaveGroupRequest(version=5, group_id=scene.group, members=[
        LeaveGroupRequest.MemberIdentity(member_id=joined.member_id, group_instance_id=None, reason=None)]),
        LeaveGroupResponse)
    assert (left.error_code, [m.error_code for m in left.members]) == (E.NONE, [E.NONE]), left
    assert a.beat(kept) == ok(4, ALL)


def test_a_consumer_member_joins_a_classic_group(scene: Scene) -> None:
    """Kafka 4.4.0 (migration policy bidirectional): a classic group of one member (protocol type
    "consumer", generation 1, all six by its own SyncGroup) is upgraded when X joins by
    ConsumerGroupHeartbeat: X gets epoch 2 and nothing (the classic member holds them), and the
    classic member's next Heartbeat answers REBALANCE_IN_PROGRESS.  A classic group of another
    protocol type ("connect") is not: X's join answers GROUP_ID_NOT_FOUND "Cannot upgrade classic
    group <group> to consumer group because the group does not use the consumer embedded
    protocol.".  Nor is one whose assignment carries user data (a custom assignor's): X's join
    answers GROUP_ID_NOT_FOUND "Cannot upgrade classic group <group> to consumer group because an
    unsupported custom assignor is in use. Please refer to the documentation or switch to a
    default assignor before re-attempting the upgrade."."""
    joined = classic_member(scene, scene.group)
    assert (joined.error_code, joined.generation_id, joined.leader == joined.member_id) == (E.NONE, 1, True), joined
    synced_all = classic_sync(scene, scene.group, joined, {joined.member_id: ALL})
    assert synced(scene, synced_all) == (E.NONE, "consumer", "range", ALL)
    x = scene.member("X")
    assert x.join() == ok(2, NOTHING)
    assert classic_heartbeat(scene, scene.group, joined) == E.REBALANCE_IN_PROGRESS
    assert x.beat(NOTHING) == ok(2)

    group = unique("connect")
    connect = Scene(scene.bootstrap, scene.topic, scene.topic_id, group, coordinator_of(scene.bootstrap, group))
    try:
        other = classic_member(connect, connect.group, protocol_type="connect")
        assert other.error_code == E.NONE, other
        assert connect.member("X").join() == refused(E.GROUP_ID_NOT_FOUND, (
            "Cannot upgrade classic group <group> to consumer group because the group does not use the consumer "
            "embedded protocol."))
    finally:
        connect.wire.close()
    group = unique("custom")
    custom = Scene(scene.bootstrap, scene.topic, scene.topic_id, group, coordinator_of(scene.bootstrap, group))
    try:
        leader = classic_member(custom, custom.group)
        assert synced(custom, classic_sync(custom, custom.group, leader, {leader.member_id: ALL}, b"mine"))[0] == E.NONE
        assert custom.member("X").join() == refused(E.GROUP_ID_NOT_FOUND, (
            "Cannot upgrade classic group <group> to consumer group because an unsupported custom assignor is in use. "
            "Please refer to the documentation or switch to a default assignor before re-attempting the upgrade."))
        assert classic_heartbeat(custom, custom.group, leader) == E.NONE  # still the classic group it was
    finally:
        custom.wire.close()


def test_describe_configs_of_a_group_answers_the_brokers_group_settings(scene: Scene) -> None:
    """Kafka 4.4.0, DescribeConfigs v4, resource type GROUP (32): all keys → the 21 of
    KAFKA_GROUP_CONFIGS (the three consumer.* from the broker's settings, STATIC_BROKER_CONFIG; the
    share.*, streams.* and errors.* defaults, DEFAULT_CONFIG), read-write, no error and error
    message ""; the two consumer keys by name → those two; an unknown key → none; an unknown group
    → the same 21; group "" → INVALID_REQUEST "Group name must not be empty".  (Kafka 4.1.1: ten
    keys, each DEFAULT_CONFIG.)"""
    assert scene.member("A").join() == ok(2, ALL)
    consumer_keys = ["consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"]
    assert group_configs(scene.bootstrap, scene.group, None) == (E.NONE, "", KAFKA_GROUP_CONFIGS)
    assert group_configs(scene.bootstrap, scene.group, consumer_keys) == (
        E.NONE, "", {k: KAFKA_GROUP_CONFIGS[k] for k in consumer_keys})
    assert group_configs(scene.bootstrap, scene.group, ["nope.ms"]) == (E.NONE, "", {})
    assert group_configs(scene.bootstrap, unique("unknown"), None) == (E.NONE, "", KAFKA_GROUP_CONFIGS)
    assert group_configs(scene.bootstrap, "", None) == (E.INVALID_REQUEST, "Group name must not be empty", {})
