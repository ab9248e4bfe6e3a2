"""groupclient.admin with consumer-protocol (KIP-848) groups, without sockets: which describe a
coordinator is asked (DescribeGroups, then ConsumerGroupDescribe for a group that is not classic,
and that one first once a group is known to be a consumer group), what is read from the answer,
and the tables, JSON, kafka-consumer-groups.sh columns and watch lines it makes."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kafka.protocol.admin.groups import DescribeGroupsResponse

from groupclient import TopicPartition
from groupclient.admin import BrokerAnswerError, Coordinator, GroupAdmin, GroupDescription, GroupNotFoundError, Member
from groupclient.admin import PartitionLag
from groupclient.admin.render import GroupWatch, render_description, render_kafka
from groupclient.error_codes import ErrorCode
from groupclient.protocol.consumer_group_describe import ConsumerGroupDescribeResponse
from tests.unit.test_admin_groups import TIMER, ScriptedConnection, _find, _list_offsets, _offset_fetch_v8, tps

COORD = Coordinator(0, "127.0.0.1", 9092)
CGD = 69  # ConsumerGroupDescribe
Described = ConsumerGroupDescribeResponse.DescribedGroup
CMember = Described.Member
Assignment = CMember.Assignment
TOPIC_ID = uuid.UUID(int=7)


def cmember(member_id: str, current: str, target: str | None = None, epoch: int = 3, client: str = "c",
            instance: str | None = None, topics: tuple[str, ...] = ("t",), regex: str | None = None) -> Member:
    return Member(member_id, instance, client, "/127.0.0.1", tps(current) if current else (),
                  member_epoch=epoch, subscribed_topics=topics, subscribed_regex=regex,
                  target_assignment=tps(current if target is None else target) if (target or current) else ())


def cgroup(state: str, *members: Member, epoch: int = 3, assignment_epoch: int | None = None,
           offsets: tuple[PartitionLag, ...] = (), assignor: str = "uniform") -> GroupDescription:
    return GroupDescription("shop", state, "consumer", assignor, COORD, tuple(members), offsets,
                            group_type="consumer", group_epoch=epoch,
                            assignment_epoch=epoch if assignment_epoch is None else assignment_epoch, assignor=assignor)


# -- the model -------------------------------------------------------------------------------
def test_a_member_whose_current_assignment_differs_from_its_target_is_reconciling() -> None:
    assert not cmember("a", "t:0,1").reconciling
    assert cmember("a", "t:0,1", "t:0").reconciling
    assert cmember("b", "", "t:2").reconciling
    assert not cmember("c", "").reconciling  # nothing, and nothing to get
    classic = Member("m", None, "c", "h", tps("t:0"))
    assert not classic.reconciling and classic.target_assignment is None
    # partitions pending revocation are not in the current assignment: the member's epoch, behind
    # the target's until it has revoked them, says it is not done
    behind = Member("a", None, "c", "h", tps("t:0"), member_epoch=1, target_assignment=tps("t:0"), target_epoch=2)
    assert behind.reconciling
    assert not Member("a", None, "c", "h", tps("t:0"), member_epoch=2, target_assignment=tps("t:0"),
                      target_epoch=2).reconciling
    assert not Member("a", "i", "c", "h", tps("t:0"), member_epoch=-2, target_assignment=tps("t:0"),
                      target_epoch=2).reconciling  # a static member that left: its partitions kept for it


def test_consumer_group_json_adds_its_fields_and_keeps_the_classic_keys() -> None:
    d = cgroup("Reconciling", cmember("a", "t:0,1", "t:0", instance="i-a"), cmember("b", "", "t:1", epoch=2),
               epoch=4, assignment_epoch=4, offsets=(PartitionLag("t", 0, 1, 3, "a"),))
    assert d.to_json() == {
        "group_id": "shop", "state": "Reconciling", "protocol_type": "consumer", "protocol": "uniform",
        "type": "consumer", "assignor": "uniform", "group_epoch": 4, "assignment_epoch": 4,
        "coordinator": {"node_id": 0, "host": "127.0.0.1", "port": 9092},
        "members": [
            {"member_id": "a", "group_instance_id": "i-a", "client_id": "c", "client_host": "/127.0.0.1",
             "assignment": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}],
             "member_epoch": 3, "rack_id": None, "subscribed_topics": ["t"], "subscribed_topic_regex": None,
             "target_assignment": [{"topic": "t", "partition": 0}], "reconciling": True, "member_type": None},
            {"member_id": "b", "group_instance_id": None, "client_id": "c", "client_host": "/127.0.0.1",
             "assignment": [], "member_epoch": 2, "rack_id": None, "subscribed_topics": ["t"],
             "subscribed_topic_regex": None, "target_assignment": [{"topic": "t", "partition": 1}],
             "reconciling": True, "member_type": None},
        ],
        "offsets": [{"topic": "t", "partition": 0, "committed_offset": 1, "log_end_offset": 3, "lag": 2,
                     "member_id": "a"}],
        "total_lag": 2,
    }
    # a classic group says its type, and nothing else new
    classic = GroupDescription("g", "Stable", "consumer", "range", COORD, (Member("m", None, "c", "h", ()),))
    assert classic.to_json()["type"] == "classic"
    assert set(classic.to_json()) == {"group_id", "state", "protocol_type", "protocol", "type", "coordinator",
                                      "members", "offsets", "total_lag"}
    assert set(classic.to_json()["members"][0]) == {"member_id", "group_instance_id", "client_id", "client_host",
                                                    "assignment"}


# -- text ------------------------------------------------------------------------------------
def test_render_consumer_group_description_exact() -> None:
    offsets = (PartitionLag("orders", 0, 4, 10, "m-1"), PartitionLag("orders", 1, None, 5, "m-1"),
               PartitionLag("orders", 2, 7, 7, None))
    d = cgroup("Reconciling",
               cmember("m-1", "orders:0,1", "orders:0", epoch=5, client="app", topics=("orders",)),
               cmember("m-2", "", "orders:1,2", epoch=4, client="app", instance="i-2", topics=(), regex="ord.*"),
               epoch=5, assignment_epoch=5, offsets=offsets)
    assert render_description(d) == "\n".join([
        "GROUP  TYPE      STATE        ASSIGNOR  GROUP-EPOCH  ASSIGNMENT-EPOCH  MEMBERS  COORDINATOR",
        "shop   consumer  Reconciling  uniform   5            5                 2        0 (127.0.0.1:9092)",
        "",
        "MEMBER-ID  GROUP-INSTANCE-ID  CLIENT-ID  CLIENT-HOST  MEMBER-EPOCH  SUBSCRIBED  ASSIGNMENT   TARGET-ASSIGNMENT",
        "m-1        -                  app        /127.0.0.1   5             orders      orders[0-1]  orders[0] (reconciling)",
        "m-2        i-2                app        /127.0.0.1   4             /ord.*/     (none)       orders[1-2] (reconciling)",
        "",
        "TOPIC   PARTITION  COMMITTED-OFFSET  LOG-END-OFFSET  LAG  MEMBER-ID",
        "orders  0          4                 10              6    m-1",
        "orders  1          -                 5               -    m-1",
        "orders  2          7                 7               0    -",
        "",
        "total lag: 6",
    ])


def test_render_a_stable_consumer_group_marks_no_member() -> None:
    d = cgroup("Stable", cmember("m-1", "t:0", topics=("t", "u")))
    members = render_description(d).split("\n\n")[1].splitlines()
    assert members[1].split() == ["m-1", "-", "c", "/127.0.0.1", "3", "t,u", "t[0]", "t[0]"]


def test_kafka_columns_of_a_consumer_group_as_kafka_consumer_groups_prints_them() -> None:
    """Rows per member with partitions, the member with the most first, then partitions only
    committed; a member with nothing (still reconciling) has no row; Kafka warns of a rebalance."""
    offsets = (PartitionLag("orders", 0, 4, 10, "small"), PartitionLag("orders", 1, None, 5, "big"),
               PartitionLag("orders", 2, None, 7, "big"), PartitionLag("orders", 3, 1, 1, None))
    d = cgroup("Reconciling", cmember("small", "orders:0"), cmember("big", "orders:1,2"),
               cmember("new", "", "orders:3"), offsets=offsets)
    lines = render_kafka(d).splitlines()
    assert lines[:3] == ["", "Warning: Consumer group 'shop' is rebalancing.", ""]
    assert lines[3].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                "CONSUMER-ID", "HOST", "CLIENT-ID"]
    assert [line.split() for line in lines[4:]] == [
        ["shop", "orders", "1", "-", "5", "-", "big", "/127.0.0.1", "c"],
        ["shop", "orders", "2", "-", "7", "-", "big", "/127.0.0.1", "c"],
        ["shop", "orders", "0", "4", "10", "6", "small", "/127.0.0.1", "c"],
        ["shop", "orders", "3", "1", "1", "0", "-", "-", "-"],
    ]
    stable = render_kafka(cgroup("Stable", cmember("small", "orders:0"), offsets=offsets[:1])).splitlines()
    assert stable[0] == "" and stable[1].startswith("GROUP ") and len(stable) == 3


# -- watch -----------------------------------------------------------------------------------
def test_watch_a_consumer_group_shows_epochs_and_members_reconciling() -> None:
    watch = GroupWatch("shop")
    assert watch.update(cgroup("Stable", cmember("a", "t:0,1,2,3"), epoch=2)) == [
        "state Stable, type consumer, assignor uniform, group epoch 2, assignment epoch 2, 1 member",
        "member joined: a (client c, host /127.0.0.1, epoch 3)",
        "assignment a: t[0-3]",
    ]
    assert watch.update(cgroup("Stable", cmember("a", "t:0,1,2,3"), epoch=2)) == []
    # b joins: a new target; a still owns what b is to get
    joined = cgroup("Reconciling", cmember("a", "t:0,1,2,3", "t:0,1", epoch=3),
                    cmember("b", "", "t:2,3", epoch=3), epoch=3)
    assert watch.update(joined) == [
        "state Stable -> Reconciling",
        "group epoch 2 -> 3",
        "assignment epoch 2 -> 3",
        "member joined: b (client c, host /127.0.0.1, epoch 3)",
        "reconciling a: t[0-3] -> t[0-1]",
        "assignment b: (none)",
        "reconciling b: (none) -> t[2-3]",
    ]
    # a gave up t[2-3] (epoch 4), b not yet given them
    assert watch.update(cgroup("Reconciling", cmember("a", "t:0,1", epoch=4), cmember("b", "", "t:2,3", epoch=3),
                               epoch=3, assignment_epoch=3)) == [
        "member epoch a: 3 -> 4", "assignment a: t[0-3] -> t[0-1]", "reconciled a: t[0-1]"]
    assert watch.update(cgroup("Stable", cmember("a", "t:0,1", epoch=4), cmember("b", "t:2,3", epoch=4),
                               epoch=3)) == [
        "state Reconciling -> Stable", "member epoch b: 3 -> 4", "assignment b: (none) -> t[2-3]",
        "reconciled b: t[2-3]"]
    assert watch.update(cgroup("Stable", cmember("b", "t:2,3", epoch=4), epoch=4, assignor="range")) == [
        "assignor uniform -> range", "group epoch 3 -> 4", "assignment epoch 3 -> 4", "member left: a"]


def test_watch_a_member_giving_up_partitions_is_reconciling_until_its_epoch_moves() -> None:
    """The coordinator leaves partitions pending revocation out of the current assignment at
    once; the member's epoch stays behind until it has revoked them."""
    def look(current: str, epoch: int, target_epoch: int) -> GroupDescription:
        a = Member("a", None, "c", "/h", tps(current), member_epoch=epoch, subscribed_topics=("t",),
                   target_assignment=tps("t:0,1") if target_epoch == 2 else tps("t:0,1,2"), target_epoch=target_epoch)
        return cgroup("Stable" if epoch == target_epoch else "Reconciling", a, epoch=target_epoch)

    watch = GroupWatch("shop")
    watch.update(look("t:0,1,2", 1, 1))
    assert watch.update(look("t:0,1,2", 1, 2)) == [
        "state Stable -> Reconciling", "group epoch 1 -> 2", "assignment epoch 1 -> 2",
        "reconciling a: t[0-2] -> t[0-1]"]
    assert watch.update(look("t:0,1", 1, 2)) == ["assignment a: t[0-2] -> t[0-1]"]  # still reconciling
    assert watch.update(look("t:0,1", 2, 2)) == [
        "state Reconciling -> Stable", "member epoch a: 1 -> 2", "reconciled a: t[0-1]"]
    fresh = GroupWatch("shop")
    assert fresh.update(look("t:0,1", 1, 2))[-1] == "reconciling a: t[0-1] at epoch 1, target epoch 2"


