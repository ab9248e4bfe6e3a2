"""Classic-protocol members inside a consumer-protocol group, as Kafka 4.1 keeps them under its
default migration policy (``bidirectional``): a JoinGroup to a live consumer group joins it.

Such a member is a member like the others — it has an epoch, a target from the group's server-side
assignor, and it receives a partition only once the previous owner let it go — but it speaks
JoinGroup, SyncGroup and Heartbeat:

- its JoinGroup is answered at once: its epoch as the generation, its first protocol's name, no
  leader and no member list (nothing is assigned on the client side); the owned partitions its
  subscription states acknowledge what it gave up;
- its SyncGroup answers what it may own now, in the consumer protocol's encoding, or
  REBALANCE_IN_PROGRESS when a newer target came after its join;
- its Heartbeat answers REBALANCE_IN_PROGRESS when it must join again to move on: the target epoch
  moved past its epoch, it must give partitions up, or partitions it waited for are free now;
- it must send SyncGroup within its rebalance timeout after a join, and join again within it after
  being told to; its session is its JoinGroup's session timeout, kept alive by any of the three.

Sans-IO like the group itself: ``now`` is given, answers are returned.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from ...error_codes import ErrorCode
from ...protocol.consumer_protocol import PROTOCOL_TYPE, Assignment, decode_assignment, decode_subscription, \
    encode_assignment
from ...structs import TopicPartition
from ..group_base.classic_api import JoinRequest, JoinResult, SyncRequest, SyncResult
from ..group_base.rebalance import RebalanceCause
from .group import ClassicProtocol, ConsumerGroup, Member
from .reconciliation import MemberAssignment, MemberAssignmentState
from .subscriptions import Topics

E = ErrorCode


def supports(group: ConsumerGroup, protocol_type: str, names: list[str]) -> bool:
    """Kafka's ConsumerGroup.supportsClassicProtocols: the consumer embedded protocol, and a
    protocol every classic member already in the group has too."""
    if protocol_type != PROTOCOL_TYPE or not names:
        return False
    others = [m.classic for m in group.members.values() if m.classic is not None]
    return all(any(name in {p for p, _ in c.protocols} for name in names) for c in others)


def _ids(partitions: list[TopicPartition], topics: Topics) -> dict[uuid.UUID, frozenset[int]]:
    owned: dict[uuid.UUID, set[int]] = {}
    for tp in partitions:
        if tp.topic in topics:
            owned.setdefault(topics[tp.topic][0], set()).add(tp.partition)
    return {t: frozenset(ps) for t, ps in owned.items()}


def _refusal(group: ConsumerGroup, req: JoinRequest, member_id: str, unknown: bool) -> ErrorCode | None:
    """Why the JoinGroup's member cannot be found (Kafka 4.4's classicGroupJoinToConsumerGroup),
    before anything changes: a static member naming an id not its instance's, or a dynamic one
    naming a consumer-protocol member's id."""
    if req.group_instance_id is not None:
        holder = group.static_member(req.group_instance_id)
        if unknown:
            return None
        if holder is None:
            return E.UNKNOWN_MEMBER_ID
        return E.FENCED_INSTANCE_ID if holder.member_id != member_id else None
    member = group.members.get(member_id)
    return E.UNKNOWN_MEMBER_ID if member is not None and member.classic is None else None


def _member_of(group: ConsumerGroup, req: JoinRequest, member_id: str, unknown: bool) -> tuple[Member, bool]:
    """The member the JoinGroup is from (once :func:`_refusal` found none), and whether it is new
    to the group: a new one, a static member's replacement, or the known one."""
    holder = group.static_member(req.group_instance_id)
    if holder is not None:
        if unknown:  # back under a new id, whichever protocol its predecessor spoke and whether or not it left
            holder = group.replace_static(holder, member_id, holder.rack_id, req.client_id, req.client_host,
                                          req.principal)
        return holder, False
    member = group.members.get(member_id)
    if member is None:  # Kafka keeps no pending ids here: the id it handed out, or any, joins
        return _new(group, req, member_id), True
    return member, False


def _new(group: ConsumerGroup, req: JoinRequest, member_id: str) -> Member:
    member = Member(member_id, req.group_instance_id, None, req.client_id, req.client_host,
                    joined_at=group.joins, principal=req.principal)
    group.joins += 1
    group.members[member_id] = member
    return member


def join(group: ConsumerGroup, req: JoinRequest, now: int, topics: Topics,
         new_member_id: Callable[[], str]) -> JoinResult:
    """A classic JoinGroup to this (live) consumer group."""
    unknown = not req.member_id
    member_id = new_member_id() if unknown else req.member_id
    # Kafka 4.4 (KAFKA-20601): a static member comes back to a full group
    if group.static_member(req.group_instance_id) is None and (unknown or member_id not in group.members) \
            and len(group.members) >= group.settings.max_size:
        return JoinResult(E.GROUP_MAX_SIZE_REACHED, req.member_id)
    if not supports(group, req.protocol_type, [p for p, _ in req.protocols]):
        return JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, req.member_id)
    if unknown and req.require_known_member_id and req.group_instance_id is None:
        return JoinResult(E.MEMBER_ID_REQUIRED, member_id)
    refused = _refusal(group, req, member_id, unknown)
    if refused is not None:
        return JoinResult(refused, req.member_id)
    try:
        subscription = decode_subscription(req.protocols[0][1])
    except Exception:  # refused before the group changes, as Kafka discards a failed join's records
        return JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, member_id)
    member, joined = _member_of(group, req, member_id, unknown)
    names = tuple(sorted(set(subscription.topics)))
    dropped = bool(set(member.topics) - set(names))
    changed = names != member.topics or joined
    member.topics, member.rack_id = names, subscription.rack_id
    member.client_id, member.client_host = req.client_id, req.client_host
    member.rebalance_timeout_ms = req.rebalance_timeout_ms
    member.classic = ClassicProtocol(req.session_timeout_ms, req.protocols, now + req.rebalance_timeout_ms)
    if group.subscribed.refresh(group.members.values(), topics) or changed:
        group.epoch += 1
        group.epoch_cause = (RebalanceCause.MEMBER_JOINED if joined else RebalanceCause.SUBSCRIPTION_CHANGED
                             if changed else RebalanceCause.TOPICS_CHANGED)
    group.maybe_assign(topics, now)
    group.reconcile(member, _ids(subscription.owned_partitions, topics), now, topics, dropped)
    member.session_ends_at = now + req.session_timeout_ms
    return JoinResult(E.NONE, member_id, member.assignment.epoch, PROTOCOL_TYPE, member.classic.protocol_name, "")


