"""Consumer-protocol groups in the coordinator's journal: after any sequence of heartbeats, leaves,
expiries, pattern resolutions and a classic member's joins (its group going classic and back), a store opened again on the same data dir rebuilds every group
as it was (epochs, targets, each member's assignment and what it is giving up), also across a
compaction; and the rebuilt group answers its members at the epochs they had."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from groupclient.coordinator.consumer_group.errors import HeartbeatError
from groupclient.coordinator.consumer_group.group import ConsumerGroup
from groupclient.coordinator.consumer_group.records import group_record, member_record
from groupclient.coordinator.group_base.classic_api import JoinRequest, LeavingMember, SyncRequest
from groupclient.coordinator.storage.group_store import GroupStore
from groupclient.error_codes import ErrorCode
from groupclient.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest as Request
from groupclient.protocol.consumer_protocol import Subscription, encode_subscription
from tests.unit.group_harness import Harness, group_store

ORDERS = uuid.UUID(int=11)
TOPICS = {"orders": (ORDERS, 6), "orders-eu": (uuid.UUID(int=12), 2)}


def hb(member: str, epoch: int, owned: list[int] | None, *, instance: str | None = None, join: bool = False,
       regex: str | None = None) -> Any:
    tps = None if owned is None else [Request.TopicPartitions(topic_id=ORDERS, partitions=owned)] if owned else []
    return Request(version=1, group_id="g", member_id=member, member_epoch=epoch, instance_id=instance,
                   rebalance_timeout_ms=60_000 if join else -1, subscribed_topic_names=["orders"] if join else None,
                   subscribed_topic_regex=regex, topic_partitions=[] if join else tps)


def snapshot(store: GroupStore[ConsumerGroup]) -> dict[str, Any]:
    return {gid: (group_record(g), sorted((member_record(g, m) for m in g.members.values()),
                                          key=lambda r: r["member_id"]))
            for gid, g in store.consumer_groups.items()}


class Driver:
    """Members A, B, C (C static) heartbeating as a client would: stating what they were told."""

    def __init__(self, harness: Harness) -> None:
        self.h = harness
        self.epochs: dict[str, int] = {}
        self.owned: dict[str, list[int]] = {}

    def classic_step(self, action: str) -> None:
        """D: a classic member (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) of the consumer group."""
        c, now = self.h.coordinator, self.h.now
        if action == "leave":
            c.leave_group("g", [LeavingMember(self.classic_id)], now)
            return
        answered: list[Any] = []
        if action == "beat" and self.classic_generation is not None:
            if c.heartbeat("g", self.classic_id, None, self.classic_generation, now) is not ErrorCode.REBALANCE_IN_PROGRESS:
                return
        c.join_group(JoinRequest("g", self.classic_id, None, "kp", "/127.0.0.1", 30_000, 10_000, "consumer",
                                 (("range", encode_subscription(Subscription(["orders"]))),)), now, answered.append,
                     TOPICS)
        if not answered:
            self.h.advance(0)  # a classic group's join is answered when its rebalance completes
        if not answered:
            return
        joined = answered[-1]
        if joined.error is ErrorCode.MEMBER_ID_REQUIRED:
            self.classic_id = joined.member_id
            self.classic_step(action)
        elif joined.error is ErrorCode.NONE:
            self.classic_generation = joined.generation_id
            c.sync_group(SyncRequest("g", self.classic_id, None, joined.generation_id, None, None, {}), now,
                         answered.append)

    classic_id = ""
    classic_generation: int | None = None

    def step(self, who: str, action: str) -> None:
        if who == "D":
            return self.classic_step(action)
        instance = "i-c" if who == "C" else None
        if action == "join" or who not in self.epochs:
            request = hb(who, 0, [], instance=instance, join=True, regex="orders-.*" if who == "B" else None)
        elif action == "leave":
            request = hb(who, -2 if instance else -1, None, instance=instance)
        elif action == "hold":  # states no owned partitions: acknowledges nothing
            request = hb(who, self.epochs[who], None, instance=instance)
        else:
            request = hb(who, self.epochs[who], self.owned.get(who, []), instance=instance)
        try:
            answer = self.h.coordinator.consumer.heartbeat(request, self.h.now, TOPICS, "c", "/127.0.0.1")
        except HeartbeatError:
            self.epochs.pop(who, None)
            self.owned.pop(who, None)
            return
        if request.member_epoch < 0:
            self.epochs.pop(who, None)
            self.owned.pop(who, None)
            return
        self.epochs[who] = answer.member_epoch
        if answer.assignment is not None:
            self.owned[who] = sorted(answer.assignment.get(ORDERS, ()))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ABCD"), st.sampled_from(["beat", "beat", "join", "leave", "hold", "wait"])),
                min_size=1, max_size=30))
def test_a_reopened_store_rebuilds_every_consumer_group_as_it_was(tmp_path_factory: Any, steps: list[Any]) -> None:
    data_dir: Path = tmp_path_factory.mktemp("groups")
    store = group_store(data_dir, compaction_min_bytes=2048)  # small: compactions happen
    driver = Driver(Harness(store=store))
    for who, action in steps:
        if action == "wait":
            driver.h.advance(20_000)  # timers: sessions, rebalance timeouts, pattern resolution
        else:
            driver.step(who, action)
    before = snapshot(store)
    store.close()
    reopened = group_store(data_dir)
    try:
        assert snapshot(reopened) == before
    finally:
        reopened.close()


def test_a_rebuilt_group_answers_its_members_as_the_group_would_have(tmp_path: Path) -> None:
    steps = [("A", "join"), ("A", "beat"), ("B", "join"), ("A", "beat"), ("B", "beat")]
    after = [("A", "beat"), ("B", "beat"), ("A", "beat"), ("B", "beat")]
    store = group_store(tmp_path / "restarted")
    restarted, kept = Driver(Harness(store=store)), Driver(Harness(store=group_store(tmp_path / "kept")))
    for who, action in steps:
        restarted.step(who, action)
        kept.step(who, action)
    store.close()
    again = Driver(Harness(store=group_store(tmp_path / "restarted")))
    again.epochs, again.owned = dict(restarted.epochs), dict(restarted.owned)
    for who, action in after:
        again.step(who, action)
        kept.step(who, action)
    assert (again.epochs, again.owned) == (kept.epochs, kept.owned)  # nobody fenced, the same handshake
    assert again.epochs == {"A": 3, "B": 3} and sorted(again.owned["A"] + again.owned["B"]) == list(range(6))
