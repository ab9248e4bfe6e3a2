"""ConsumerRebalanceListener calls with the eager ``range`` assignor, and group_metadata().

kafka-python (like Java's eager protocol) calls ``on_partitions_revoked`` before *every* join,
the first one included (with an empty set), then ``on_partitions_assigned`` with the whole new
assignment; close() revokes what the member owns.  kafka-python may still join twice at
start-up (its leader can assign before it has the topic's metadata; ``conftest.warm`` makes that
rare), so the single-member test accepts any number of complete revoke/assign pairs.

Deliberate difference (asserted per library):

- ``test_difference_duck_typed_listener_is_accepted``: kafka-python only takes subclasses of its
  ConsumerRebalanceListener (TypeError otherwise); groupclient takes any object with the
  listener methods (its own ConsumerRebalanceListener is one).
"""

from __future__ import annotations

from typing import Any

import pytest
import kafka.errors as Errors
from kafka import ConsumerRebalanceListener
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.structs import ConsumerGroupMetadata, MemberState, TopicPartition

from groupclient.coordinator import EmbeddedCluster
from groupclient.coordinator.faults import FaultKind, FaultRule
from groupclient.protocol.apis import ApiKey

from .conftest import KP, ConsumerFactory, drain, kafka_python_bug, new_topic, poll_until, subscribe, unique

pytestmark = pytest.mark.integration

RANGE = {"partition_assignment_strategy": [RangePartitionAssignor], "enable_auto_commit": False}


class Recorder(ConsumerRebalanceListener):
    def __init__(self, consumer_box: list[Any] | None = None) -> None:
        self.events: list[tuple[str, set[TopicPartition]]] = []
        self.types: set[type] = set()
        self.assignment_seen: list[set[TopicPartition]] = []
        self.consumer_box = consumer_box

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.types.add(type(revoked))
        self.events.append(("revoked", set(revoked)))

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.types.add(type(assigned))
        self.events.append(("assigned", set(assigned)))
        if self.consumer_box:
            self.assignment_seen.append(set(self.consumer_box[0].assignment()))


def assert_pairs(events: list[tuple[str, set[TopicPartition]]], owned: set[TopicPartition] | None = None) -> None:
    """Eager: revoked(what was owned) then assigned(the new assignment), pair after pair."""
    assert events and len(events) % 2 == 0, events
    owned = set() if owned is None else owned
    for i in range(0, len(events), 2):
        assert events[i] == ("revoked", owned), events
        assert events[i + 1][0] == "assigned", events
        owned = events[i + 1][1]


def tps(topic: str, *partitions: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in partitions}


def test_first_join_revokes_nothing_then_assigns_everything(cluster: EmbeddedCluster,
                                                            make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 4)
    box: list[Any] = []
    listener = Recorder(box)
    consumer = make_consumer(group_id=unique("group"), **RANGE)
    box.append(consumer)
    subscribe(consumer, [topic], listener=listener)
    assert poll_until(consumer, lambda: len(consumer.assignment()) == 4)
    assert listener.events[0] == ("revoked", set())
    assert listener.events[-1] == ("assigned", tps(topic, 0, 1, 2, 3))
    assert_pairs(listener.events)
    assert listener.types == {set}
    # inside on_partitions_assigned, assignment() already is the new assignment
    assert listener.assignment_seen[-1] == tps(topic, 0, 1, 2, 3)


def test_a_second_member_joining_then_leaving(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 4)
    group = unique("group")
    a_events, b_events = Recorder(), Recorder()
    a = make_consumer(group_id=group, **RANGE)
    subscribe(a, [topic], listener=a_events)
    assert poll_until(a, lambda: len(a.assignment()) == 4)
    a_events.events.clear()

    b = make_consumer(group_id=group, **RANGE)
    subscribe(b, [topic], listener=b_events)
    assert poll_until([a, b], lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2)
    a_owned, b_owned = a.assignment(), b.assignment()
    # range: each member gets two consecutive partitions
    assert {frozenset(a_owned), frozenset(b_owned)} == {frozenset(tps(topic, 0, 1)), frozenset(tps(topic, 2, 3))}
    assert a_events.events[0] == ("revoked", tps(topic, 0, 1, 2, 3))
    assert a_events.events[-1] == ("assigned", a_owned)
    assert_pairs(a_events.events, owned=tps(topic, 0, 1, 2, 3))
    assert b_events.events[0] == ("revoked", set()) and b_events.events[-1] == ("assigned", b_owned)
    assert_pairs(b_events.events)

    a_events.events.clear()
    b_events.events.clear()
    b.close()
    assert b_events.events == [("revoked", b_owned)]  # close() revokes what the member owned
    assert poll_until(a, lambda: len(a.assignment()) == 4)
    assert a_events.events == [("revoked", a_owned), ("assigned", tps(topic, 0, 1, 2, 3))]


