"""One consumer-protocol group (KIP-848) on the coordinator's side, sans-IO: a ConsumerGroupHeartbeat
in, its answer out, with the rules of Kafka 4.4's ``GroupMetadataManager``.  No clock (``now`` is
given), no I/O, no lock: the coordinator's group core owns it and calls it under its own
discipline.  docs/coordinator.md tables where Kafka 4.1 answered otherwise.

- A group starts at **epoch 1**, with an empty target at epoch 1: the first target computed is
  epoch 2 (Kafka 4.3).
- The **group epoch** grows when the topic names a member subscribes to change (a new member's
  included), when a member drops its pattern, when a member is removed, when the assignor most
  members ask for changes, and when the metadata of the subscribed topics changes (a topic
  created, deleted, re-created or grown; a pattern resolved to other topics) — not for a rack or
  timeout change, nor for a new pattern until it is resolved.
- The **target assignment** is computed again (by the assignor most members ask for) when the
  group epoch moved past the assignment's epoch, by a heartbeat that comes at least
  ``assignment_interval_ms`` after the last computation (KIP-1263's batching, Kafka 4.3; 0 computes
  at once): meanwhile members move towards the previous target at its epoch, and the group is
  Assigning.  Each member moves towards its target as :mod:`.reconciliation` says (revoke first,
  receive only what others released).
- A heartbeat at a greater epoch, or at a smaller one that is not the previous epoch with owned
  partitions it still has, is FENCED_MEMBER_EPOCH; a join (epoch 0) of a known member id is
  taken and answered with its whole assignment (Kafka 4.2); an unknown member is
  UNKNOWN_MEMBER_ID; a static member's instance id held by a live member is
  UNRELEASED_INSTANCE_ID, held by another member id FENCED_INSTANCE_ID.
- Epoch -1 leaves; -2 (a static member) stays at epoch -2 holding its partitions until its session
  (counted from its last heartbeat) ends, and the same instance id joining meanwhile takes its place
  without a rebalance.  Sessions and rebalance timeouts are deadlines :meth:`ConsumerGroup.expire` checks.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...error_codes import ErrorCode
from ..config import CoordinatorConfig
from ..group_base.rebalance import RebalanceCause
from .assignors import SERVER_ASSIGNORS, MemberSpec
from .errors import HeartbeatError
from .reconciliation import MemberAssignment, MemberAssignmentState, Partitions, next_assignment, since_zero
from .subscriptions import SubscribedTopics, Topics, compile_regex
from .validation import regex_of, validate_heartbeat

E = ErrorCode
TopicId = uuid.UUID
__all__ = ["Answer", "ConsumerGroup", "GroupSettings", "HeartbeatError", "Member", "Topics"]


@dataclass(frozen=True)
class GroupSettings:
    """Kafka's names and defaults (group.consumer.*)."""

    heartbeat_interval_ms: int = 5000
    session_timeout_ms: int = 45000
    max_size: int = 2**31 - 1
    assignors: tuple[str, ...] = tuple(SERVER_ASSIGNORS)  # the first is the default
    assignment_interval_ms: int = 1000  # group.consumer.assignment.interval.ms (KIP-1263, Kafka 4.3)

    @classmethod
    def of(cls, config: CoordinatorConfig) -> GroupSettings:
        """The settings a coordinator's configuration gives its consumer groups."""
        return cls(config.group_consumer_heartbeat_interval_ms, config.group_consumer_session_timeout_ms,
                   config.group_consumer_max_size, config.group_consumer_assignors,
                   config.group_consumer_assignment_interval_ms)


@dataclass
class ClassicProtocol:
    """What a classic-protocol member of a consumer group stated in its JoinGroup
    (:mod:`.classic_members`)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    deadline: int | None = None  # it must send SyncGroup (after a join) or join (after told to) by then

    @property
    def protocol_name(self) -> str:
        """The protocol it is answered with: its first."""
        return self.protocols[0][0]


@dataclass
class Member:
    """A consumer group's member: what it subscribes to, its assignment and its deadlines."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    topics: tuple[str, ...] = ()
    regex: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = 300000
    assignment: MemberAssignment = field(default_factory=lambda: MemberAssignment(0, 0))
    session_ends_at: int = 0
    revoke_by: int | None = None
    sent: Partitions | None = None  # the assignment its last answer carried
    joined_at: int = 0  # for listing members in the order they joined
    classic: ClassicProtocol | None = None  # a classic-protocol member (JoinGroup, SyncGroup, Heartbeat)
    # the SASL user whose request created it: only that user may act for it (handlers/context.py,
    # foreign_member); not journaled, as a classic member's is not
    principal: str | None = None

    @property
    def left_static(self) -> bool:
        """Left with epoch -2: its partitions kept for its instance id until its session ends."""
        return self.assignment.epoch == STATIC_LEFT


