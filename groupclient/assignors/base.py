"""The assignor interface, what an assignor sees of the cluster, and the leader's check of any
assignor's output.

An assignor is a pure function from the group's subscriptions and the cluster's partitions to an
assignment per member.  It runs on whichever member the coordinator elected leader, so every
member of a group must offer it under the same name.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..structs import TopicPartition

from ..protocol.consumer_protocol import Assignment, Subscription


class RebalanceProtocol(enum.Enum):
    EAGER = "eager"  # every member gives up all partitions before each rebalance
    COOPERATIVE = "cooperative"  # members keep partitions that do not move (KIP-429)


class AssignorError(ValueError):
    """An assignor's output would break the group; the message names the assignor."""


@dataclass(frozen=True)
class ClusterView:
    """The partitions of the group's topics, as the leader's metadata knows them.

    ``partition_racks``: for a topic, the racks of each partition's replicas (index = partition);
    a topic missing from it has unknown racks.  Filled only when some member sent a rack, so
    rack-unaware groups pay nothing for it (KIP-881)."""

    partitions_per_topic: Mapping[str, int]
    partition_racks: Mapping[str, Sequence[frozenset[str]]] = field(default_factory=dict)

    def racks_of(self, topic: str, partition: int) -> frozenset[str]:
        racks = self.partition_racks.get(topic)
        if racks is None or partition >= len(racks):
            return frozenset()
        return racks[partition]


def member_order(member_id: str, sub: Subscription) -> tuple[int, str]:
    """Kafka's MemberInfo order: static members first, by instance id (so a restarted static
    member, with a new member id, keeps its place, KIP-345); then dynamic ones by member id."""
    if sub.group_instance_id is not None:
        return (0, sub.group_instance_id)
    return (1, member_id)


class PartitionAssignor(abc.ABC):
    """Subclass this and implement :meth:`assign`; pass the class or an instance in
    ``partition_assignment_strategy``, or publish it under the ``groupclient.assignors`` entry
    point group so that users can list it by name.

    ``assign`` must be a pure function of its arguments (it runs on whichever member leads the
    group); the leader checks its result before sending it (see :func:`validate_assignment`).
    """

    name: str = ""
    # the protocols this assignor can run under, preferred last; a member uses the highest one
    # that all of its assignors support (Java's ConsumerPartitionAssignor.supportedProtocols)
    supported_protocols: tuple[RebalanceProtocol, ...] = (RebalanceProtocol.EAGER,)

    @abc.abstractmethod
    def assign(self, cluster: ClusterView, subscriptions: Mapping[str, Subscription]) -> dict[str, Assignment]:
        """Member id -> assignment.  Members left out get an empty assignment."""

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        """Bytes this member sends along with its subscription (the eager sticky assignor sends
        its previous assignment here)."""
        return None

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        """Called on every member (from poll(), on the application thread) when it receives its
        assignment for a generation."""


def common_protocol(assignors: Sequence[PartitionAssignor]) -> RebalanceProtocol:
    """The rebalance protocol a member with these assignors runs: the most cooperative one all
    of them support.  Listing an eager assignor beside a cooperative one is how a group upgrades
    from eager to cooperative in two rolling bounces."""
    common = set(RebalanceProtocol)
    for assignor in assignors:
        common &= set(assignor.supported_protocols)
    if not common:
        raise ValueError(f"the assignors {[a.name for a in assignors]} support no rebalance protocol in common")
    return RebalanceProtocol.COOPERATIVE if RebalanceProtocol.COOPERATIVE in common else RebalanceProtocol.EAGER


def validate_assignment(assignor: PartitionAssignor, cluster: ClusterView, subscriptions: Mapping[str, Subscription],
                        assignments: object, protocol: RebalanceProtocol = RebalanceProtocol.EAGER) -> None:
    """Reject an assignor's output that would break the group: unknown members or partitions,
    partitions given twice or left out, partitions of topics the member did not subscribe to, and,
    under COOPERATIVE, a partition handed from one owner straight to another in one round."""
    where = f"assignor {assignor.name!r}"
    if not isinstance(assignments, Mapping):
        raise AssignorError(f"{where} returned {type(assignments).__name__}, expected a dict of member id -> Assignment")
    counts = cluster.partitions_per_topic
    seen: dict[TopicPartition, str] = {}
    for member_id, assignment in assignments.items():
        if member_id not in subscriptions:
            raise AssignorError(f"{where} assigned to unknown member {member_id!r}")
        if not isinstance(assignment, Assignment):
            raise AssignorError(f"{where} returned {type(assignment).__name__} for {member_id!r}, expected Assignment")
        topics = set(subscriptions[member_id].topics)
        for tp in assignment.partitions:
            count = counts.get(tp.topic)
            if count is None or not 0 <= tp.partition < count:
                raise AssignorError(f"{where} assigned {tp}, which does not exist")
            if tp.topic not in topics:
                raise AssignorError(f"{where} assigned {tp} to {member_id!r}, which did not subscribe to it")
            if tp in seen:
                raise AssignorError(f"{where} assigned {tp} to both {seen[tp]!r} and {member_id!r}")
            seen[tp] = member_id
    subscribed = {t for s in subscriptions.values() for t in s.topics if t in counts}
    expected = sum(counts[t] for t in subscribed)
    if len(seen) != expected:
        missing = [TopicPartition(t, p) for t in sorted(subscribed) for p in range(counts[t])
                   if TopicPartition(t, p) not in seen]
        if not _held_back_for_revocation(missing, subscriptions):
            shown = ", ".join(f"{tp.topic}-{tp.partition}" for tp in missing[:5])
            raise AssignorError(f"{where} left {len(missing)} subscribed partitions unassigned ({shown}"
                                f"{', ...' if len(missing) > 5 else ''})")
    if protocol is RebalanceProtocol.COOPERATIVE:
        _check_cooperative(where, subscriptions, assignments)


def _held_back_for_revocation(missing: list[TopicPartition], subscriptions: Mapping[str, Subscription]) -> bool:
    """A partition may stay unassigned for one round, but only one that some member still owns
    (a cooperative member, which must revoke it before anyone else gets it; it rejoins at once).
    Whatever protocol the leader itself runs: during an eager -> cooperative upgrade an eager
    leader assigns for cooperative members too."""
    owned = {tp for s in subscriptions.values() for tp in s.owned_partitions}
    return all(tp in owned for tp in missing)


def _check_cooperative(where: str, subscriptions: Mapping[str, Subscription],
                       assignments: Mapping[str, Assignment]) -> None:
    """Java's validateCooperativeAssignment: no partition both revoked from one member and added
    to another in the same round (it would have two owners until the first one revokes)."""
    added: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    for member_id, sub in subscriptions.items():
        owned = set(sub.owned_partitions)
        now = set(assignments[member_id].partitions) if member_id in assignments else set()
        added |= now - owned
        revoked |= owned - now
    moved = added & revoked
    if moved:
        shown = ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(moved)[:5])
        raise AssignorError(f"{where} moved {len(moved)} partitions straight from one owner to another in one "
                            f"cooperative round ({shown}); they must be revoked first and assigned in the next round")
