"""One consumer-protocol group (KIP-848) on the coordinator's side, sans-IO: a ConsumerGroupHeartbeat
in, its answer out, with the rules of Kafka 4.1's ``GroupMetadataManager``.  No clock (``now`` is
given), no I/O, no lock: the coordinator's group core owns it and calls it under its own
discipline.

- The **group epoch** grows whenever a member joins, leaves, or changes what it subscribes to;
  the **target assignment** is computed again (the group's assignor) when the group epoch moved
  past the assignment's epoch; each member then moves towards its target as
  :mod:`.reconciliation` says (revoke first, receive only what others released).
- A heartbeat at the wrong epoch is FENCED_MEMBER_EPOCH (the previous epoch is accepted while the
  member's owned partitions are a subset of what it has, as Kafka does); an unknown member is
  UNKNOWN_MEMBER_ID; a static member's instance id held by a live member is UNRELEASED_INSTANCE_ID.
- Epoch -1 leaves; -2 (a static member) keeps its partitions for its instance id until its session
  ends, and the same instance id joining meanwhile takes its place without a rebalance.  Sessions
  and rebalance timeouts are deadlines :meth:`ConsumerGroup.expire` checks.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from ...error_codes import ErrorCode
from ..config import CoordinatorConfig
from .assignors import ASSIGNORS, MemberSpec
from .errors import HeartbeatError
from .subscriptions import SubscribedTopics, Topics, compile_regex
from .reconciliation import MemberAssignment, MemberAssignmentState, Partitions, next_assignment

E = ErrorCode
TopicId = uuid.UUID
__all__ = ["Answer", "ConsumerGroup", "GroupSettings", "HeartbeatError", "Member", "Topics", "validate_heartbeat"]


@dataclass(frozen=True)
class GroupSettings:
    """Kafka's names and defaults (group.consumer.*)."""

    heartbeat_interval_ms: int = 5000
    session_timeout_ms: int = 45000
    max_size: int = 2**31 - 1
    assignors: tuple[str, ...] = ("uniform", "range")  # the first is the default

    @classmethod
    def of(cls, config: CoordinatorConfig) -> GroupSettings:
        """The settings a coordinator's configuration gives its consumer groups."""
        return cls(config.group_consumer_heartbeat_interval_ms, config.group_consumer_session_timeout_ms,
                   config.group_consumer_max_size, config.group_consumer_assignors)


@dataclass
class Member:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    topics: tuple[str, ...] = ()
    regex: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = 300000
    assignment: MemberAssignment = field(default_factory=lambda: MemberAssignment(0, -1))
    session_ends_at: int = 0
    revoke_by: int | None = None
    sent: Partitions | None = None  # the assignment its last answer carried
    left_static: bool = False  # left with epoch -2: its partitions kept for its instance id
    joined_at: int = 0  # for listing members in the order they joined


@dataclass(frozen=True)
class Answer:
    """What a heartbeat is answered (fields of ConsumerGroupHeartbeatResponse)."""

    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Partitions | None  # None: unchanged