def _validated(group: ConsumerGroup, member_id: str,
               instance_id: str | None) -> tuple[Member, ClassicProtocol] | ErrorCode:
    """The classic member a SyncGroup or Heartbeat is from (Kafka's validateConsumerGroupMember): a
    static one by its instance id, FENCED_INSTANCE_ID when another member id holds the instance."""
    if instance_id is None:
        member = group.members.get(member_id)
    else:
        member = group.static_member(instance_id)
        if member is not None and member.member_id != member_id:
            return E.FENCED_INSTANCE_ID
    if member is None or member.classic is None:
        return E.UNKNOWN_MEMBER_ID
    return member, member.classic


def sync(group: ConsumerGroup, req: SyncRequest, now: int, name_of: Callable[[uuid.UUID], str | None]) -> SyncResult:
    """A classic member's SyncGroup: what it may own now."""
    found = _validated(group, req.member_id, req.group_instance_id)
    if isinstance(found, ErrorCode):
        return SyncResult(found)
    member, classic = found
    if req.generation_id != member.assignment.epoch:
        return SyncResult(E.ILLEGAL_GENERATION)
    name = classic.protocol_name
    if (req.protocol_type not in (None, PROTOCOL_TYPE)) or (req.protocol_name not in (None, name)):
        return SyncResult(E.INCONSISTENT_GROUP_PROTOCOL)
    if group.assignment_epoch > member.assignment.epoch and \
            member.assignment.state is not MemberAssignmentState.UNREVOKED_PARTITIONS:
        # a newer target came after its join: it must join again to catch up, within its
        # rebalance timeout (Kafka's throwIfRebalanceInProgress); one giving partitions up has
        # joined already and goes on revoking
        if classic.deadline is None:
            classic.deadline = now + member.rebalance_timeout_ms
        return SyncResult(E.REBALANCE_IN_PROGRESS)
    classic.deadline = None
    member.session_ends_at = now + classic.session_timeout_ms
    partitions = [TopicPartition(topic, p) for tid, ps in member.assignment.assigned.items()
                  if (topic := name_of(tid)) is not None for p in sorted(ps)]
    return SyncResult(E.NONE, PROTOCOL_TYPE, name, encode_assignment(Assignment(partitions)))


def heartbeat(group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int,
              now: int) -> ErrorCode:
    """A classic member's Heartbeat: REBALANCE_IN_PROGRESS when it must join again to move on."""
    found = _validated(group, member_id, instance_id)
    if isinstance(found, ErrorCode):
        return found
    member, classic = found
    if generation_id != member.assignment.epoch:
        return E.ILLEGAL_GENERATION
    member.session_ends_at = now + classic.session_timeout_ms
    state = member.assignment.state
    # Kafka 4.3: against the target's epoch, not the group's (the target may lag it by the
    # assignment interval, and a rejoin before it is computed would change nothing)
    if (member.assignment.epoch < group.assignment_epoch or state is MemberAssignmentState.UNREVOKED_PARTITIONS
            or (state is MemberAssignmentState.UNRELEASED_PARTITIONS and not waiting(group, member))):
        if classic.deadline is None:
            classic.deadline = now + member.rebalance_timeout_ms
        return E.REBALANCE_IN_PROGRESS
    return E.NONE


def waiting(group: ConsumerGroup, member: Member) -> bool:
    """Whether a partition of its target is still held by another member."""
    held = group.holders()
    for topic, partitions in group.target.get(member.member_id, {}).items():
        for p in partitions:
            if p not in member.assignment.assigned.get(topic, frozenset()) and \
                    held.get((topic, p)) not in (None, member.member_id):
                return True
    return False


def from_classic(member_id: str, instance_id: str | None, client_id: str, client_host: str,
                 session_timeout_ms: int, rebalance_timeout_ms: int, protocols: tuple[tuple[str, bytes], ...],
                 protocol_name: str, assignment: bytes, generation: int, topics: Topics, joined_at: int) -> Member:
    """A classic group's member as a classic member of the consumer group it becomes (an online
    upgrade): at the classic generation, owning what its last SyncGroup gave it."""
    chosen = next((m for n, m in protocols if n == protocol_name), protocols[0][1])
    subscription = decode_subscription(chosen)
    owned = _ids(decode_assignment(assignment).partitions, topics)
    ordered = tuple(sorted(protocols, key=lambda p: p[0] != protocol_name))  # the group's protocol first
    return Member(member_id, instance_id, subscription.rack_id, client_id, client_host,
                  tuple(sorted(set(subscription.topics))), rebalance_timeout_ms=rebalance_timeout_ms,
                  assignment=MemberAssignment(generation, generation, MemberAssignmentState.STABLE, owned),
                  joined_at=joined_at, classic=ClassicProtocol(session_timeout_ms, ordered))