def test_close_revokes_the_assignment(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 2)
    listener = Recorder()
    consumer = make_consumer(group_id=unique("group"), **RANGE)
    subscribe(consumer, [topic], listener=listener)
    assert poll_until(consumer, lambda: len(consumer.assignment()) == 2)
    listener.events.clear()
    consumer.close()
    assert listener.events == [("revoked", tps(topic, 0, 1))]


@pytest.mark.parametrize("lib", kafka_python_bug(
    "unsubscribe() leaves the group without calling on_partitions_revoked (Java's unsubscribe() "
    "calls it, and kafka-python's own close() does)"))
def test_unsubscribe_revokes_the_assignment(lib: str, cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 2)
    listener = Recorder()
    consumer = make_consumer(group_id=unique("group"), **RANGE)
    subscribe(consumer, [topic], listener=listener)
    assert poll_until(consumer, lambda: len(consumer.assignment()) == 2)
    listener.events.clear()
    consumer.unsubscribe()
    assert consumer.assignment() == set()
    assert listener.events == [("revoked", tps(topic, 0, 1))]


def test_listener_exception_is_raised_from_poll_as_a_kafka_error(cluster: EmbeddedCluster,
                                                                make_consumer: ConsumerFactory) -> None:
    """kafka-python raises ``KafkaError("User rebalance callback throws an error")`` from poll(),
    chained to the listener's exception, and the consumer goes on afterwards."""
    topic = new_topic(cluster, 2, [b"%d" % i for i in range(10)])
    bug = ValueError("listener bug")

    class Exploding(ConsumerRebalanceListener):
        raised = False

        def on_partitions_revoked(self, revoked: Any) -> None:
            pass

        def on_partitions_assigned(self, assigned: Any) -> None:
            if not Exploding.raised:
                Exploding.raised = True
                raise bug

    consumer = make_consumer(group_id=unique("group"), auto_offset_reset="earliest", **RANGE)
    subscribe(consumer, [topic], listener=Exploding())
    with pytest.raises(Errors.KafkaError) as caught:
        drain(consumer, 10)
    assert caught.value.__cause__ is bug
    assert len(drain(consumer, 10)) == 10  # goes on normally
    assert consumer.assignment() == tps(topic, 0, 1)


def test_subscribe_rejects_a_listener_without_listener_methods(cluster: EmbeddedCluster,
                                                               make_consumer: ConsumerFactory) -> None:
    topic = new_topic(cluster, 1)
    consumer = make_consumer(group_id=unique("group"), **RANGE)
    with pytest.raises(TypeError):
        consumer.subscribe([topic], listener=object())


def test_difference_duck_typed_listener_is_accepted(lib: str, cluster: EmbeddedCluster,
                                                    make_consumer: ConsumerFactory) -> None:
    """Deliberate difference: kafka-python raises TypeError for a listener that is not a subclass
    of its ConsumerRebalanceListener; groupclient calls any object with the listener methods."""
    topic = new_topic(cluster, 2)
    events: list[str] = []

    class DuckListener:
        def on_partitions_revoked(self, revoked: Any) -> None:
            events.append(f"revoked {len(revoked)}")

        def on_partitions_assigned(self, assigned: Any) -> None:
            events.append(f"assigned {len(assigned)}")

    consumer = make_consumer(group_id=unique("group"), **RANGE)
    if lib == KP:
        with pytest.raises(TypeError):
            consumer.subscribe([topic], listener=DuckListener())
        return
    subscribe(consumer, [topic], listener=DuckListener())
    assert poll_until(consumer, lambda: len(consumer.assignment()) == 2)
    assert events[-1] == "assigned 2"


