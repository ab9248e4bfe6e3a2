"""The consumer's group side (member, join, commits, hooks) over a scripted network, built as
GroupConsumer builds it."""

from __future__ import annotations

import random
from dataclasses import dataclass

from groupclient.assignors import RangeAssignor
from groupclient.assignors.base import PartitionAssignor, common_protocol
from groupclient.clock import FakeClock
from groupclient.consumer.assigned import AssignedPartitions
from groupclient.consumer.commits import OffsetCommitter
from groupclient.consumer.group_hooks import ConsumerGroupHooks
from groupclient.consumer.listener import ListenerCalls
from groupclient.consumer.rebalance_events import RebalanceRecorder
from groupclient.consumer.subscription import SubscriptionState
from groupclient.member.coordinator_lookup import CoordinatorLookup
from groupclient.member.group_member import GroupMember
from groupclient.member.join import GroupJoin
from groupclient.member.types import GroupConfig

from .scripted_network import ScriptedClient

CONFIG = GroupConfig("g", None, 10000, 60000, 3000, 100, 30000)


@dataclass
class GroupParts:
    subscription: SubscriptionState
    member: GroupMember
    join: GroupJoin
    committer: OffsetCommitter
    hooks: ConsumerGroupHooks


def build_group(net: ScriptedClient, clock: FakeClock, subscription: SubscriptionState,
                assignors: list[PartitionAssignor] | None = None, enable_auto_commit: bool = False,
                config: GroupConfig = CONFIG) -> GroupParts:
    assignors = assignors or [RangeAssignor()]
    protocol = common_protocol(assignors)
    events = RebalanceRecorder()
    member = GroupMember(net, clock, config, CoordinatorLookup(net, config.group_id, config.retry_backoff_ms, random.Random(0)),
                         AssignedPartitions(subscription, lambda: None, config.group_id),
                         keeps_partitions_while_rejoining=protocol.value == "cooperative")
    committer = OffsetCommitter(member, subscription, enable_auto_commit, 5000)
    hooks = ConsumerGroupHooks(member, committer, subscription, assignors, protocol,
                               ListenerCalls(observer=events.listener_called), events, lambda: None)
    return GroupParts(subscription, member, GroupJoin(member, hooks), committer, hooks)