STATIC_LEFT = -2
INITIAL_EPOCH = 1


@dataclass(frozen=True)
class Answer:
    """What a heartbeat is answered (fields of ConsumerGroupHeartbeatResponse)."""

    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Partitions | None  # None: unchanged


class ConsumerGroup:
    """One consumer-protocol group (sans-IO): a heartbeat in, its answer out."""

    def __init__(self, group_id: str, settings: GroupSettings | None = None) -> None:
        self.group_id = group_id
        self.settings = settings or GroupSettings()
        # Kafka 4.3 (KAFKA-20268): a group starts at epoch 1, its empty target at epoch 1 too, so
        # the first target computed is epoch 2 and every member epoch is above 0
        self.epoch = INITIAL_EPOCH
        self.assignment_epoch = INITIAL_EPOCH
        self.assigned_at: int | None = None  # when the target was last computed (None: never, or unknown)
        self.target: dict[str, Partitions] = {}
        self.members: dict[str, Member] = {}
        # the subscribed topics' ids and partition counts when the group epoch last moved: a
        # change (a topic created, deleted, re-created or grown) moves the epoch again
        self.subscribed = SubscribedTopics()
        self.assignor_name = self.settings.assignors[0]
        self.preferred_assignor = self.assignor_name  # the assignor most members ask for, as last counted
        self.joins = 0  # members that ever joined: their order in descriptions
        # when each committed offset was committed (monotonic; a loaded group's count from the
        # load): an offset of a topic no member subscribes to expires that long after (retention.py)
        self.offset_commit_ms: dict[tuple[str, int], int] = {}

    @property
    def state(self) -> str:
        """Kafka's ConsumerGroupState: Empty, Assigning (the target lags the group epoch),
        Reconciling (a member is not at the target's epoch with all of it yet) or Stable."""
        if not self.members:
            return "Empty"
        if self.assignment_epoch < self.epoch:
            return "Assigning"
        if any(m.assignment.epoch != self.assignment_epoch or m.assignment.state is not MemberAssignmentState.STABLE
               for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    # -- the heartbeat ---------------------------------------------------------------------------
    def heartbeat(self, request: Any, now: int, topics: Topics, client_id: str = "", client_host: str = "",
                  principal: str | None = None) -> Answer:
        """Apply one heartbeat (``request`` has ConsumerGroupHeartbeatRequest's fields); raises
        :class:`HeartbeatError` for an error answer.  ``resolution_due`` says afterwards whether the
        group's patterns should be resolved (:meth:`resolve_patterns`)."""
        validate_heartbeat(request, self.settings.assignors)
        if request.member_epoch in (-1, STATIC_LEFT):
            return self._leave(request)
        self._throw_if_full(request.member_id, request.instance_id)
        if request.instance_id is None:
            member = self._dynamic(request, client_id, client_host)
        else:
            member = self._static(request, client_id, client_host)
        if member.principal is None:
            member.principal = principal
        member.client_id, member.client_host = client_id or member.client_id, client_host or member.client_host
        before = (member.topics, member.regex, len(self.members))
        changed = self._update_subscription(member, request)
        subscription_changed = (member.topics, member.regex) != before[:2]
        moved = self.subscribed.refresh(self.members.values(), topics,
                                        force=(member.topics, member.regex, len(self.members)) != before)
        # Kafka 4.4 (KAFKA-20434): the assignor most members ask for changing moves the epoch too
        preferred = self._preferred_assignor()
        changed = changed or preferred != self.preferred_assignor
        self.preferred_assignor = preferred
        if changed or moved:
            self.epoch += 1
            # a join (epoch 0 here: a new member, or a static one back) states its subscription too
            self.epoch_cause = (RebalanceCause.MEMBER_JOINED if request.member_epoch == 0
                                else RebalanceCause.SUBSCRIPTION_CHANGED if changed else RebalanceCause.TOPICS_CHANGED)
        self.resolution_due = self.subscribed.resolution_due(topics, now)
        member.session_ends_at = now + self.settings.session_timeout_ms
        self.maybe_assign(topics, now)
        owned = None if request.topic_partitions is None else {
            tp.topic_id: frozenset(tp.partitions) for tp in request.topic_partitions if tp.partitions}
        self.reconcile(member, owned, now, topics, subscription_changed)
        full = request.member_epoch == 0 or (
            request.rebalance_timeout_ms != -1 and request.topic_partitions is not None
            and (request.subscribed_topic_names is not None or regex_of(request) is not None))
        assigned = dict(member.assignment.assigned)
        send = full or member.sent is None or assigned != member.sent
        if send:
            member.sent = assigned
        return Answer(member.member_id, member.assignment.epoch, self.settings.heartbeat_interval_ms,
                      assigned if send else None)

    resolution_due = False
    epoch_cause: RebalanceCause | None = None  # why the group epoch last moved (the coordinator's metrics)

    def resolve_patterns(self, now: int, topics: Topics) -> bool:
        """Resolve the members' patterns (Kafka does it in the background, off the heartbeat);
        whether the group epoch moved (the patterns matched other topics than before)."""
        self.resolution_due = False
        self.subscribed.resolve(self.members.values(), topics, now)
        if self.subscribed.refresh(self.members.values(), topics):
            self.epoch += 1
            self.epoch_cause = RebalanceCause.TOPICS_CHANGED
            return True
        return False

    def reconcile(self, member: Member, owned: Partitions | None, now: int, topics: Topics | None = None,
                  subscription_changed: bool = False) -> None:
        """Move the member towards its target, given what it says it owns (None: not stated); a
        member told to give partitions up has its rebalance timeout to do so.  Only the topics it
        subscribes to count (``topics``: the cluster's; None: every topic of its target), and what
        it holds of others it gives up at once when its subscription just changed, without waiting
        for a new target (Kafka 4.2)."""
        subscribed = None if topics is None else frozenset(
            topics[t][0] for t in self.subscribed.topics_of(member) if t in topics)
        before = member.assignment
        member.assignment = next_assignment(member.member_id, member.assignment, self.assignment_epoch,
                                            self.target.get(member.member_id, {}), owned, self._lazy_holders(),
                                            subscribed, subscription_changed)
        if member.assignment.state is MemberAssignmentState.UNREVOKED_PARTITIONS:
            # a new revocation (more to give up, even at the same epoch) gets the whole timeout
            # again, as Kafka schedules the rebalance timeout anew whenever the member changed
            if member.revoke_by is None or member.assignment != before:
                member.revoke_by = now + member.rebalance_timeout_ms
        else:
            member.revoke_by = None

    def held_by(self, topic: TopicId, partition: int) -> str | None:
        """Which member holds a partition, or is still giving it up (None: it is free)."""
        return self.holders().get((topic, partition))

    def holders(self) -> dict[tuple[TopicId, int], str]:
        """Every held partition's holder, in one pass over the members (what a reconciliation
        asks partition by partition)."""
        held: dict[tuple[TopicId, int], str] = {}
        for member in self.members.values():
            a = member.assignment
            for partitions in (a.assigned, a.revoking):
                for topic, ps in partitions.items():
                    for p in ps:
                        held[(topic, p)] = member.member_id
        return held

    def _lazy_holders(self) -> Callable[[TopicId, int], str | None]:
        """held_by for one reconciliation: the holders are gathered on the first question only."""
        held: dict[tuple[TopicId, int], str] | None = None

        def held_by(topic: TopicId, partition: int) -> str | None:
            nonlocal held
            if held is None:
                held = self.holders()
            return held.get((topic, partition))

        return held_by

    # -- who sends it ----------------------------------------------------------------------------
    def static_member(self, instance_id: str | None) -> Member | None:
        """The member holding ``instance_id`` (either protocol's, left or not), if any."""
        if instance_id is None:
            return None
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def replace_static(self, holder: Member, member_id: str, rack_id: str | None, client_id: str, client_host: str,
                       principal: str | None = None) -> Member:
        """A static member back under a new member id: it takes ``holder``'s place, partitions and
        target, at epoch 0 (Kafka's getOrMaybeSubscribeStaticConsumerGroupMember)."""
        del self.members[holder.member_id]
        member = Member(member_id, holder.instance_id, rack_id, client_id, client_host, holder.topics,
                        holder.regex, holder.server_assignor, holder.rebalance_timeout_ms,
                        MemberAssignment(0, 0, MemberAssignmentState.STABLE, holder.assignment.assigned,
                                         since=holder.assignment.since),
                        joined_at=holder.joined_at, principal=principal)
        self.target[member_id] = self.target.pop(holder.member_id, {})
        self.members[member_id] = member
        return member

    def _throw_if_full(self, member_id: str, instance_id: str | None) -> None:
        if self.static_member(instance_id) is not None:
            return  # Kafka 4.4 (KAFKA-20601): a static member comes back to a full group
        if len(self.members) >= self.settings.max_size and (not member_id or member_id not in self.members):
            raise HeartbeatError(E.GROUP_MAX_SIZE_REACHED, f"The consumer group has reached its maximum capacity of "
                                 f"{self.settings.max_size} members.")

    def _unknown(self, member_id: str) -> HeartbeatError:
        return HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {self.group_id}.")

    def _new_member(self, request: Any, client_id: str, client_host: str) -> Member:
        member = Member(request.member_id, request.instance_id, request.rack_id, client_id, client_host,
                        joined_at=self.joins)
        self.joins += 1
        self.members[member.member_id] = member
        return member

    def _dynamic(self, request: Any, client_id: str, client_host: str) -> Member:
        member = self.members.get(request.member_id)
        if member is None:
            if request.member_epoch != 0:
                raise self._unknown(request.member_id)
            return self._new_member(request, client_id, client_host)
        _check_epoch(member, request)  # a join (epoch 0) of a known id passes it (Kafka 4.2)
        return member

    def _static(self, request: Any, client_id: str, client_host: str) -> Member:
        instance, member_id = request.instance_id, request.member_id
        holder = self.static_member(instance)
        if request.member_epoch == 0:
            if holder is None:
                member = self.members.get(member_id)
                if member is not None:
                    _check_epoch(member, request)
                    return member
                return self._new_member(request, client_id, client_host)
            if not holder.left_static:
                raise HeartbeatError(E.UNRELEASED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                     f"{instance} cannot join the group because the instance id is owned by "
                                     f"{holder.member_id} member.")
            # the instance is back: it takes its predecessor's place and partitions, at epoch 0
            return self.replace_static(holder, member_id, request.rack_id, client_id, client_host)
        if holder is None:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance} is unknown.")
        if holder.member_id != member_id:
            raise self._fenced_instance(member_id, instance, holder)
        _check_epoch(holder, request)
        return holder

    @staticmethod
    def _fenced_instance(member_id: str, instance: str, holder: Member) -> HeartbeatError:
        return HeartbeatError(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance} was "
                                                    f"fenced by member {holder.member_id}.")

    def _update_subscription(self, member: Member, request: Any) -> bool:
        """Take what the heartbeat states; whether it moves the group epoch (the topic names changed,
        or the pattern changed to one already resolved)."""
        changed = False
        if request.subscribed_topic_names is not None:
            names = tuple(sorted(set(request.subscribed_topic_names)))
            changed = names != member.topics
            member.topics = names
        regex = regex_of(request)
        if regex is not None and (regex or None) != member.regex:
            if regex and not self.subscribed.is_resolved(regex) and not any(
                    m.regex == regex for m in self.members.values()):
                compile_regex(regex)  # INVALID_REGULAR_EXPRESSION when new to the group
            dropped = member.regex is not None and not regex
            member.regex = regex or None
            # a pattern another member resolved already moves the epoch now; a new one once it is
            # resolved (off the heartbeat); dropping a pattern at once (Kafka 4.2)
            changed = changed or dropped or (member.regex is not None and self.subscribed.is_resolved(member.regex))
        if request.server_assignor is not None:
            member.server_assignor = request.server_assignor
        if request.rack_id is not None:
            member.rack_id = request.rack_id
        if request.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = request.rebalance_timeout_ms
        return changed

    # -- the target assignment ---------------------------------------------------------------------
    def maybe_assign(self, topics: Topics, now: int) -> None:
        """Compute the target assignment again if the group epoch moved past it, and the last one
        was computed at least the assignment interval ago (KIP-1263's batching, Kafka 4.3: meanwhile
        members move towards the previous target, at its epoch, and the group is Assigning)."""
        if self.assignment_epoch >= self.epoch:
            return
        interval = self.settings.assignment_interval_ms
        if self.assigned_at is not None and interval > 0 and now < self.assigned_at + interval:
            return
        self.assignor_name = self.preferred_assignor = self._preferred_assignor()
        partitions = {topic_id: count for topic_id, count in self.subscribed.metadata.values()}
        specs = [MemberSpec(m.member_id, frozenset(topics[t][0] for t in self.subscribed.topics_of(m) if t in topics),
                            self.target.get(m.member_id, {}), m.instance_id) for m in self.members.values()]
        self.target = dict(SERVER_ASSIGNORS[self.assignor_name](specs, partitions))
        self.assignment_epoch = self.epoch
        self.assigned_at = now

    def count_preferred_assignor(self) -> None:
        """Take the assignor most members ask for now as the one last counted (a group rebuilt
        from its records)."""
        self.preferred_assignor = self._preferred_assignor()

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
    def _leave(self, request: Any) -> Answer:
        member_id, instance = request.member_id, request.instance_id
        if instance is None:
            member = self.members.get(member_id)
            if member is None:
                raise self._unknown(member_id)
        else:
            member = self.static_member(instance)
            if member is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance} is unknown.")
            if member.member_id != member_id:
                raise self._fenced_instance(member_id, instance, member)
        if request.member_epoch == STATIC_LEFT:
            # stays at epoch -2 with what it owns; its session runs on from its last heartbeat.  Its
            # partitions' assignment epochs go back to 0 (Kafka 4.3, KIP-1251): commits under its
            # old member id are fenced, and the instance back holds them from epoch 0
            held = member.assignment.assigned
            member.assignment = MemberAssignment(STATIC_LEFT, member.assignment.epoch, MemberAssignmentState.STABLE,
                                                 held, since=since_zero(held))
            member.revoke_by = None
        else:
            self.remove([member], RebalanceCause.MEMBER_LEFT)
        return Answer(member_id, request.member_epoch, 0, None)

    def remove(self, members: list[Member], cause: RebalanceCause) -> None:
        """Remove members (left, expired, fenced): the group epoch moves."""
        for member in members:
            del self.members[member.member_id]
            self.target.pop(member.member_id, None)
        self.subscribed.refresh(self.members.values(), self.subscribed_topics())
        self.preferred_assignor = self._preferred_assignor()
        self.epoch += 1
        self.epoch_cause = cause
        if not self.members:
            # Kafka 4.4 (KAFKA-20442): an empty group's target is the empty one, at the group's
            # epoch, and the next member's is computed at once
            self.target, self.assignment_epoch, self.assigned_at = {}, self.epoch, None

    def subscribed_topics(self) -> Topics:
        """The subscribed topics' metadata as last looked at (what a removal compares against)."""
        return self.subscribed.metadata

    def expire(self, now: int) -> list[str]:
        """Remove members whose session ended (static members that left and did not come back
        too) or that did not give partitions up within their rebalance timeout (fenced); their ids."""
        gone = [m for m in self.members.values() if now >= deadline_of(m)]
        if gone:
            self.remove(gone, RebalanceCause.MEMBER_EXPIRED)
        return [m.member_id for m in gone]