class ConsumerGroup:
    def __init__(self, group_id: str, settings: GroupSettings | None = None) -> None:
        self.group_id = group_id
        self.settings = settings or GroupSettings()
        self.epoch = 0
        self.assignment_epoch = 0
        self.target: dict[str, Partitions] = {}
        self.members: dict[str, Member] = {}
        # the subscribed topics' ids and partition counts when the group epoch last moved: a
        # change (a topic created, deleted, re-created or grown) moves the epoch again
        self.subscribed = SubscribedTopics()
        self.assignor_name = self.settings.assignors[0]
        self._joins = 0

    @property
    def state(self) -> str:
        """Kafka's ConsumerGroupState: Empty, Assigning (the target lags the group epoch),
        Reconciling (a member has not reached the target's epoch yet) or Stable."""
        if not self.members:
            return "Empty"
        if self.assignment_epoch < self.epoch:
            return "Assigning"
        if any(m.assignment.epoch != self.assignment_epoch
               or m.assignment.state is not MemberAssignmentState.STABLE
               for m in self.members.values() if not m.left_static):
            return "Reconciling"
        return "Stable"

    # -- the heartbeat ---------------------------------------------------------------------------
    def heartbeat(self, request: Any, now: int, topics: Topics, client_id: str = "", client_host: str = "") -> Answer:
        """Apply one heartbeat (``request`` has ConsumerGroupHeartbeatRequest's fields); raises
        :class:`HeartbeatError` for an error answer."""
        validate_heartbeat(request)
        epoch = request.member_epoch
        if epoch in (-1, -2):
            return self._leave(request, now)
        joined = False
        if epoch == 0:
            member, joined = self._join(request, client_id, client_host)
        else:
            member = self._known(request)
        changed = self._update_subscription(member, request)
        moved = self.subscribed.refresh(self.members.values(), topics)
        if changed or joined or moved:
            self.epoch += 1
        member.session_ends_at = now + self.settings.session_timeout_ms
        self._maybe_assign(topics)
        owned = None if request.topic_partitions is None else {
            tp.topic_id: frozenset(tp.partitions) for tp in request.topic_partitions if tp.partitions}
        before = member.assignment
        member.assignment = next_assignment(member.member_id, before, self.assignment_epoch,
                                            self.target.get(member.member_id, {}), owned, self._held_by)
        if member.assignment.state is MemberAssignmentState.UNREVOKED_PARTITIONS:
            if member.revoke_by is None:
                member.revoke_by = now + member.rebalance_timeout_ms
        else:
            member.revoke_by = None
        full = epoch == 0 or (request.rebalance_timeout_ms != -1 and request.topic_partitions is not None
                              and (request.subscribed_topic_names is not None
                                   or getattr(request, "subscribed_topic_regex", None) is not None))
        assigned = dict(member.assignment.assigned)
        send = full or member.sent is None or assigned != member.sent
        if send:
            member.sent = assigned
        return Answer(member.member_id, member.assignment.epoch, self.settings.heartbeat_interval_ms,
                      assigned if send else None)

    def _held_by(self, topic: TopicId, partition: int) -> str | None:
        for member in self.members.values():
            a = member.assignment
            if partition in a.assigned.get(topic, frozenset()) or partition in a.revoking.get(topic, frozenset()):
                return member.member_id
        return None

    def _join(self, request: Any, client_id: str, client_host: str) -> tuple[Member, bool]:
        """The member joining (epoch 0), and whether it is new to the group (a static member back
        within its session takes its predecessor's place and assignment: no rebalance)."""
        instance = request.instance_id
        existing = self.members.get(request.member_id)
        if existing is not None and not existing.left_static:
            existing.assignment = MemberAssignment(0, -1)  # joins again: it owns nothing (it was fenced)
            return existing, True
        if instance is not None:
            holder = next((m for m in self.members.values() if m.instance_id == instance), None)
            if holder is not None and not holder.left_static:
                raise HeartbeatError(E.UNRELEASED_INSTANCE_ID, f"Static member {request.member_id} with instance id "
                                     f"{instance} cannot join the group {self.group_id} since the instance id is owned "
                                     f"by member {holder.member_id}.")
            if holder is not None:
                del self.members[holder.member_id]
                member = Member(request.member_id, instance, request.rack_id, client_id, client_host, holder.topics,
                                holder.regex, holder.server_assignor, holder.rebalance_timeout_ms, holder.assignment)
                self.target[member.member_id] = self.target.pop(holder.member_id, {})
                self.members[member.member_id] = member
                return member, False
        if len([m for m in self.members.values() if not m.left_static]) >= self.settings.max_size:
            raise HeartbeatError(E.GROUP_MAX_SIZE_REACHED, f"The consumer group has reached its maximum capacity of "
                                 f"{self.settings.max_size} members.")
        member = Member(request.member_id, instance, request.rack_id, client_id, client_host,
                        joined_at=self._joins)
        self._joins += 1
        self.members[member.member_id] = member
        return member, True

    def _known(self, request: Any) -> Member:
        member = self.members.get(request.member_id)
        if member is None or member.left_static:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {request.member_id} is not a member of group "
                                 f"{self.group_id}.")
        current = member.assignment
        if request.member_epoch != current.epoch:
            owned = request.topic_partitions
            subset = owned is not None and all(
                set(tp.partitions) <= current.assigned.get(tp.topic_id, frozenset()) for tp in owned)
            if not (request.member_epoch == current.previous_epoch and subset):
                raise HeartbeatError(E.FENCED_MEMBER_EPOCH, f"The consumer group member has a smaller member epoch "
                                     f"({request.member_epoch}) than the one known by the group coordinator "
                                     f"({current.epoch}). The member must abandon all its partitions and rejoin."
                                     if request.member_epoch < current.epoch else
                                     f"The consumer group member has a greater member epoch ({request.member_epoch}) "
                                     f"than the one known by the group coordinator ({current.epoch}). The member "
                                     "must abandon all its partitions and rejoin.")
        return member

    def _update_subscription(self, member: Member, request: Any) -> bool:
        changed = False
        if request.subscribed_topic_names is not None:
            names = tuple(sorted(request.subscribed_topic_names))
            changed |= names != member.topics
            member.topics = names
        regex = getattr(request, "subscribed_topic_regex", None)
        if regex is not None:
            if regex:
                compile_regex(regex)  # INVALID_REGULAR_EXPRESSION before anything changes
            changed |= (regex or None) != member.regex
            member.regex = regex or None
        if request.server_assignor is not None:
            if request.server_assignor not in self.settings.assignors:
                raise HeartbeatError(E.UNSUPPORTED_ASSIGNOR, f"Assignor {request.server_assignor} is not supported. "
                                     f"Supported assignors: {', '.join(self.settings.assignors)}.")
            changed |= request.server_assignor != member.server_assignor
            member.server_assignor = request.server_assignor
        if request.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = request.rebalance_timeout_ms
        return changed

    def _maybe_assign(self, topics: Topics) -> None:
        if self.assignment_epoch >= self.epoch:
            return
        self.assignor_name = self._preferred_assignor()
        partitions = {topic_id: count for topic_id, count in self.subscribed.metadata.values()}
        specs = [MemberSpec(m.member_id, frozenset(topics[t][0] for t in self.subscribed.topics_of(m) if t in topics),
                            self.target.get(m.member_id, {}), m.instance_id) for m in self.members.values()]
        self.target = dict(ASSIGNORS[self.assignor_name](specs, partitions))
        self.assignment_epoch = self.epoch

    def _preferred_assignor(self) -> str:
        """The server assignor most members ask for (Kafka's), else the first configured one."""
        counts: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        if not counts:
            return self.settings.assignors[0]
        return min(counts, key=lambda name: (-counts[name], name))

    # -- leaving and expiring ----------------------------------------------------------------------
    def _leave(self, request: Any, now: int) -> Answer:
        member = self.members.get(request.member_id)
        if member is None or member.left_static:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {request.member_id} is not a member of group "
                                 f"{self.group_id}.")
        if request.member_epoch == -2 and member.instance_id is not None:
            # stays, holding its partitions for its instance id until its session ends
            member.left_static = True
            member.session_ends_at = now + self.settings.session_timeout_ms
        else:
            del self.members[member.member_id]
            self.target.pop(member.member_id, None)
            self.subscribed.refresh(self.members.values())
            self.epoch += 1
        return Answer(member.member_id, request.member_epoch, 0, None)

    def expire(self, now: int) -> list[str]:
        """Remove members whose session ended (static members that left and did not come back
        too) or that did not give partitions up within their rebalance timeout (fenced); their ids."""
        gone = [m for m in self.members.values()
                if now >= m.session_ends_at or (m.revoke_by is not None and now >= m.revoke_by)]
        for member in gone:
            del self.members[member.member_id]
            self.target.pop(member.member_id, None)
        if gone:
            self.subscribed.refresh(self.members.values())
            self.epoch += 1
        return [m.member_id for m in gone]


def validate_heartbeat(request: Any) -> None:
    """Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``: INVALID_REQUEST with its messages."""
    def invalid(message: str) -> HeartbeatError:
        return HeartbeatError(E.INVALID_REQUEST, message)

    epoch = request.member_epoch
    if not request.group_id:
        raise invalid("GroupId can't be empty.")
    if not request.member_id and (request.version >= 1 or epoch > 0 or epoch == -1):
        raise invalid("MemberId can't be empty.")
    if request.instance_id is not None and not request.instance_id:
        raise invalid("InstanceId can't be empty.")
    if request.rack_id is not None and not request.rack_id:
        raise invalid("RackId can't be empty.")
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or request.topic_partitions:
            raise invalid("TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and getattr(request, "subscribed_topic_regex", None) is None:
            raise invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
    elif epoch == -2 and request.instance_id is None:
        raise invalid("InstanceId can't be null.")
    elif epoch < -2:
        raise invalid(f"MemberEpoch is invalid: {epoch}.")

