"""One share group's membership (KIP-932) on the coordinator's side, sans-IO: a ShareGroupHeartbeat
in, its answer out, with the rules of Kafka 4.4's ``GroupMetadataManager.shareGroupHeartbeat``.
No clock (``now`` is given), no I/O, no lock.

- A group starts at epoch 1 with an empty target at epoch 1 (Kafka 4.3+), so its first member
  gets epoch 2.  The group epoch grows when a member joins, leaves or is removed, when a member's
  topics change, and when a subscribed topic's partitions change.
- The target is computed again (:mod:`.assignor`) when the group epoch moved past it, by a
  heartbeat at least ``assignment_interval_ms`` after the last computation (0: at once).
- There is no revocation: a member moves to the target's epoch at once, with its partitions in it.
  Partitions are shared, so nobody waits for another member to give one up.
- A heartbeat answers the member's assignment when it joined, sent its topics, or the assignment
  changed; otherwise none (unchanged).
- Epoch -1 leaves.  A member that stops heartbeating is removed when its session ends; what it
  had acquired stays locked until the locks run out (its share session's records are the
  share-partitions' business, not the group's).
- A share-partition is initialised at once: a new member's first answer already has partitions
  (Kafka initialises them through its share coordinator first, so its first answer is empty).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ...error_codes import ErrorCode
from .assignor import Assignment, Partition, assign

E = ErrorCode
LEAVE_EPOCH = -1
INITIAL_EPOCH = 1


@dataclass(frozen=True)
class ShareGroupSettings:
    """Kafka's group.share.* (or the group's own share.* configs)."""

    heartbeat_interval_ms: int = 5000
    session_timeout_ms: int = 45000
    max_size: int = 200
    assignment_interval_ms: int = 1000


class ShareHeartbeatError(Exception):
    """A heartbeat refused: Kafka's error code and message."""

    def __init__(self, error: ErrorCode, message: str | None) -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message


@dataclass(frozen=True)
class ShareAnswer:
    """What a heartbeat is answered: the member's epoch, the interval, and its partitions by topic
    when they are sent (None: unchanged)."""

    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: dict[str, list[int]] | None


@dataclass
class ShareMember:
    """A share group's member."""

    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None = None
    topics: frozenset[str] = frozenset()
    epoch: int = 0
    previous_epoch: int = 0
    assigned: set[Partition] = field(default_factory=set)
    sent: frozenset[Partition] | None = None
    session_ends_at: int = 0


def validate(group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
             topics: list[str] | None) -> None:
    """The request's own checks (Kafka's ``throwIfShareGroupHeartbeatRequestIsInvalid``)."""
    def invalid(message: str) -> ShareHeartbeatError:
        return ShareHeartbeatError(E.INVALID_REQUEST, message)

    if not member_id.strip():
        raise invalid("MemberId can't be empty.")
    if not group_id.strip():
        raise invalid("GroupId can't be empty.")
    if rack_id is not None and not rack_id.strip():
        raise invalid("RackId can't be empty.")
    if member_epoch == 0 and not topics:
        raise invalid("SubscribedTopicNames must be set in first request.")
    if member_epoch < LEAVE_EPOCH:
        raise invalid("MemberEpoch is invalid.")


