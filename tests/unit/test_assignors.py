"""The built-in assignors, the validation of any assignor's output, and resolving assignors by name."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from kafka.structs import TopicPartition as TP

from groupclient.assignors import (
    AssignorError, ClusterView, CooperativeStickyAssignor, PartitionAssignor, RangeAssignor, RebalanceProtocol,
    RoundRobinAssignor, StickyAssignor, common_protocol, resolve_assignors,
)
from groupclient.assignors.base import validate_assignment
from groupclient.assignors.registry import ENTRY_POINT_GROUP, published_assignors
from groupclient.errors import ConfigurationError
from groupclient.protocol.consumer_protocol import (
    Assignment, Subscription, decode_assignment, decode_subscription, encode_assignment, encode_subscription,
)

EAGER = RebalanceProtocol.EAGER
COOPERATIVE = RebalanceProtocol.COOPERATIVE


def subs(**topics: list[str]) -> dict[str, Subscription]:
    return {m: Subscription(t) for m, t in topics.items()}


def cluster(**counts: int) -> ClusterView:
    return ClusterView(counts)


def parts(result: Mapping[str, Assignment]) -> dict[str, list[tuple[str, int]]]:
    return {m: sorted((tp.topic, tp.partition) for tp in a.partitions) for m, a in result.items()}


# -- range and round robin -----------------------------------------------------------------------
def test_range_gives_consecutive_partitions_per_topic() -> None:
    result = RangeAssignor().assign(cluster(t=7, u=2), subs(b=["t", "u"], a=["t", "u"], c=["t"]))
    assert parts(result) == {
        "a": [("t", 0), ("t", 1), ("t", 2), ("u", 0)],
        "b": [("t", 3), ("t", 4), ("u", 1)],
        "c": [("t", 5), ("t", 6)],
    }


def test_range_orders_static_members_by_instance_id() -> None:
    members = {"zzz": Subscription(["t"], group_instance_id="a-instance"),
               "aaa": Subscription(["t"], group_instance_id="b-instance")}
    assert parts(RangeAssignor().assign(cluster(t=2), members)) == {"zzz": [("t", 0)], "aaa": [("t", 1)]}


def test_range_prefers_partitions_in_the_members_rack() -> None:
    """KIP-881: a's share comes from its rack, b's from its rack; the shares stay 2 and 2."""
    racks = [frozenset({"east"}), frozenset({"west"}), frozenset({"east"}), frozenset({"west"})]
    members = {"a": Subscription(["t"], rack_id="west"), "b": Subscription(["t"], rack_id="east")}
    result = RangeAssignor().assign(ClusterView({"t": 4}, {"t": racks}), members)
    assert parts(result) == {"a": [("t", 1), ("t", 3)], "b": [("t", 0), ("t", 2)]}
    # without the partitions' racks it is the plain ranges
    assert parts(RangeAssignor().assign(cluster(t=4), members)) == {"a": [("t", 0), ("t", 1)], "b": [("t", 2), ("t", 3)]}


def test_roundrobin_deals_in_turn_and_skips_non_subscribers() -> None:
    result = RoundRobinAssignor().assign(cluster(t=3, u=3), subs(a=["t", "u"], b=["t", "u"], c=["u"]))
    # members a, b, c in turn: t0 a, t1 b, t2 (c skipped) a, u0 b, u1 c, u2 a
    assert parts(result) == {"a": [("t", 0), ("t", 2), ("u", 2)], "b": [("t", 1), ("u", 0)], "c": [("u", 1)]}
    flat = [tp for a in result.values() for tp in a.partitions]
    assert len(flat) == len(set(flat)) == 6


def test_static_members_come_before_dynamic_ones_as_in_kafka() -> None:
    """Kafka's MemberInfo order: static members first (by instance id), then dynamic by member id."""
    members = {
        "a-dynamic": Subscription(["t"]),
        "z-static": Subscription(["t"], group_instance_id="zz"),
    }
    for assignor in (RangeAssignor(), RoundRobinAssignor(), StickyAssignor(), CooperativeStickyAssignor()):
        result = assignor.assign(cluster(t=1), members)
        assert result["z-static"].partitions == [TP("t", 0)], assignor.name
        assert result["a-dynamic"].partitions == [], assignor.name


