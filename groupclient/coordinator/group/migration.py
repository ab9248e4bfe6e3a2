"""A live group changing protocol, as Kafka 4.1 does under ``group.consumer.migration.policy``'s
default, ``bidirectional``:

- **upgrade**: a ConsumerGroupHeartbeat join to a live classic group of the consumer embedded
  protocol turns it into a consumer group; its members stay, as classic members at the classic
  generation owning what their last SyncGroup gave them (:func:`upgraded`);
- **downgrade**: a consumer group whose last consumer-protocol member is gone, and that still has
  classic members, turns back into a Stable classic group of them at the group's epoch, each
  member with what it holds, which then rebalances (:func:`downgraded`).

An empty group of either kind simply gives its id to the other kind (not here: the coordinators
drop it).  Pure functions of the groups; the caller swaps them and arms the timers.  Here, above
both kinds of group, because a conversion reads one kind and builds the other.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from ...error_codes import ErrorCode
from ...protocol.consumer_protocol import PROTOCOL_TYPE, Assignment, decode_assignment, encode_assignment
from ...structs import TopicPartition
from ..classic_group.metadata import Group, Member
from ..classic_group.state import GroupState
from ..consumer_group.classic_members import from_classic
from ..consumer_group.errors import HeartbeatError
from ..consumer_group.group import ConsumerGroup, GroupSettings
from ..consumer_group.subscriptions import Topics


log = logging.getLogger("groupclient.coordinator.group")
CUSTOM_ASSIGNOR = ("an unsupported custom assignor is in use. Please refer to the documentation or switch to a "
                   "default assignor before re-attempting the upgrade")


def _refused(group_id: str, why: str) -> HeartbeatError:
    return HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND,
                          f"Cannot upgrade classic group {group_id} to consumer group because {why}.")


def upgraded(classic: Group, settings: GroupSettings, topics: Topics, now: int) -> ConsumerGroup:
    """The consumer group a live classic group becomes (Kafka's validateOnlineUpgrade and
    convertToConsumerGroup), or HeartbeatError with Kafka's refusal."""
    group_id = classic.group_id
    if classic.protocol_type != PROTOCOL_TYPE:
        raise _refused(group_id, "the group does not use the consumer embedded protocol")
    if len(classic.members) > settings.max_size:
        raise _refused(group_id, "the group size exceeds the consumer group maximum size")
    group = ConsumerGroup(group_id, settings)
    group.epoch = group.assignment_epoch = classic.generation_id
    for order, m in enumerate(classic.members.values()):
        try:
            # an assignment that carries user data came from a custom assignor, whose data the
            # consumer protocol would lose: Kafka refuses the upgrade
            custom = bool(m.assignment) and bool(decode_assignment(m.assignment).user_data)
            member = from_classic(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.session_timeout_ms,
                                  m.rebalance_timeout_ms, tuple(m.protocols), classic.protocol_name or "",
                                  m.assignment, classic.generation_id, topics, order)
        except Exception as exc:
            # Kafka's answer has no detail; its log has it
            log.warning("Cannot upgrade classic group %s to consumer group because the embedded consumer "
                        "protocol is malformed: %s.", group_id, exc)
            raise _refused(group_id, "the embedded consumer protocol is malformed") from None
        if custom:
            log.warning("Cannot upgrade classic group %s to consumer group: user data from a custom assignor "
                        "would be lost.", group_id)
            raise _refused(group_id, CUSTOM_ASSIGNOR)
        member.session_ends_at = now + m.session_timeout_ms
        group.members[member.member_id] = member
        group.target[member.member_id] = member.assignment.assigned
    group.joins = len(classic.members)
    group.subscribed.refresh(group.members.values(), topics)
    return group


def downgraded(group: ConsumerGroup, name_of: Callable[[uuid.UUID], str | None], generation: int) -> Group:
    """The classic group a consumer group of classic members only becomes (Kafka's
    ClassicGroup.fromConsumerGroup): Stable at ``generation`` (the consumer group's epoch before
    the member whose leaving caused this was removed), the same members, each with what it may
    still hold as its assignment (what it was given, and what it was asked to revoke: more than it
    holds at worst, which only makes a newcomer wait); the caller then starts its rebalance, which
    gives every member its rebalance timeout to join again.

    What it holds, not its target as Kafka writes: a classic member reaches its target only by
    joining again, and until then a consumer-protocol member that joins upgrades the group with
    these assignments taken for what each classic member owns.  With the target, a member
    holding t-2 and t-3 whose target was t-3..t-5 let the newcomer be given t-2 while it still
    consumed it (the simulator's random schedule seed 3, 3 members, 7 faults, mixed)."""
    classic = Group(group.group_id, state=GroupState.STABLE, generation_id=generation)
    for m in sorted(group.members.values(), key=lambda m: m.joined_at):
        assert m.classic is not None, "only classic members are left"
        held: dict[uuid.UUID, set[int]] = {}
        for owned in (m.assignment.assigned, m.assignment.revoking):
            for tid, ps in owned.items():
                held.setdefault(tid, set()).update(ps)
        partitions = [TopicPartition(topic, p) for tid, ps in held.items()
                      if (topic := name_of(tid)) is not None for p in sorted(ps)]
        classic.add(Member(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                           m.classic.session_timeout_ms, PROTOCOL_TYPE, list(m.classic.protocols),
                           assignment=encode_assignment(Assignment(partitions))))
    classic.protocol_name = classic.select_protocol() if classic.members else None
    return classic
