"""The built-in assignors and the validation of any assignor's output."""

from __future__ import annotations

import pytest
from kafka.structs import TopicPartition as TP

from groupclient.assignors import PartitionAssignor, RangeAssignor, RoundRobinAssignor, resolve_assignors
from groupclient.assignors.base import validate_assignment
from groupclient.protocol.consumer_protocol import (
    Assignment, Subscription, decode_assignment, decode_subscription, encode_assignment, encode_subscription,
)


def subs(**topics: list[str]) -> dict[str, Subscription]:
    return {m: Subscription(t) for m, t in topics.items()}


def parts(result: dict[str, Assignment]) -> dict[str, list[tuple[str, int]]]:
    return {m: sorted((tp.topic, tp.partition) for tp in a.partitions) for m, a in result.items()}


def test_range_gives_consecutive_partitions_per_topic() -> None:
    result = RangeAssignor().assign({"t": 7, "u": 2}, subs(b=["t", "u"], a=["t", "u"], c=["t"]))
    assert parts(result) == {
        "a": [("t", 0), ("t", 1), ("t", 2), ("u", 0)],
        "b": [("t", 3), ("t", 4), ("u", 1)],
        "c": [("t", 5), ("t", 6)],
    }


def test_range_orders_static_members_by_instance_id() -> None:
    members = {"zzz": Subscription(["t"], group_instance_id="a-instance"), "aaa": Subscription(["t"], group_instance_id="b-instance")}
    assert parts(RangeAssignor().assign({"t": 2}, members)) == {"zzz": [("t", 0)], "aaa": [("t", 1)]}


def test_roundrobin_deals_in_turn_and_skips_non_subscribers() -> None:
    result = RoundRobinAssignor().assign({"t": 3, "u": 3}, subs(a=["t", "u"], b=["t", "u"], c=["u"]))
    # members a, b, c in turn: t0 a, t1 b, t2 (c skipped) a, u0 b, u1 c, u2 a
    assert parts(result) == {"a": [("t", 0), ("t", 2), ("u", 2)], "b": [("t", 1), ("u", 0)], "c": [("u", 1)]}
    flat = [tp for a in result.values() for tp in a.partitions]
    assert len(flat) == len(set(flat)) == 6


@pytest.mark.parametrize("bad, message", [
    ({"ghost": Assignment([TP("t", 0)])}, "unknown member"),
    ({"a": Assignment([TP("t", 9)])}, "does not exist"),
    ({"a": Assignment([TP("t", 0)]), "b": Assignment([TP("t", 0)])}, "both"),
    ({"a": Assignment([TP("x", 0)])}, "does not exist"),
])
def test_validation_rejects_broken_assignments(bad: dict[str, Assignment], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        validate_assignment(RangeAssignor(), {"t": 2}, subs(a=["t"], b=["t"]), bad)
    with pytest.raises(ValueError, match="did not subscribe"):
        validate_assignment(RangeAssignor(), {"t": 2, "u": 1}, subs(a=["t"], b=["t"]), {"a": Assignment([TP("u", 0)])})


def test_resolve_accepts_names_classes_instances_and_kafka_python_assignors() -> None:
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    class Mine(PartitionAssignor):
        name = "mine"

        def assign(self, partitions_per_topic, subscriptions):  # type: ignore[no-untyped-def]
            return {m: Assignment([]) for m in subscriptions}

    resolved = resolve_assignors(["range", RoundRobinPartitionAssignor, Mine])
    assert [a.name for a in resolved] == ["range", "roundrobin", "mine"]
    instance = Mine()
    assert resolve_assignors([instance])[0] is instance
    with pytest.raises(Exception, match="distinct"):
        resolve_assignors([Mine, Mine()])


def test_consumer_protocol_round_trip() -> None:
    sub = Subscription(["b", "a"], b"ud", [TP("a", 1)], 7)
    decoded = decode_subscription(encode_subscription(sub))
    assert decoded.topics == ["a", "b"] and decoded.user_data == b"ud" and decoded.owned_partitions == [TP("a", 1)]
    asg = Assignment([TP("a", 2), TP("a", 0), TP("b", 1)], None)
    assert sorted(decode_assignment(encode_assignment(asg)).partitions) == sorted(asg.partitions)
    assert decode_assignment(b"").partitions == []


def test_static_members_come_before_dynamic_ones_as_in_kafka() -> None:
    """Kafka's MemberInfo order: static members first (by instance id), then dynamic by member id."""
    subs = {
        "a-dynamic": Subscription(["t"]),
        "z-static": Subscription(["t"], group_instance_id="zz"),
    }
    for assignor in (RangeAssignor(), RoundRobinAssignor()):
        result = assignor.assign({"t": 1}, subs)
        assert result["z-static"].partitions == [TP("t", 0)], assignor.name
