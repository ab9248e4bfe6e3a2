"""Property tests of a consumer-protocol group on the coordinator's side (the reconciliation state
machine with the group around it): random members join, leave, heartbeat truthfully, heartbeat
with null owned partitions, lag a heartbeat behind, are expired; topics grow; time passes, so that
a new target is computed at most once per assignment interval (Kafka 4.3's batching, at Kafka's
default of a second).  After every step:

- no partition is held (owned or being given up) by two members — the protocol's safety;
- what a member is told it may own is held by no other member;
- epochs: no member is ahead of the group's target epoch, the target is never ahead of the group
  epoch, and none of them goes back;
- a member told to give partitions up keeps its epoch until it has (and still when the target
  moved on and it must give up more, as Kafka 4.2's).

And liveness: once membership stops changing, a few rounds of truthful heartbeats a second apart
bring every member to the target's epoch with its whole target, and the group to Stable."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from groupclient.coordinator.consumer_group.errors import HeartbeatError
from groupclient.coordinator.consumer_group.group import ConsumerGroup, GroupSettings
from groupclient.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest as Request

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
NAMES = ["m0", "m1", "m2", "m3", "m4"]

Owned = dict[uuid.UUID, set[int]]


class Client:
    """A member as a well-behaved client is: it states what it owns, and owns what it is told."""

    def __init__(self, member_id: str, topics: list[str]) -> None:
        self.member_id, self.topics = member_id, topics
        self.epoch = 0
        self.owned: Owned = {}

    def request(self, join: bool = False, owned_known: bool = True) -> Any:
        if join:
            return Request(version=1, group_id="g", member_id=self.member_id, member_epoch=0, instance_id=None,
                           rack_id=None, rebalance_timeout_ms=60_000, subscribed_topic_names=self.topics,
                           subscribed_topic_regex=None, server_assignor=None, topic_partitions=[])
        tps = [Request.TopicPartitions(topic_id=t, partitions=sorted(ps)) for t, ps in self.owned.items() if ps]
        return Request(version=1, group_id="g", member_id=self.member_id, member_epoch=self.epoch, instance_id=None,
                       rack_id=None, rebalance_timeout_ms=-1, subscribed_topic_names=None, subscribed_topic_regex=None,
                       server_assignor=None, topic_partitions=tps if owned_known else None)


def held(group: ConsumerGroup) -> dict[tuple[uuid.UUID, int], list[str]]:
    holders: dict[tuple[uuid.UUID, int], list[str]] = {}
    for m in group.members.values():
        for partitions in (m.assignment.assigned, m.assignment.revoking):
            for t, ps in partitions.items():
                for p in ps:
                    holders.setdefault((t, p), []).append(m.member_id)
    return holders


class Checked:
    def __init__(self) -> None:
        self.group = ConsumerGroup("g", GroupSettings(session_timeout_ms=30_000))
        self.clients: dict[str, Client] = {}
        self.now = 0
        self.topics = {"t1": (T1, 4), "t2": (T2, 3)}
        self.epochs = (0, 0)
        self.member_epochs: dict[str, int] = {}
        self.revoking: dict[str, dict[uuid.UUID, frozenset[int]]] = {}

    def beat(self, client: Client, join: bool = False, owned_known: bool = True) -> None:
        try:
            answer = self.group.heartbeat(client.request(join, owned_known), self.now, self.topics)
        except HeartbeatError:
            self.clients.pop(client.member_id, None)  # fenced or removed: it is gone, owning nothing
            return
        if answer.member_epoch < 0:
            self.clients.pop(client.member_id, None)
            return
        client.epoch = answer.member_epoch
        if answer.assignment is not None:
            told = {t: set(ps) for t, ps in answer.assignment.items()}
            holders = held(self.group)
            for t, ps in told.items():
                for p in ps:  # what it may own now is nobody else's
                    assert holders.get((t, p), [client.member_id]) == [client.member_id], (t, p, holders[(t, p)])
            client.owned = told

    def check(self) -> None:
        group = self.group
        for key, members in held(group).items():
            assert len(members) == 1, (key, members)
        assert group.assignment_epoch <= group.epoch
        assert (group.epoch, group.assignment_epoch) >= self.epochs
        self.epochs = (group.epoch, group.assignment_epoch)
        for m in group.members.values():
            assert m.assignment.epoch <= group.assignment_epoch, (m.member_id, m.assignment, group.assignment_epoch)
            before = self.member_epochs.get(m.member_id)
            if before is not None and m.assignment.revoking and self.revoking.get(m.member_id) == m.assignment.revoking:
                assert m.assignment.epoch == before  # still giving the same up: no epoch move
            assert m.assignment.epoch >= (before or 0)
            self.member_epochs[m.member_id] = m.assignment.epoch
            self.revoking[m.member_id] = dict(m.assignment.revoking)
        for gone in set(self.member_epochs) - set(group.members):
            del self.member_epochs[gone]

    def step(self, action: str, who: str) -> None:
        client = self.clients.get(who)
        if action == "join" and client is None:
            client = self.clients[who] = Client(who, ["t1", "t2"] if who < "m3" else ["t1"])
            self.beat(client, join=True)
        elif action == "leave" and client is not None:
            client.epoch = -1
            self.beat(client)
        elif action == "beat" and client is not None:
            self.beat(client)
        elif action == "null" and client is not None:
            self.beat(client, owned_known=False)
        elif action == "grow":
            self.topics = {"t1": (T1, self.topics["t1"][1] + 1), "t2": self.topics["t2"]}
        elif action == "tick":
            self.now += 300
        elif action == "expire":
            self.now += 30_000
            for member_id in self.group.expire(self.now):
                self.clients.pop(member_id, None)
        self.check()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["join", "join", "beat", "beat", "beat", "null", "leave", "grow",
                                           "tick", "expire"]), st.sampled_from(NAMES)), max_size=60))
def test_no_partition_has_two_holders_epochs_never_go_back_and_the_group_settles(steps: list[Any]) -> None:
    checked = Checked()
    for action, who in steps:
        checked.step(action, who)
    for _ in range(4 * len(NAMES)):  # membership no longer changes: truthful heartbeats settle it
        checked.now += 1000  # the assignment interval: a pending target is computed
        for client in list(checked.clients.values()):
            checked.beat(client)
            checked.check()
    group = checked.group
    if group.members:
        assert group.state == "Stable", {m.member_id: m.assignment for m in group.members.values()}
        for m in group.members.values():
            assert m.assignment.epoch == group.assignment_epoch
            assert dict(m.assignment.assigned) == {t: ps for t, ps in group.target.get(m.member_id, {}).items() if ps}
        names = {t for client in checked.clients.values() for t in client.topics}
        every = {(checked.topics[t][0], p) for t in names for p in range(checked.topics[t][1])}
        assert set(held(group)) == every  # every partition of a subscribed topic has its member