def test_assignors_skip_topics_without_metadata_and_give_every_member_an_entry() -> None:
    members = subs(a=["t", "missing"], b=["t"], c=["missing"])
    for assignor in (RangeAssignor(), RoundRobinAssignor(), StickyAssignor(), CooperativeStickyAssignor()):
        result = assignor.assign(cluster(t=2, unsubscribed=5), members)
        assert set(result) == {"a", "b", "c"}, assignor.name
        assert sorted(tp for a in result.values() for tp in a.partitions) == [TP("t", 0), TP("t", 1)], assignor.name
        validate_assignment(assignor, cluster(t=2, unsubscribed=5), members, result)


# -- the sticky assignors ------------------------------------------------------------------------
def test_sticky_keeps_previous_partitions_from_user_data() -> None:
    first = StickyAssignor()
    members = subs(a=["t"], b=["t"])
    result = first.assign(cluster(t=4), members)
    # c joins; a and b send what they had, as their own assignor encodes it after on_assignment
    rejoined: dict[str, Subscription] = {}
    for member in ("a", "b"):
        own = StickyAssignor()
        own.on_assignment(result[member], 7)
        rejoined[member] = Subscription(["t"], user_data=own.subscription_user_data({"t"}))
    rejoined["c"] = Subscription(["t"], user_data=StickyAssignor().subscription_user_data({"t"}))
    after = StickyAssignor().assign(cluster(t=4), rejoined)
    validate_assignment(StickyAssignor(), cluster(t=4), rejoined, after)
    kept = {m: set(after[m].partitions) & set(result[m].partitions) for m in ("a", "b")}
    assert all(kept.values()) and sum(len(k) for k in kept.values()) == 3  # only one partition moves, to c
    assert sorted(len(a.partitions) for a in after.values()) == [1, 1, 2]


def test_cooperative_sticky_holds_moving_partitions_back_for_one_round() -> None:
    owned = [TP("t", p) for p in range(4)]
    members = {"a": Subscription(["t"], owned_partitions=owned, generation_id=3), "b": Subscription(["t"])}
    assignor = CooperativeStickyAssignor()
    result = assignor.assign(cluster(t=4), members)
    assert parts(result) == {"a": [("t", 0), ("t", 1)], "b": []}  # t-2 and t-3 wait until a revoked them
    validate_assignment(assignor, cluster(t=4), members, result, COOPERATIVE)
    members = {"a": Subscription(["t"], owned_partitions=owned[:2], generation_id=4), "b": Subscription(["t"])}
    assert parts(assignor.assign(cluster(t=4), members)) == {"a": [("t", 0), ("t", 1)], "b": [("t", 2), ("t", 3)]}


def test_cooperative_sticky_holds_back_a_partition_of_a_topic_its_owner_left() -> None:
    """a still reports u-0 though it no longer subscribes to u; b must not get it before a revoked it."""
    members = {"a": Subscription(["t"], owned_partitions=[TP("t", 0), TP("u", 0)], generation_id=2),
               "b": Subscription(["t", "u"])}
    assignor = CooperativeStickyAssignor()
    result = assignor.assign(cluster(t=2, u=1), members)
    validate_assignment(assignor, cluster(t=2, u=1), members, result, COOPERATIVE)
    assert TP("u", 0) not in result["b"].partitions and TP("t", 0) in result["a"].partitions
    # a revoked u-0 (it reports only what it was given): now b gets it
    members["a"] = Subscription(["t"], owned_partitions=result["a"].partitions, generation_id=3)
    members["b"] = Subscription(["t", "u"], owned_partitions=result["b"].partitions, generation_id=3)
    again = assignor.assign(cluster(t=2, u=1), members)
    validate_assignment(assignor, cluster(t=2, u=1), members, again, COOPERATIVE)
    assert TP("u", 0) in again["b"].partitions


def test_sticky_ignores_unreadable_user_data() -> None:
    members = {"a": Subscription(["t"], user_data=b"\xff\x00garbage"), "b": Subscription(["t"], user_data=b"")}
    result = StickyAssignor().assign(cluster(t=3), members)
    validate_assignment(StickyAssignor(), cluster(t=3), members, result)
    assert sorted(len(a.partitions) for a in result.values()) == [1, 2]


