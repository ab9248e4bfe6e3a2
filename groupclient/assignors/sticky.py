"""Sticky and cooperative-sticky assignors (Kafka's StickyAssignor and CooperativeStickyAssignor).

Both balance the group as evenly as the subscriptions allow and move as few partitions as they
can.  They differ in how members report what they own, and in what a moving partition does:

- ``sticky`` (eager) members give everything up before each rebalance, so they report their
  previous assignment and generation in the subscription's user data (StickyAssignorUserData v1,
  as Java and kafka-python do).
- ``cooperative-sticky`` members keep their partitions while rejoining and report them in the
  subscription's owned partitions and generation (v2+; older members send the generation as 4
  bytes of user data, as Java does).  A partition that moves to another member is left out of
  this round's assignment: its owner revokes it and rejoins, and the next round hands it on
  (KIP-429).  It also supports EAGER, so a group can move from an eager assignor to it in two
  rolling bounces.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Mapping

from ..structs import TopicPartition

from ..protocol.consumer_protocol import Assignment, Subscription
from .base import ClusterView, PartitionAssignor, RebalanceProtocol, member_order
from .sticky_balance import BalanceInput, balance

log = logging.getLogger("groupclient.assignors")

NO_GENERATION = -1


def encode_sticky_user_data(partitions: list[TopicPartition], generation: int) -> bytes:
    """StickyAssignorUserData v1: [topic: string, partitions: [int32]] then generation: int32."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = [struct.pack(">i", len(by_topic))]
    for topic, parts in sorted(by_topic.items()):
        name = topic.encode()
        out.append(struct.pack(">h", len(name)) + name + struct.pack(">i", len(parts)))
        out.append(struct.pack(f">{len(parts)}i", *sorted(parts)))
    out.append(struct.pack(">i", generation))
    return b"".join(out)


def decode_sticky_user_data(data: bytes) -> tuple[list[TopicPartition], int]:
    """Read StickyAssignorUserData v0 (no generation) or v1, as Java writes it, or with the int16
    version in front, as kafka-python 3 writes it; raises ValueError if it is neither."""
    try:
        return _decode_sticky_user_data(data, 0)
    except ValueError:
        if len(data) >= 2 and data[:2] in (b"\x00\x00", b"\x00\x01"):
            try:
                return _decode_sticky_user_data(data, 2)
            except ValueError:
                pass
        raise


def _decode_sticky_user_data(data: bytes, at: int) -> tuple[list[TopicPartition], int]:
    try:
        (topics,) = struct.unpack_from(">i", data, at)
        at += 4
        partitions = []
        for _ in range(topics):
            (length,) = struct.unpack_from(">h", data, at)
            if length < 0:
                raise ValueError(f"a topic name of length {length}")  # (it would loop on the same bytes)
            topic = data[at + 2:at + 2 + length].decode()
            at += 2 + length
            (count,) = struct.unpack_from(">i", data, at)
            at += 4
            partitions += [TopicPartition(topic, p) for p in struct.unpack_from(f">{count}i", data, at)]
            at += 4 * count
        generation = struct.unpack_from(">i", data, at)[0] if len(data) >= at + 4 else NO_GENERATION
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"not sticky assignor user data: {exc}") from None
    return partitions, generation


def _owned_and_generation(sub: Subscription, cooperative: bool) -> tuple[list[TopicPartition], int]:
    """What a member says it owns and from which generation (Java's memberData)."""
    if cooperative:
        if sub.generation_id >= 0:
            return list(sub.owned_partitions), sub.generation_id
        generation = NO_GENERATION
        if sub.user_data is not None and len(sub.user_data) == 4:
            generation = struct.unpack(">i", sub.user_data)[0]  # Java's CooperativeStickyAssignor
        elif sub.user_data:
            try:
                generation = decode_sticky_user_data(sub.user_data)[1]  # clients that send sticky user data
            except ValueError:
                pass
        return list(sub.owned_partitions), generation
    if not sub.user_data:
        return [], NO_GENERATION
    try:
        return decode_sticky_user_data(sub.user_data)
    except ValueError as exc:
        log.warning("ignoring a member's unreadable sticky user data: %s", exc)
        return [], NO_GENERATION