def test_watch_a_group_that_changes_type() -> None:
    watch = GroupWatch("shop")
    watch.update(GroupDescription("shop", "Stable", "consumer", "range", COORD, (Member("a", None, "c", "h", ()),)))
    lines = watch.update(cgroup("Stable", cmember("a", "t:0"), epoch=1))
    assert lines[:2] == ["type classic -> consumer", "assignor range -> uniform"], lines


# -- which describe is asked -----------------------------------------------------------------
def _not_classic(version: int) -> Callable[[Any], Any]:
    """Kafka 4's DescribeGroups of a consumer-protocol group: from v6 GROUP_ID_NOT_FOUND and why;
    before, Dead with no members."""
    def answer(req: Any) -> Any:
        assert req.version == version
        error = ErrorCode.GROUP_ID_NOT_FOUND if version >= 6 else 0
        return DescribeGroupsResponse(version=version, throttle_time_ms=0, groups=[
            DescribeGroupsResponse.DescribedGroup(
                error_code=error, error_message="Group shop is not a classic group." if error else None,
                group_id="shop", group_state="Dead", protocol_type="", protocol_data="", members=[],
                authorized_operations=None)])
    return answer


def _assignment(spec: str) -> Any:
    parts = tps(spec) if spec else ()
    by_topic: dict[str, list[int]] = {}
    for tp in parts:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return Assignment(topic_partitions=[Assignment.TopicPartitions(topic_id=TOPIC_ID, topic_name=t, partitions=p)
                                        for t, p in by_topic.items()])