# -- validation ----------------------------------------------------------------------------------
@pytest.mark.parametrize("bad, message", [
    ({"ghost": Assignment([TP("t", 0)])}, "unknown member"),
    ({"a": Assignment([TP("t", 9)])}, "does not exist"),
    ({"a": Assignment([TP("t", 0)]), "b": Assignment([TP("t", 0)])}, "both"),
    ({"a": Assignment([TP("x", 0)])}, "does not exist"),
    ({"a": Assignment([TP("t", -1)])}, "does not exist"),
    ({"a": Assignment([TP("t", 0)])}, "left 1 subscribed partitions unassigned"),
])
def test_validation_rejects_broken_assignments(bad: dict[str, Assignment], message: str) -> None:
    with pytest.raises(AssignorError, match=message) as caught:
        validate_assignment(RangeAssignor(), cluster(t=2), subs(a=["t"], b=["t"]), bad)
    assert isinstance(caught.value, ValueError) and "'range'" in str(caught.value)
    with pytest.raises(AssignorError, match="did not subscribe"):
        validate_assignment(RangeAssignor(), cluster(t=2, u=1), subs(a=["t"], b=["t"]),
                            {"a": Assignment([TP("u", 0)])})


@pytest.mark.parametrize("bad, message", [
    ([("a", Assignment([]))], "expected a dict"),
    ({"a": [TP("t", 0), TP("t", 1)]}, "expected Assignment"),
])
def test_validation_rejects_results_of_the_wrong_type(bad: object, message: str) -> None:
    with pytest.raises(AssignorError, match=message):
        validate_assignment(RangeAssignor(), cluster(t=2), subs(a=["t"]), bad)


def test_validation_accepts_complete_assignments_and_members_left_out() -> None:
    members = subs(a=["t"], b=["t"], c=["u"])
    validate_assignment(RangeAssignor(), cluster(t=2), members, {"a": Assignment([TP("t", 0), TP("t", 1)])})
    validate_assignment(RangeAssignor(), cluster(t=2), members,
                        {"a": Assignment([TP("t", 1)]), "b": Assignment([TP("t", 0)]), "c": Assignment([])})


@pytest.mark.parametrize("protocol", [EAGER, COOPERATIVE])
def test_a_partition_may_be_left_out_only_while_a_member_still_owns_it(protocol: RebalanceProtocol) -> None:
    owner = {"a": Subscription(["t"], owned_partitions=[TP("t", 0), TP("t", 1)], generation_id=2),
             "b": Subscription(["t"])}
    validate_assignment(CooperativeStickyAssignor(), cluster(t=2), owner, {"a": Assignment([TP("t", 0)])}, protocol)
    with pytest.raises(AssignorError, match="unassigned .*t-1"):
        validate_assignment(CooperativeStickyAssignor(), cluster(t=2), subs(a=["t"], b=["t"]),
                            {"a": Assignment([TP("t", 0)])}, protocol)


def test_cooperative_validation_rejects_a_partition_moved_straight_to_another_member() -> None:
    owner = {"a": Subscription(["t"], owned_partitions=[TP("t", 0), TP("t", 1)], generation_id=2),
             "b": Subscription(["t"])}
    moved = {"a": Assignment([TP("t", 0)]), "b": Assignment([TP("t", 1)])}
    with pytest.raises(AssignorError, match="straight from one owner to another.*t-1"):
        validate_assignment(CooperativeStickyAssignor(), cluster(t=2), owner, moved, COOPERATIVE)
    # under EAGER every member gave everything up before joining, so a move is fine
    validate_assignment(CooperativeStickyAssignor(), cluster(t=2), owner, moved, EAGER)
    # a partition nobody owned may go anywhere, and an owner may keep what it owns
    fresh = {"a": Subscription(["t"], owned_partitions=[TP("t", 0)], generation_id=2), "b": Subscription(["t"])}
    validate_assignment(CooperativeStickyAssignor(), cluster(t=2), fresh, moved, COOPERATIVE)