def valid_ownership(subscriptions: Mapping[str, Subscription], counts: Mapping[str, int],
                    cooperative: bool) -> dict[str, list[TopicPartition]]:
    """Each member's claims that still count: on existing partitions of topics it subscribes to;
    of two claims on one partition the newer generation wins, and two of the same generation
    both lose (Java's allSubscriptionsEqual bookkeeping)."""
    claims: dict[TopicPartition, tuple[int, str]] = {}
    contested: set[TopicPartition] = set()
    for member in sorted(subscriptions, key=lambda m: member_order(m, subscriptions[m])):
        sub = subscriptions[member]
        owned, generation = _owned_and_generation(sub, cooperative)
        topics = set(sub.topics)
        for tp in owned:
            if tp.topic not in topics or not 0 <= tp.partition < counts.get(tp.topic, 0):
                continue
            other = claims.get(tp)
            if other is None or generation > other[0]:
                claims[tp] = (generation, member)
                contested.discard(tp)
            elif generation == other[0]:
                log.error("%s is claimed by %s and %s in generation %d; it is given afresh", tp, other[1],
                          member, generation)
                contested.add(tp)
    result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
    for tp, (_generation, member) in claims.items():
        if tp not in contested:
            result[member].append(tp)
    return result


class StickyAssignor(PartitionAssignor):
    name = "sticky"
    supported_protocols: tuple[RebalanceProtocol, ...] = (RebalanceProtocol.EAGER,)
    _cooperative = False

    def __init__(self) -> None:
        self._previous: list[TopicPartition] = []
        self._generation = NO_GENERATION

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        return encode_sticky_user_data(self._previous, self._generation)

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        self._previous = list(assignment.partitions)
        self._generation = generation_id

    def assign(self, cluster: ClusterView, subscriptions: Mapping[str, Subscription]) -> dict[str, Assignment]:
        if not subscriptions:
            return {}
        counts = {t: n for t, n in cluster.partitions_per_topic.items() if n > 0}
        topics = sorted({t for s in subscriptions.values() for t in s.topics if t in counts})
        index = {t: i for i, t in enumerate(topics)}
        members = sorted(subscriptions, key=lambda m: member_order(m, subscriptions[m]))
        owned = valid_ownership(subscriptions, counts, self._cooperative)
        member_racks = {m: s.rack_id for m, s in subscriptions.items() if s.rack_id}
        partition_racks = {index[t]: cluster.partition_racks[t] for t in topics
                           if member_racks and t in cluster.partition_racks}
        result = balance(BalanceInput(
            topics=topics, counts=[counts[t] for t in topics], members=members,
            member_topics={m: frozenset(index[t] for t in subscriptions[m].topics if t in index) for m in members},
            owned={m: [(index[tp.topic], tp.partition) for tp in owned[m]] for m in members},
            member_racks=member_racks if partition_racks else {}, partition_racks=partition_racks))
        held_back = self._held_back(subscriptions, index, result.transferring, result.assignment) \
            if self._cooperative else set()
        return {m: Assignment([TopicPartition(topics[t], p) for t, p in parts if (t, p) not in held_back])
                for m, parts in result.assignment.items()}

    @staticmethod
    def _held_back(subscriptions: Mapping[str, Subscription], index: Mapping[str, int],
                   transferring: set[tuple[int, int]],
                   assignment: Mapping[str, list[tuple[int, int]]]) -> set[tuple[int, int]]:
        """What waits a round under COOPERATIVE: partitions moving from their valid owner, and
        (Java's computePartitionsTransferringOwnership) any partition given to a member that does
        not report it while another member still does -- a claim that did not count (the same
        generation as another claim, a topic its member no longer subscribes to) is still a
        partition that member holds until it revokes it."""
        reported = {m: {(index[tp.topic], tp.partition) for tp in s.owned_partitions if tp.topic in index}
                    for m, s in subscriptions.items()}
        anyone = set().union(*reported.values())
        held_back = set(transferring)
        for member, parts in assignment.items():
            held_back.update(tp for tp in parts if tp in anyone and tp not in reported[member])
        return held_back


class CooperativeStickyAssignor(StickyAssignor):
    name = "cooperative-sticky"
    supported_protocols = (RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE)
    _cooperative = True

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        # the generation again, for leaders that read only subscription v0/v1 (Java does the same)
        return struct.pack(">i", self._generation)