def _consumer_describe(error: int = 0, state: str = "Stable", regex: str | None = "") -> Callable[[Any], Any]:
    def answer(req: Any) -> Any:
        assert list(req.group_ids) == ["shop"] and req.include_authorized_operations is False
        members = [] if error else [
            CMember(member_id="m-1", instance_id="i-1", rack_id="r1", member_epoch=7, client_id="app",
                    client_host="/127.0.0.1", subscribed_topic_names=["t"], subscribed_topic_regex=regex,
                    assignment=_assignment("t:1,0"), target_assignment=_assignment("t:0"), member_type=1),
            CMember(member_id="m-2", instance_id=None, rack_id=None, member_epoch=6, client_id="app",
                    client_host="/127.0.0.2", subscribed_topic_names=[], subscribed_topic_regex="t.*",
                    assignment=_assignment(""), target_assignment=_assignment("t:1,2"), member_type=0)]
        return ConsumerGroupDescribeResponse(version=req.version, throttle_time_ms=0, groups=[Described(
            error_code=error, error_message="Group shop not found." if error else None, group_id="shop",
            group_state="" if error else state, group_epoch=8, assignment_epoch=7, assignor_name="uniform",
            members=members, authorized_operations=-(2**31))])
    return answer


@pytest.mark.parametrize("describe_version", [5, 6])
def test_a_consumer_group_is_described_with_consumer_group_describe(describe_version: int) -> None:
    conn = ScriptedConnection({10: 4, 15: describe_version, CGD: 1, 9: 8, 2: 7}, {
        10: _find, 15: _not_classic(describe_version), CGD: _consumer_describe(), 9: _offset_fetch_v8,
        2: _list_offsets})
    conn.leaders = {("t", 0): 1, ("t", 1): 1, ("t", 2): 1}
    admin = GroupAdmin(conn)  # type: ignore[arg-type]
    d = admin.describe_group("shop", TIMER)
    assert (d.group_type, d.state, d.protocol_type, d.protocol, d.assignor) == (
        "consumer", "Stable", "consumer", "uniform", "uniform")
    assert (d.group_epoch, d.assignment_epoch, d.coordinator) == (8, 7, Coordinator(1, "h1", 2))
    first, second = d.members
    assert (first.member_id, first.group_instance_id, first.client_id, first.client_host, first.rack_id) == (
        "m-1", "i-1", "app", "/127.0.0.1", "r1")
    assert (first.member_epoch, first.subscribed_topics, first.subscribed_regex) == (7, ("t",), None)
    assert (first.assignment, first.target_assignment, first.reconciling) == (tps("t:0,1"), tps("t:0"), True)
    assert (second.assignment, second.target_assignment, second.subscribed_regex) == ((), tps("t:1,2"), "t.*")
    assert (first.member_type, second.member_type) == ("consumer", "classic")  # v1's MemberType
    # lag of the current assignment, and of what was committed (t-2, assigned to no one yet)
    assert [(p.partition, p.committed, p.end, p.member_id) for p in d.offsets] == [
        (0, None, 100, "m-1"), (1, None, 101, "m-1"), (2, 90, 102, None)]
    asked = [r.API_KEY for _, r in conn.sent]
    assert asked == [10, 15, CGD, 9, 2]
    # the group is now known to be a consumer group: ConsumerGroupDescribe straight away
    conn.sent.clear()
    admin.describe_group("shop", TIMER, offsets=False)
    assert [r.API_KEY for _, r in conn.sent] == [10, CGD]