def test_cooperative_validation_counts_a_member_left_out_as_revoking() -> None:
    owner = {"a": Subscription(["t"], owned_partitions=[TP("t", 0)], generation_id=2), "b": Subscription(["t"])}
    with pytest.raises(AssignorError, match="straight"):
        validate_assignment(CooperativeStickyAssignor(), cluster(t=1), owner, {"b": Assignment([TP("t", 0)])},
                            COOPERATIVE)


# -- protocols and resolving assignors ---------------------------------------------------------
class CooperativeOnly(PartitionAssignor):
    name = "cooperative-only"
    supported_protocols = (COOPERATIVE,)

    def assign(self, cluster: ClusterView, subscriptions: Mapping[str, Subscription]) -> dict[str, Assignment]:
        return {m: Assignment([]) for m in subscriptions}


def test_common_protocol_is_the_most_cooperative_one_all_support() -> None:
    assert common_protocol([CooperativeStickyAssignor()]) is COOPERATIVE
    assert common_protocol([CooperativeStickyAssignor(), RangeAssignor()]) is EAGER
    assert common_protocol([StickyAssignor()]) is EAGER
    assert common_protocol([CooperativeOnly(), CooperativeStickyAssignor()]) is COOPERATIVE
    with pytest.raises(ValueError, match="no rebalance protocol in common"):
        common_protocol([CooperativeOnly(), RoundRobinAssignor()])


def test_resolve_accepts_names_classes_instances_and_kafka_python_assignors() -> None:
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    class Mine(PartitionAssignor):
        name = "mine"

        def assign(self, cluster: ClusterView, subscriptions: Mapping[str, Subscription]) -> dict[str, Assignment]:
            return {m: Assignment([]) for m in subscriptions}

    resolved = resolve_assignors(["range", RoundRobinPartitionAssignor, Mine])
    assert [a.name for a in resolved] == ["range", "roundrobin", "mine"]
    assert [type(a) for a in resolved] == [RangeAssignor, RoundRobinAssignor, Mine]
    instance = Mine()
    assert resolve_assignors([instance])[0] is instance
    assert [type(a) for a in resolve_assignors("sticky")] == [StickyAssignor]  # a single name
    assert [type(a) for a in resolve_assignors(Mine)] == [Mine]  # type: ignore[arg-type]  # a single class
    with pytest.raises(ConfigurationError, match="distinct"):
        resolve_assignors([Mine, Mine()])


def test_resolve_maps_each_built_in_name_to_its_class() -> None:
    names = ["range", "roundrobin", "sticky", "cooperative-sticky"]
    resolved = resolve_assignors(names)
    assert [type(a) for a in resolved] == [RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor]
    assert [a.name for a in resolved] == names
    assert resolve_assignors(["range"])[0] is not resolve_assignors(["range"])[0]  # a fresh instance each time


def test_resolve_maps_kafka_python_assignor_classes_and_instances_to_ours() -> None:
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor as KafkaCooperativeSticky
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    classes = [RangePartitionAssignor, RoundRobinPartitionAssignor, StickyPartitionAssignor, KafkaCooperativeSticky]
    expected = [RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor]
    assert [type(a) for a in resolve_assignors(classes)] == expected
    assert [type(a) for a in resolve_assignors([cls() for cls in classes])] == expected


def test_unknown_names_list_the_choices() -> None:
    with pytest.raises(ConfigurationError, match="unknown partition assignment strategy 'rnage'") as caught:
        resolve_assignors(["rnage"])
    for name in ("range", "roundrobin", "sticky", "cooperative-sticky"):
        assert repr(name) in str(caught.value)
    assert ENTRY_POINT_GROUP in str(caught.value)