def test_group_metadata_before_and_after_joining(cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """Ported from kafka-python's test_group_metadata_with_group_id_delegates_to_coordinator, plus
    the snapshot of a stable member (kafka-python's ``MemberState`` strings)."""
    topic = new_topic(cluster, 1)
    group = unique("group")
    consumer = make_consumer(topic, group_id=group, **RANGE)
    before = consumer.group_metadata()
    assert isinstance(before, ConsumerGroupMetadata)
    assert before == ConsumerGroupMetadata(group, -1, "", None, MemberState.UNJOINED)
    assert poll_until(consumer, lambda: bool(consumer.assignment()))
    after = consumer.group_metadata()
    assert isinstance(after, ConsumerGroupMetadata)
    assert after.group_id == group and after.generation_id >= 1 and after.member_id
    assert after.group_instance_id is None
    assert after.state == MemberState.STABLE
    assert after == ConsumerGroupMetadata(group, after.generation_id, after.member_id, None, MemberState.STABLE)


class CommittingOnRevoke(ConsumerRebalanceListener):
    """The manual-commit pattern: commit what was consumed when the partitions are revoked."""

    def __init__(self, consumer_box: list[Any]) -> None:
        self.consumer_box = consumer_box
        self.seen: list[tuple[set[TopicPartition], set[TopicPartition], dict[TopicPartition, int]]] = []

    def on_partitions_revoked(self, revoked: Any) -> None:
        consumer = self.consumer_box[0]
        positions = {tp: consumer.position(tp) for tp in revoked}
        self.seen.append((set(revoked), set(consumer.assignment()), positions))
        if revoked:
            consumer.commit()

    def on_partitions_assigned(self, assigned: Any) -> None:
        pass


@pytest.mark.parametrize("lib", kafka_python_bug(
    "a listener runs on its IO thread, where position() and commit() raise 'Cannot block on net.run()'"))
def test_the_revoked_partitions_are_still_owned_inside_on_partitions_revoked(
        lib: str, cluster: EmbeddedCluster, make_consumer: ConsumerFactory) -> None:
    """As Java's onJoinPrepare: the eager listener runs before the assignment is given up, so it
    can ask positions and commit what was consumed (the next owner starts there)."""
    topic = new_topic(cluster, 2, records=[b"x"] * 10)
    group = unique("group")
    box: list[Any] = []
    listener = CommittingOnRevoke(box)
    a = make_consumer(group_id=group, auto_offset_reset="earliest", **RANGE)
    box.append(a)
    subscribe(a, [topic], listener=listener)
    assert len(drain(a, 10)) == 10
    b = make_consumer(group_id=group, **RANGE)
    subscribe(b, [topic])
    assert poll_until([a, b], lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1)
    revoked, owned, positions = next(seen for seen in listener.seen if seen[0])
    assert revoked == owned == tps(topic, 0, 1)
    assert positions == {tp: 5 for tp in tps(topic, 0, 1)}
    assert cluster.committed_offsets(group) == {(topic, 0): 5, (topic, 1): 5}


@pytest.mark.parametrize("lib", kafka_python_bug(
    "an assignment its leader made before it had the topic's metadata (it assigns nothing) is "
    "replaced by a second rebalance, which is lost when poll() times out during it: the leader's "
    "new assignment clears the reason it rejoined, the next poll() no longer waits for the join, "
    "and the member stays without partitions (conftest.warm and docs/pytest-plugin.md's example "
    "load the metadata first for that reason)"))
def test_a_rebalance_that_replaces_an_empty_first_assignment_completes_across_timed_out_polls(
        lib: str, private_cluster: EmbeddedCluster, make_private_consumer: ConsumerFactory) -> None:
    topic = new_topic(private_cluster, 3, [b"a", b"b", b"c"])
    # the topic's metadata comes late, so the first assignment is made without it; both
    # SyncGroups take longer than a poll(timeout_ms=100)
    private_cluster.inject_fault(FaultRule(ApiKey.METADATA, FaultKind.DELAY, count=2, delay_ms=1500))
    private_cluster.inject_fault(FaultRule(ApiKey.SYNC_GROUP, FaultKind.DELAY, count=2, delay_ms=1000))
    consumer = make_private_consumer(group_id=unique("group"), auto_offset_reset="earliest", **RANGE)
    consumer.subscribe([topic])  # not conftest.subscribe: it loads the metadata first
    assert len(drain(consumer, 3, timeout_s=15)) == 3
    assert consumer.assignment() == tps(topic, 0, 1, 2)
