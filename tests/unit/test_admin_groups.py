"""groupclient.admin without sockets: tables, partition lists, JSON, the watch's change lines,
the requests built for each negotiated version, and the argument validators."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.protocol.admin.groups import DescribeGroupsResponse, ListGroupsResponse
from kafka.protocol.consumer.group import OffsetFetchResponse
from kafka.protocol.consumer.offsets import ListOffsetsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorResponse

from groupclient import TopicPartition
from groupclient.admin import (
    AdminError, BrokerAnswerError, Coordinator, GroupAdmin, GroupDescription, GroupNotFoundError, ListedGroup,
    Member, PartitionLag,
)
from groupclient.admin.client import check
from groupclient.admin.groups import _member
from groupclient.admin.render import GroupWatch, partitions, render_description, render_list, table
from groupclient.clock import FakeClock, Timer
from groupclient.cli_args import bootstrap_servers, int_at_least, log_level, port, positive_float, topic
from groupclient.protocol.consumer_protocol import Assignment, encode_assignment
from groupclient.error_codes import ErrorCode


def tps(spec: str) -> tuple[TopicPartition, ...]:
    """``"a:0,1 b:2"`` -> the partitions."""
    return tuple(TopicPartition(t, int(p)) for part in spec.split() for t, ps in [part.split(":")]
                 for p in ps.split(","))


COORD = Coordinator(0, "127.0.0.1", 9092)


def member(member_id: str, assignment: str | None = "", client: str = "c", instance: str | None = None) -> Member:
    return Member(member_id, instance, client, "/127.0.0.1", None if assignment is None else tps(assignment))


def group(state: str, *members: Member, protocol: str = "range", offsets: tuple[PartitionLag, ...] = ()) -> GroupDescription:
    return GroupDescription("shop", state, "consumer", protocol, COORD, tuple(members), offsets)


# -- tables and partition lists --------------------------------------------------------------
def test_table_aligns_columns_and_shows_none_as_dash() -> None:
    assert table(["A", "LONGER"], [["x", None], ["yyyy", 3]]).splitlines() == [
        "A     LONGER", "x     -", "yyyy  3"]


def test_partitions_are_compact_ranges_per_topic() -> None:
    assert partitions(tps("b:3 a:0,1,2,5,7,8")) == "a[0-2,5,7-8] b[3]"
    assert partitions([TopicPartition("a", 1), TopicPartition("a", 1)]) == "a[1]"
    assert partitions(()) == "(none)"
    assert partitions(None) == "-"


def test_render_list() -> None:
    assert render_list([]) == "no groups"
    rows = [ListedGroup("a", "consumer", "Stable", "classic", 1), ListedGroup("offsets-only", "", None, None, 2)]
    assert render_list(rows).splitlines() == [
        "GROUP         PROTOCOL-TYPE  STATE   TYPE     COORDINATOR",
        "a             consumer       Stable  classic  1",
        "offsets-only  -              -       -        2",
    ]
    assert rows[1].to_json() == {"group_id": "offsets-only", "protocol_type": "", "state": None, "type": None,
                                 "coordinator": 2}


def test_lag_is_end_minus_committed_or_unknown() -> None:
    assert PartitionLag("t", 0, 4, 10, None).lag == 6
    assert PartitionLag("t", 0, None, 10, None).lag is None
    assert PartitionLag("t", 0, 4, None, None).lag is None
    assert PartitionLag("t", 0, 12, 10, None).lag == -2  # not clamped, as Kafka's tool does not


def test_render_description_exact() -> None:
    offsets = (PartitionLag("orders", 0, 4, 10, "m-1"), PartitionLag("orders", 1, None, 10, "m-1"),
               PartitionLag("orders", 2, 7, 7, None))
    d = group("Stable", member("m-1", "orders:0,1", client="app"), Member("m-2", "i-2", "app", "/10.0.0.2", None, 12),
              offsets=offsets)
    assert render_description(d) == "\n".join([
        "GROUP  STATE   PROTOCOL-TYPE  PROTOCOL  MEMBERS  COORDINATOR",
        "shop   Stable  consumer       range     2        0 (127.0.0.1:9092)",
        "",
        "MEMBER-ID  GROUP-INSTANCE-ID  CLIENT-ID  CLIENT-HOST  ASSIGNMENT",
        "m-1        -                  app        /127.0.0.1   orders[0-1]",
        "m-2        i-2                app        /10.0.0.2    (12 bytes)",
        "",
        "TOPIC   PARTITION  COMMITTED-OFFSET  LOG-END-OFFSET  LAG  MEMBER-ID",
        "orders  0          4                 10              6    m-1",
        "orders  1          -                 10              -    m-1",
        "orders  2          7                 7               0    -",
        "",
        "total lag: 6",
    ])


def test_render_empty_group() -> None:
    d = GroupDescription("g", "Empty", "", "", COORD, ())
    assert render_description(d).splitlines()[-3:] == ["no members", "", "no committed offsets"]
    assert d.total_lag is None


def test_description_json() -> None:
    d = group("Stable", member("m-1", "t:0"), offsets=(PartitionLag("t", 0, 1, 3, "m-1"),))
    assert d.to_json() == {
        "group_id": "shop", "state": "Stable", "protocol_type": "consumer", "protocol": "range", "type": "classic",
        "coordinator": {"node_id": 0, "host": "127.0.0.1", "port": 9092},
        "members": [{"member_id": "m-1", "group_instance_id": None, "client_id": "c", "client_host": "/127.0.0.1",
                     "assignment": [{"topic": "t", "partition": 0}]}],
        "offsets": [{"topic": "t", "partition": 0, "committed_offset": 1, "log_end_offset": 3, "lag": 2,
                     "member_id": "m-1"}],
        "total_lag": 2,
    }


# -- decoding members ------------------------------------------------------------------------
def _described(assignment: bytes) -> Any:
    return SimpleNamespace(member_id="m", group_instance_id=None, client_id="c", client_host="h",
                           member_assignment=assignment)


def test_member_assignment_decoding() -> None:
    raw = encode_assignment(Assignment([TopicPartition("t", 1), TopicPartition("t", 0)]))
    assert _member(_described(raw), "consumer", stable=True).assignment == tps("t:0,1")
    assert _member(_described(raw), "consumer", stable=False).assignment == tps("t:0,1")
    assert _member(_described(b""), "consumer", stable=True).assignment == ()  # the leader gave it nothing
    assert _member(_described(b""), "consumer", stable=False).assignment is None  # not shown
    garbage = _member(_described(b"\x00\x07zz"), "consumer", stable=True)
    assert (garbage.assignment, garbage.assignment_bytes) == (None, 4)
    other = _member(_described(raw), "connect", stable=True)
    assert (other.assignment, other.assignment_bytes) == (None, len(raw))


# -- watch -----------------------------------------------------------------------------------
def test_watch_first_look_shows_everything() -> None:
    watch = GroupWatch("shop")
    assert watch.update(group("Stable", member("a", "t:0,1"))) == [
        "state Stable, protocol range, 1 member",
        "member joined: a (client c, host /127.0.0.1)",
        "assignment a: t[0-1]",
    ]
    assert watch.update(group("Stable", member("a", "t:0,1"))) == []


def test_watch_shows_a_rebalance_as_it_goes() -> None:
    watch = GroupWatch("shop")
    watch.update(group("Stable", member("a", "t:0,1")))
    # while rebalancing, assignments are not shown: that is not a change
    assert watch.update(group("PreparingRebalance", member("a", None), member("b", None, instance="i-b"))) == [
        "state Stable -> PreparingRebalance", "member joined: b (client c, host /127.0.0.1, instance i-b)"]
    assert watch.update(group("CompletingRebalance", member("a", None), member("b", None))) == [
        "state PreparingRebalance -> CompletingRebalance"]
    assert watch.update(group("Stable", member("a", "t:0"), member("b", "t:1"))) == [
        "state CompletingRebalance -> Stable", "assignment a: t[0-1] -> t[0]", "assignment b: t[1]"]
    assert watch.update(group("Stable", member("b", "t:0,1"), protocol="roundrobin")) == [
        "protocol range -> roundrobin", "member left: a", "assignment b: t[1] -> t[0-1]"]


def test_watch_a_group_that_comes_and_goes() -> None:
    watch = GroupWatch("shop")
    assert watch.update(None) == ["group shop not found"]
    assert watch.update(None) == []
    assert watch.update(group("PreparingRebalance", member("a", None))) == [
        "state not found -> PreparingRebalance", "member joined: a (client c, host /127.0.0.1)"]
    assert watch.update(None) == ["group shop not found", "member left: a"]


def test_watch_a_member_given_nothing() -> None:
    watch = GroupWatch("shop")
    watch.update(group("Stable", member("a", "t:0")))
    assert watch.update(group("Stable", member("a", "t:0"), member("b", ""))) == [
        "member joined: b (client c, host /127.0.0.1)", "assignment b: (none)"]


# -- requests per negotiated version, against a scripted connection --------------------------
class ScriptedConnection:
    """Answers each request with ``answers[api key](request)``; versions are fixed per API."""

    def __init__(self, versions: dict[int, int], answers: dict[int, Callable[[Any], Any]]) -> None:
        self.versions = versions
        self.answers = answers
        self.sent: list[Any] = []
        self.leaders: dict[tuple[str, int], int] = {}
        self.client = SimpleNamespace(least_loaded_node=lambda: 0)
        self.added: list[tuple[int, str, int]] = []

    def brokers(self, timer: Timer) -> dict[int, tuple[str, int]]:
        return {0: ("h0", 1), 1: ("h1", 2)}

    def refresh_metadata(self, timer: Timer, topics: set[str] | None = None) -> None:
        pass

    def leader_for(self, topic: str, partition: int) -> int | None:
        return self.leaders.get((topic, partition))

    def add_node(self, node_id: int, host: str, port: int) -> None:
        self.added.append((node_id, host, port))

    def version_for(self, node_id: int, api_key: int) -> int | None:
        return self.versions.get(api_key)

    def supports(self, node_id: int, api_key: int, timer: Timer) -> bool:
        return api_key in self.versions

    def request(self, node_id: int, request_cls: Any, response_cls: Any, build: Callable[[int], Any],
                timer: Timer) -> Any:
        request = build(self.versions[request_cls.API_KEY])
        request.encode()  # the request must be valid at that version
        self.sent.append((node_id, request))
        return self.answers[request_cls.API_KEY](request)

    def retrying(self, what: str, timer: Timer, attempt: Callable[[], Any]) -> Any:
        return attempt()


Described = DescribeGroupsResponse.DescribedGroup
OldTopic = OffsetFetchResponse.OffsetFetchResponseTopic
LOTopic = ListOffsetsResponse.ListOffsetsTopicResponse


def _find(req: Any) -> Any:
    if req.version >= 4:
        return FindCoordinatorResponse(version=req.version, throttle_time_ms=0, coordinators=[
            FindCoordinatorResponse.Coordinator(key="shop", node_id=1, host="h1", port=2, error_code=0,
                                                error_message=None)])
    return FindCoordinatorResponse(version=req.version, throttle_time_ms=0, error_code=0, error_message=None,
                                   node_id=1, host="h1", port=2)


def _describe(state: str, assignment: bytes, error: int = 0) -> Callable[[Any], Any]:
    def answer(req: Any) -> Any:
        members = [] if state == "Dead" else [Described.DescribedGroupMember(
            member_id="m-1", group_instance_id=None, client_id="app", client_host="/127.0.0.1",
            member_metadata=b"", member_assignment=assignment)]
        return DescribeGroupsResponse(version=req.version, throttle_time_ms=0, groups=[Described(
            error_code=error, error_message=None, group_id="shop", group_state=state, protocol_type="consumer",
            protocol_data="range" if state == "Stable" else "", members=members, authorized_operations=None)])
    return answer


def _list_offsets(req: Any) -> Any:
    return ListOffsetsResponse(version=req.version, throttle_time_ms=0, topics=[
        LOTopic(name=t.name, partitions=[LOTopic.ListOffsetsPartitionResponse(
            partition_index=p.partition_index, error_code=0, old_style_offsets=[], timestamp=-1,
            offset=100 + p.partition_index, leader_epoch=-1) for p in t.partitions]) for t in req.topics])


def _offset_fetch_v1(req: Any) -> Any:
    assert req.version == 1 and [(t.name, list(t.partition_indexes)) for t in req.topics] == [("t", [0, 1])]
    return OffsetFetchResponse(version=1, topics=[OldTopic(name="t", partitions=[
        OldTopic.OffsetFetchResponsePartition(partition_index=0, committed_offset=40, committed_leader_epoch=-1,
                                              metadata="", error_code=0),
        OldTopic.OffsetFetchResponsePartition(partition_index=1, committed_offset=-1, committed_leader_epoch=-1,
                                              metadata="", error_code=0)])])


def _offset_fetch_v8(req: Any) -> Any:
    asked = req.groups[0]
    assert req.version == 8 and asked.group_id == "shop" and asked.topics is None  # all of the group's
    Group = OffsetFetchResponse.OffsetFetchResponseGroup
    Topic = Group.OffsetFetchResponseTopics
    return OffsetFetchResponse(version=8, throttle_time_ms=0, groups=[Group(group_id="shop", error_code=0, topics=[
        Topic(name="t", partitions=[Topic.OffsetFetchResponsePartitions(
            partition_index=2, committed_offset=90, committed_leader_epoch=-1, metadata="", error_code=0)])])])


ASSIGNED = encode_assignment(Assignment([TopicPartition("t", 0), TopicPartition("t", 1)]))
TIMER = Timer(FakeClock(), 1000)


@pytest.mark.parametrize(("versions", "fetch", "expected"), [
    # old brokers: FindCoordinator v0, OffsetFetch v1 names the assigned partitions, ListOffsets v1
    ({10: 0, 15: 0, 9: 1, 2: 1}, _offset_fetch_v1,
     [("t", 0, 40, 100, "m-1"), ("t", 1, None, 101, "m-1")]),
    # new ones: FindCoordinator v4, OffsetFetch v8 asks for every partition (here t-2, assigned to no one)
    ({10: 4, 15: 6, 9: 8, 2: 7}, _offset_fetch_v8,
     [("t", 0, None, 100, "m-1"), ("t", 1, None, 101, "m-1"), ("t", 2, 90, 102, None)]),
])
def test_describe_builds_each_version(versions: dict[int, int], fetch: Callable[[Any], Any],
                                      expected: list[tuple[Any, ...]]) -> None:
    conn = ScriptedConnection(versions, {10: _find, 15: _describe("Stable", ASSIGNED), 9: fetch, 2: _list_offsets})
    conn.leaders = {("t", 0): 0, ("t", 1): 1, ("t", 2): 1}
    d = GroupAdmin(conn).describe_group("shop", TIMER)  # type: ignore[arg-type]
    assert d.coordinator == Coordinator(1, "h1", 2) and conn.added == [(1, "h1", 2)]
    assert [m.assignment for m in d.members] == [tps("t:0,1")]
    assert [(p.topic, p.partition, p.committed, p.end, p.member_id) for p in d.offsets] == expected
    # ListOffsets went to each partition's leader
    assert sorted((node, t.name, p.partition_index) for node, r in conn.sent if r.API_KEY == 2
                  for t in r.topics for p in t.partitions) == sorted(
        (conn.leaders[(t, p)], t, p) for t, p, *_ in expected)


@pytest.mark.parametrize("version", [0, 5, 6])
def test_unknown_group_is_not_found(version: int) -> None:
    # before v6 Kafka answers Dead with no error; from v6 GROUP_ID_NOT_FOUND
    error = ErrorCode.GROUP_ID_NOT_FOUND if version >= 6 else 0
    conn = ScriptedConnection({10: 4, 15: version}, {10: _find, 15: _describe("Dead", b"", error)})
    with pytest.raises(GroupNotFoundError, match="group shop not found"):
        GroupAdmin(conn).describe_group("shop", TIMER)  # type: ignore[arg-type]


def test_describe_error_is_reported() -> None:
    conn = ScriptedConnection({10: 4, 15: 5}, {10: _find, 15: _describe("Stable", b"",
                                                                       ErrorCode.GROUP_AUTHORIZATION_FAILED)})
    with pytest.raises(BrokerAnswerError, match="GROUP_AUTHORIZATION_FAILED"):
        GroupAdmin(conn).describe_group("shop", TIMER)  # type: ignore[arg-type]


@pytest.mark.parametrize("version", [0, 3, 4, 5])
def test_list_groups_from_every_broker(version: int) -> None:
    def answer(req: Any) -> Any:
        assert req.version == version
        listed = ListGroupsResponse.ListedGroup(group_id=f"g{len(conn.sent)}", protocol_type="consumer",
                                                group_state="Stable", group_type="classic")
        return ListGroupsResponse(version=version, throttle_time_ms=0, error_code=0, groups=[listed])

    conn = ScriptedConnection({16: version}, {16: answer})
    groups, errors = GroupAdmin(conn).list_groups(TIMER)  # type: ignore[arg-type]
    assert errors == [] and [node for node, _ in conn.sent] == [0, 1]
    state = "Stable" if version >= 4 else None
    kind = "classic" if version >= 5 else None
    assert groups == [ListedGroup("g1", "consumer", state, kind, 0), ListedGroup("g2", "consumer", state, kind, 1)]


def test_list_groups_reports_a_failing_broker() -> None:
    def answer(req: Any) -> Any:
        code = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if len(conn.sent) == 2 else 0
        return ListGroupsResponse(version=4, throttle_time_ms=0, error_code=code, groups=[])

    conn = ScriptedConnection({16: 4}, {16: answer})
    groups, errors = GroupAdmin(conn).list_groups(TIMER)  # type: ignore[arg-type]
    assert groups == [] and errors == ["node 1: ListGroups from node 1: COORDINATOR_LOAD_IN_PROGRESS (14)"]


def test_broker_errors() -> None:
    check(0, "x")
    with pytest.raises(BrokerAnswerError) as raised:
        check(ErrorCode.NOT_COORDINATOR, "DescribeGroups g", "moved")
    assert str(raised.value) == "DescribeGroups g: NOT_COORDINATOR (16): moved"
    assert raised.value.retriable and isinstance(raised.value, AdminError)
    assert not BrokerAnswerError(ErrorCode.GROUP_AUTHORIZATION_FAILED, "x").retriable
    assert GroupNotFoundError("g").exit_code == 1


# -- argument validators ---------------------------------------------------------------------
@pytest.mark.parametrize(("parse", "bad"), [
    (port, "99999"), (port, "-1"), (port, "http"), (int_at_least(1), "0"), (int_at_least(0), "-3"),
    (positive_float, "0"), (positive_float, "nan"), (topic, "orders:0"), (topic, "orders:-2"), (topic, ":3"),
    (topic, "x:many"), (log_level, "LOUD"), (bootstrap_servers, "host:port"), (bootstrap_servers, ","),
    (bootstrap_servers, "h:0"),
])
def test_validators_refuse(parse: Callable[[str], object], bad: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse(bad)


def test_validators_accept() -> None:
    assert (port("0"), port("65535")) == (0, 65535)
    assert topic("orders") == ("orders", 1) and topic("orders:3") == ("orders", 3)
    assert log_level("debug") == "DEBUG"
    assert bootstrap_servers("a:1,b:2") == "a:1,b:2"
    assert positive_float("0.5") == 0.5