@pytest.mark.parametrize("strategy, message", [
    ([], "empty"),
    ([42], "not 42"),
    ([b"range"], "not b'range'"),
    (["range", "range"], "distinct"),
    ([CooperativeOnly, "range"], "no rebalance protocol in common"),
    (["roundrobin", CooperativeOnly()], "no rebalance protocol in common"),
])
def test_resolve_rejects_bad_strategies(strategy: list[object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        resolve_assignors(strategy)


def test_an_eager_fallback_beside_cooperative_sticky_resolves_to_eager() -> None:
    """The first bounce of an upgrade from range to cooperative-sticky: both listed, EAGER in common."""
    resolved = resolve_assignors(["cooperative-sticky", "range"])
    assert [a.name for a in resolved] == ["cooperative-sticky", "range"]
    assert common_protocol(resolved) is EAGER
    assert common_protocol(resolve_assignors(["cooperative-sticky"])) is COOPERATIVE
    assert common_protocol(resolve_assignors([CooperativeOnly])) is COOPERATIVE


THIRD_PARTY_MODULE = "groupclient_test_thirdparty_assignor"


@pytest.fixture
def published(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A distribution on sys.path that publishes assignors under the groupclient.assignors group."""
    (tmp_path / f"{THIRD_PARTY_MODULE}.py").write_text(textwrap.dedent("""
        from groupclient.assignors import PartitionAssignor
        from groupclient.protocol.consumer_protocol import Assignment

        class AllToFirst(PartitionAssignor):
            name = "all-to-first"

            def assign(self, cluster, subscriptions):
                first = sorted(subscriptions)[0]
                return {first: Assignment([])}

        class NotAnAssignor:
            name = "not-an-assignor"
        """))
    dist = tmp_path / "groupclient_test_thirdparty-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: groupclient-test-thirdparty\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent(f"""
        [{ENTRY_POINT_GROUP}]
        all-to-first = {THIRD_PARTY_MODULE}:AllToFirst
        not-an-assignor = {THIRD_PARTY_MODULE}:NotAnAssignor
        broken = groupclient_test_no_such_module:Whatever
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, THIRD_PARTY_MODULE, raising=False)
    yield tmp_path
    sys.modules.pop(THIRD_PARTY_MODULE, None)


def test_a_published_assignor_resolves_by_its_entry_point_name(published: Path) -> None:
    assert {"all-to-first", "not-an-assignor", "broken"} <= set(published_assignors())
    resolved = resolve_assignors(["all-to-first", "range"])
    assert [a.name for a in resolved] == ["all-to-first", "range"]
    assert type(resolved[0]).__module__ == THIRD_PARTY_MODULE and isinstance(resolved[0], PartitionAssignor)
    with pytest.raises(ConfigurationError, match="unknown") as caught:
        resolve_assignors(["nope"])
    assert "'all-to-first'" in str(caught.value) and "'range'" in str(caught.value)


def test_a_published_entry_point_that_is_not_an_assignor_or_does_not_load_is_a_configuration_error(
        published: Path) -> None:
    with pytest.raises(ConfigurationError, match="not a groupclient PartitionAssignor"):
        resolve_assignors(["not-an-assignor"])
    with pytest.raises(ConfigurationError, match="'broken'.*cannot be loaded"):
        resolve_assignors(["broken"])


def test_built_in_names_win_over_published_ones(published: Path) -> None:
    (published / "groupclient_test_thirdparty-1.0.dist-info" / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nrange = {THIRD_PARTY_MODULE}:AllToFirst\n")
    assert "range" in published_assignors()
    assert type(resolve_assignors(["range"])[0]) is RangeAssignor


def test_the_published_assignor_is_gone_without_its_distribution() -> None:
    assert "all-to-first" not in published_assignors()
    with pytest.raises(ConfigurationError, match="unknown"):
        resolve_assignors(["all-to-first"])


# -- the consumer protocol -----------------------------------------------------------------------
def test_consumer_protocol_round_trip() -> None:
    sub = Subscription(["b", "a"], b"ud", [TP("a", 1)], 7, rack_id="rack-1")
    decoded = decode_subscription(encode_subscription(sub))
    assert decoded.topics == ["a", "b"] and decoded.user_data == b"ud" and decoded.owned_partitions == [TP("a", 1)]
    assert decoded.generation_id == 7 and decoded.rack_id == "rack-1"
    asg = Assignment([TP("a", 2), TP("a", 0), TP("b", 1)], None)
    assert sorted(decode_assignment(encode_assignment(asg)).partitions) == sorted(asg.partitions)
    assert decode_assignment(b"").partitions == []