def test_a_consumer_group_that_became_classic_is_described_again_with_describe_groups() -> None:
    from tests.unit.test_admin_groups import ASSIGNED, _describe

    answers: dict[int, Callable[[Any], Any]] = {10: _find, 15: _not_classic(6), CGD: _consumer_describe()}
    conn = ScriptedConnection({10: 4, 15: 6, CGD: 1}, answers)
    admin = GroupAdmin(conn)  # type: ignore[arg-type]
    assert admin.describe_group("shop", TIMER, offsets=False).group_type == "consumer"
    answers[CGD] = _consumer_describe(ErrorCode.GROUP_ID_NOT_FOUND)
    answers[15] = _describe("Stable", ASSIGNED)
    conn.sent.clear()
    d = admin.describe_group("shop", TIMER, offsets=False)
    assert d.group_type == "classic" and d.protocol == "range" and d.group_epoch is None
    assert [r.API_KEY for _, r in conn.sent] == [10, CGD, 15]


@pytest.mark.parametrize("error", [ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNSUPPORTED_VERSION])
def test_a_group_neither_describe_knows_is_not_found(error: int) -> None:
    conn = ScriptedConnection({10: 4, 15: 6, CGD: 0}, {10: _find, 15: _not_classic(6),
                                                        CGD: _consumer_describe(error)})
    with pytest.raises(GroupNotFoundError, match="group shop not found"):
        GroupAdmin(conn).describe_group("shop", TIMER)  # type: ignore[arg-type]