class ShareGroup:
    """One share group: its members, epochs and target assignment (the module's rules)."""

    def __init__(self, group_id: str, settings: ShareGroupSettings | None = None) -> None:
        self.group_id = group_id
        self.settings = settings or ShareGroupSettings()
        self.members: dict[str, ShareMember] = {}
        self.epoch = INITIAL_EPOCH
        self.assignment_epoch = INITIAL_EPOCH
        self.target: Assignment = {}
        self.computed_at: int | None = None
        self.partitions: dict[str, int] = {}  # the subscribed topics' partition counts, as last seen

    @property
    def state(self) -> str:
        """Empty or Stable, as Kafka describes a share group."""
        return "Stable" if self.members else "Empty"

    def subscribed_topics(self) -> set[str]:
        """Every topic some member subscribes to."""
        return {t for m in self.members.values() for t in m.topics}

    def heartbeat(self, member_id: str, member_epoch: int, rack_id: str | None, topics: list[str] | None,
                  client_id: str, client_host: str, now: int, partitions: Mapping[str, int]) -> ShareAnswer:
        """Apply one heartbeat (already through :func:`validate`); ``partitions`` are the
        cluster's topics' partition counts now.  Raises ShareHeartbeatError for an error answer."""
        if member_epoch == LEAVE_EPOCH:
            self.remove(self._known(member_id))
            return ShareAnswer(member_id, LEAVE_EPOCH, 0, None)
        member = self.members.get(member_id)
        if member is None:
            if member_epoch != 0:
                raise self._unknown(member_id)
            if len(self.members) >= self.settings.max_size:
                raise ShareHeartbeatError(E.GROUP_MAX_SIZE_REACHED, "The share group has reached its maximum capacity "
                                                                    f"of {self.settings.max_size} members.")
            member = self.members[member_id] = ShareMember(member_id, client_id, client_host)
        elif member_epoch != 0:
            self._check_epoch(member, member_epoch)
        member.client_id, member.client_host = client_id, client_host
        if rack_id is not None:
            member.rack_id = rack_id
        moved = topics is not None and frozenset(topics) != member.topics  # a join always subscribes
        if moved:
            member.topics = frozenset(topics or ())
        if self._see(partitions) or moved:
            self.epoch += 1  # once, whatever moved it
        member.session_ends_at = now + self.settings.session_timeout_ms
        self._maybe_compute(now)
        self._reconcile(member)
        full = member_epoch == 0 or topics is not None
        assigned = frozenset(member.assigned)
        send = full or assigned != member.sent
        member.sent = assigned
        return ShareAnswer(member_id, member.epoch, self.settings.heartbeat_interval_ms,
                           _by_topic(assigned) if send else None)

    def _known(self, member_id: str) -> ShareMember:
        member = self.members.get(member_id)
        if member is None:
            raise self._unknown(member_id)
        return member

    def _unknown(self, member_id: str) -> ShareHeartbeatError:
        return ShareHeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {self.group_id}.")

    @staticmethod
    def _check_epoch(member: ShareMember, received: int) -> None:
        if received > member.epoch:
            raise ShareHeartbeatError(E.FENCED_MEMBER_EPOCH, (
                f"The share group member has a greater member epoch ({received}) than the one known by the group "
                f"coordinator ({member.epoch}). The member must abandon all its partitions and rejoin."))
        if received < member.epoch and received != member.previous_epoch:
            raise ShareHeartbeatError(E.FENCED_MEMBER_EPOCH, (
                f"The share group member has a smaller member epoch ({received}) than the one known by the group "
                f"coordinator ({member.epoch}), and it does not match the previous member epoch "
                f"({member.previous_epoch}). The member must abandon all its partitions and rejoin."))

    def _see(self, partitions: Mapping[str, int]) -> bool:
        """Take the subscribed topics' partition counts; whether they changed (a topic created,
        grown or deleted, or a topic subscribed or dropped)."""
        seen = {t: partitions[t] for t in sorted(self.subscribed_topics()) if partitions.get(t)}
        changed = seen != self.partitions
        self.partitions = seen
        return changed

    def _maybe_compute(self, now: int) -> None:
        if self.assignment_epoch >= self.epoch:
            return
        interval = self.settings.assignment_interval_ms
        if self.computed_at is not None and interval and now < self.computed_at + interval:
            return  # KIP-1263's batching: members keep the previous target meanwhile
        self.target = assign({m.member_id: m.topics for m in self.members.values()}, self.partitions, self.target)
        self.assignment_epoch = self.epoch
        self.computed_at = now

    def _reconcile(self, member: ShareMember) -> None:
        """No revocation in a share group: a member behind the target's epoch moves to it at once."""
        if member.epoch != self.assignment_epoch:
            member.previous_epoch, member.epoch = member.epoch, self.assignment_epoch
            member.assigned = {p for p in self.target.get(member.member_id, ()) if p[0] in member.topics}

    def remove(self, member: ShareMember) -> None:
        """A member leaves or is removed: the group epoch moves on."""
        del self.members[member.member_id]
        self.target.pop(member.member_id, None)
        self._see(self.partitions)  # topics nobody subscribes to any more are dropped with it
        self.epoch += 1

    def expire(self, now: int) -> list[str]:
        """Members whose session ended by ``now``, removed."""
        gone = [m for m in self.members.values() if m.session_ends_at <= now]
        for member in gone:
            self.remove(member)
        return [m.member_id for m in gone]


def _by_topic(partitions: frozenset[Partition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for topic, p in sorted(partitions):
        out.setdefault(topic, []).append(p)
    return out
