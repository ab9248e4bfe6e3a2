"""Classic members and groups as the coordinator holds them (Kafka's MemberMetadata / GroupMetadata)."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field

from ...error_codes import ErrorCode
from ..group_base.classic_api import JoinCallback, JoinedMember, JoinResult, SyncCallback, SyncResult
from ..group_base.rebalance import RebalanceCause
from .state import CAN_REBALANCE, GroupState, check_transition

log = logging.getLogger("groupclient.coordinator.group")


@dataclass
class Member:
    """A classic group's member (Kafka's MemberMetadata), with the JoinGroup or SyncGroup it
    has waiting, if any."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_callback: JoinCallback | None = None
    sync_callback: SyncCallback | None = None
    # A member that joined in the current rebalance and has never had a JoinGroup answered.
    is_new: bool = False
    # Set by a heartbeat (or any proof of life) and cleared when the next expiry is armed.
    heartbeat_satisfied: bool = False
    # the SASL user that created the member (None on a listener without SASL): only that user
    # may act for this member id (handlers/context.py, foreign_member)
    principal: str | None = None

    @property
    def is_static(self) -> bool:
        """Whether it has a group instance id (KIP-345)."""
        return self.group_instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        """Whether a JoinGroup of it waits for the rebalance."""
        return self.join_callback is not None

    @property
    def awaiting_sync(self) -> bool:
        """Whether a SyncGroup of it waits for the leader's assignment."""
        return self.sync_callback is not None

    def protocol_names(self) -> list[str]:
        """Its protocols' names, preferred first."""
        return [name for name, _ in self.protocols]

    def metadata_for(self, protocol: str) -> bytes:
        """What it stated for ``protocol`` (KeyError: it does not have it)."""
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol!r}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Whether a rejoin states the very protocols it has."""
        return self.protocols == protocols

    def complete_join(self, result: JoinResult) -> None:
        """Answer the waiting JoinGroup, if any (Kafka's completeJoinFuture)."""
        if self.join_callback is not None:
            callback, self.join_callback = self.join_callback, None
            callback(result)

    def complete_sync(self, result: SyncResult) -> None:
        """Answer the waiting SyncGroup, if any (Kafka's completeSyncFuture)."""
        if self.sync_callback is not None:
            callback, self.sync_callback = self.sync_callback, None
            callback(result)

    def has_satisfied_heartbeat(self) -> bool:
        """Whether its session deadline passing finds it alive (Kafka's hasSatisfiedHeartbeat)."""
        if self.is_new:
            # new members can expire while still awaiting their first join response
            return self.heartbeat_satisfied
        if self.awaiting_join or self.awaiting_sync:
            # members in the middle of a rebalance are covered by the rebalance timeouts
            return True
        return self.heartbeat_satisfied


@dataclass
class Group:
    """A classic group (Kafka's GroupMetadata): its state, generation, protocol and members."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)  # insertion order = join order
    pending_members: set[str] = field(default_factory=set)  # got MEMBER_ID_REQUIRED, not yet joined
    pending_sync_members: set[str] = field(default_factory=set)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    new_member_added: bool = False
    # remaining budget of the initial delayed join, None when no initial delay is running
    initial_join_remaining_ms: int | None = None
    # When the group last became (or was created or loaded) Empty, in monotonic ms: offsets
    # retention counts from here (Kafka's currentStateTimestamp).  None: not known yet.
    empty_since_ms: int | None = None
    # Monotonic ms of each partition's last commit (or of the load).  The stored commit
    # timestamps are wall-clock and the core gets no wall clock on its timers, so the offsets
    # of a group without a protocol type expire by these.
    offset_commit_ms: dict[tuple[str, int], int] = field(default_factory=dict)
    # why the rebalance in progress (or the last one) began, for the coordinator's metrics
    rebalance_cause: RebalanceCause | None = None

    # -- transitions ---------------------------------------------------------------------
    def transition_to(self, target: GroupState, reason: str, quiet: bool = False) -> None:
        """Change state (a transition Kafka allows, or raise); logged at INFO, or at DEBUG when
        ``quiet`` (the groups unloaded by a shutdown, which the shutdown's own line covers)."""
        check_transition(self.group_id, self.state, target)
        log.log(
            logging.DEBUG if quiet else logging.INFO,
            "group %s generation %d: %s -> %s (%s)",
            self.group_id, self.generation_id, self.state.value, target.value, reason,
        )
        self.state = target

    def is_in(self, *states: GroupState) -> bool:
        """Whether the group is in one of ``states``."""
        return self.state in states

    def can_rebalance(self) -> bool:
        """Whether a join or leave may start a rebalance now."""
        return self.state in CAN_REBALANCE

    # -- membership ----------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        """Whether the member is in the group."""
        return member_id in self.members

    def get(self, member_id: str) -> Member:
        """The member (KeyError: not in the group)."""
        return self.members[member_id]

    def get_or_none(self, member_id: str) -> Member | None:
        """The member, or None."""
        return self.members.get(member_id)

    def is_leader(self, member_id: str) -> bool:
        """Whether the member leads the group."""
        return self.leader_id == member_id

    def add(self, member: Member) -> None:
        """A member joins: the first sets the protocol type and leads."""
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        """The member leaves (its static id too); the removed member, if it was there."""
        member = self.members.pop(member_id, None)
        self.pending_sync_members.discard(member_id)
        if member is not None and member.group_instance_id is not None:
            if self.static_members.get(member.group_instance_id) == member_id:
                del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            # the next oldest member leads; a rebalance will re-elect among those who rejoin
            self.leader_id = next(iter(self.members), None)
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        """The member id a group instance id has now, if any."""
        return None if instance_id is None else self.static_members.get(instance_id)

    def is_static_member_fenced(self, instance_id: str | None, member_id: str) -> bool:
        """Whether the instance id belongs to another member id now (FENCED_INSTANCE_ID)."""
        known = self.static_member_id(instance_id)
        return known is not None and known != member_id

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        """A static member back with a new member id takes its old place; the old id's waiting
        requests hear FENCED_INSTANCE_ID."""
        member = self.members.pop(old_id)
        member.complete_join(JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_id))
        member.complete_sync(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_id)
            self.pending_sync_members.add(new_id)
        self.static_members[instance_id] = new_id
        return member

    def num_awaiting_join(self) -> int:
        """How many members have a JoinGroup waiting."""
        return sum(1 for m in self.members.values() if m.awaiting_join)

    def has_all_members_joined(self) -> bool:
        """Whether every member rejoined and no member id is still pending."""
        return len(self.members) == self.num_awaiting_join() and not self.pending_members

    def not_yet_rejoined(self) -> list[Member]:
        """The members without a JoinGroup waiting."""
        return [m for m in self.members.values() if not m.awaiting_join]

    def max_rebalance_timeout_ms(self) -> int:
        """The longest rebalance timeout of its members (0 without members)."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols -----------------------------------------------------------------------
    def candidate_protocols(self) -> list[str]:
        """Protocols every member supports, in the first member's order of preference."""
        members = list(self.members.values())
        if not members:
            return []
        common = set(members[0].protocol_names())
        for member in members[1:]:
            common &= set(member.protocol_names())
        return [p for p in members[0].protocol_names() if p in common]

    def supports_protocols(self, protocol_type: str, protocols: list[str]) -> bool:
        """Whether a member of that protocol type and protocols may join."""
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        if protocol_type != self.protocol_type:
            return False
        counts = Counter(p for m in self.members.values() for p in set(m.protocol_names()))
        return any(counts[p] == len(self.members) for p in protocols)

    def select_protocol(self) -> str:
        """Each member votes for its most preferred candidate; the most votes win.

        Ties go to the candidate the first (oldest) member prefers, so the choice is
        deterministic.
        """
        candidates = self.candidate_protocols()
        if not candidates:
            raise ValueError(f"group {self.group_id!r} has no protocol all members support")
        votes: Counter[str] = Counter()
        for member in self.members.values():
            votes[next(p for p in member.protocol_names() if p in candidates)] += 1
        best = max(votes.values())
        return next(p for p in candidates if votes[p] == best)

    def current_member_metadata(self) -> tuple[JoinedMember, ...]:
        """The members as the leader's JoinGroup answer lists them."""
        if self.protocol_name is None:
            raise ValueError(f"group {self.group_id!r} has no selected protocol")
        protocol = self.protocol_name
        return tuple(
            JoinedMember(m.member_id, m.group_instance_id, m.metadata_for(protocol))
            for m in self.members.values()
        )

    def init_next_generation(self) -> None:
        """The join phase ends: the next generation, its protocol, and CompletingRebalance (Empty
        without members)."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, "all members have rejoined")
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, "no members rejoined")
        self.pending_sync_members.clear()