def test_a_broker_without_consumer_group_describe_is_not_asked() -> None:
    conn = ScriptedConnection({10: 4, 15: 5}, {10: _find, 15: _not_classic(5)})
    with pytest.raises(GroupNotFoundError):
        GroupAdmin(conn).describe_group("shop", TIMER)  # type: ignore[arg-type]
    assert [r.API_KEY for _, r in conn.sent] == [10, 15]


def test_consumer_group_describe_errors_are_reported() -> None:
    conn = ScriptedConnection({10: 4, 15: 6, CGD: 1}, {10: _find, 15: _not_classic(6),
                                                        CGD: _consumer_describe(ErrorCode.GROUP_AUTHORIZATION_FAILED)})
    with pytest.raises(BrokerAnswerError, match="ConsumerGroupDescribe shop: GROUP_AUTHORIZATION_FAILED"):
        GroupAdmin(conn).describe_group("shop", TIMER)  # type: ignore[arg-type]


def test_an_empty_regex_is_no_regex() -> None:
    """The embedded coordinator sends "" where Kafka sends null: both mean no pattern."""
    conn = ScriptedConnection({10: 4, 15: 6, CGD: 1}, {10: _find, 15: _not_classic(6),
                                                        CGD: _consumer_describe(regex=None)})
    d = GroupAdmin(conn).describe_group("shop", TIMER, offsets=False)  # type: ignore[arg-type]
    assert d.members[0].subscribed_regex is None and d.members[0].to_json()["subscribed_topic_regex"] is None


def test_assigned_maps_each_owned_partition_to_its_member() -> None:
    d = cgroup("Stable", cmember("a", "t:0"))
    assert d.assigned() == {TopicPartition("t", 0): "a"}