def _check_epoch(member: Member, request: Any) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid: epoch 0 (a member joining again under its
    id, Kafka 4.2's KAFKA-19233) passes and is given its whole assignment; a greater epoch is
    fenced; a smaller one only passes as the previous epoch with owned partitions the member still
    has (its answer was lost)."""
    received, current = request.member_epoch, member.assignment.epoch
    if received == 0:
        return
    if received > current:
        raise HeartbeatError(E.FENCED_MEMBER_EPOCH, f"The consumer group member has a greater member epoch "
                             f"({received}) than the one known by the group coordinator ({current}). The member "
                             "must abandon all its partitions and rejoin.")
    if received < current:
        owned = request.topic_partitions
        subset = owned is not None and all(
            set(tp.partitions) <= member.assignment.assigned.get(tp.topic_id, frozenset()) for tp in owned)
        if received != member.assignment.previous_epoch or not subset:
            raise HeartbeatError(E.FENCED_MEMBER_EPOCH, f"The consumer group member has a smaller member epoch "
                                 f"({received}) than the one known by the group coordinator ({current}). The "
                                 "member must abandon all its partitions and rejoin.")


def deadline_of(member: Member) -> int:
    """When the member is removed unless it acts: its session's end, or the end of its time to
    revoke, or (a classic member) to send SyncGroup or join again."""
    deadlines = [member.session_ends_at]
    if member.revoke_by is not None:
        deadlines.append(member.revoke_by)
    if member.classic is not None and member.classic.deadline is not None:
        deadlines.append(member.classic.deadline)
    return min(deadlines)
