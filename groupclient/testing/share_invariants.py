"""What must hold for a simulated share group (KIP-932), checked after every step, and at the end.

1. **One holder at a time.**  When a member's application is handed a record, the share-partition
   has it ACQUIRED by that member, at the delivery count the record carries, with its lock still
   running: no record goes to an application whose member does not hold it (what it buffered
   after its lock ran out or its session closed, say), so no two applications work on one record
   as its holders.
2. **No delivery past the limit.**  No record is handed out more than the group's
   ``share.delivery.count.limit`` times, to all members together.
3. **An accepted record is never delivered again.**  Once a member was told its ACCEPT was taken
   (the acknowledgement commit callback), no member is handed that record at a later delivery.
   (A member whose lock ran out may be told so after the record went to another member which
   finished it: Kafka takes any acknowledgement of what is behind the share-partition's start
   offset.  Such an answer says nothing of the deliveries before it, and 1 judges those.)
4. **Every delivery is counted once.**  No two deliveries of one record carry the same count.
5. **No member fails for a bug**, as in the group invariants (``InternalError``, INVALID_REQUEST),
   and no acknowledgement answer comes for one never made.

And once the group has drained (:meth:`ShareInvariants.check_drained`):

6. **Every record ends Acknowledged or Archived**: each share-partition's start offset is the
   log's end, and every record was handed out at least once (none skipped).
"""

from __future__ import annotations

from typing import Protocol

from ..coordinator.core import ClusterCore
from ..coordinator.share_group.partition import RecordState, SharePartition
from ..error_codes import ErrorCode
from ..errors import BrokerError, InternalError
from ..structs import TopicPartition
from .invariants import InvariantViolation
from .share_members import Key, ShareLedger, ShareSimMember


class ObservedShareGroup(Protocol):
    """What the share invariants read of the simulation."""

    seed: int
    core: ClusterCore
    share_group_id: str
    share_members: dict[str, ShareSimMember]
    share_ledger: ShareLedger
    log: list[str]

    @property
    def now(self) -> int: ...


class ShareInvariants:
    """The invariants above; :meth:`check` runs after every step of the simulation."""

    def __init__(self, sim: ObservedShareGroup) -> None:
        self.sim = sim
        # how many of each member's errors were looked at (by id, the member kept so the id is not reused)
        self.errors_seen: dict[int, tuple[ShareSimMember, int]] = {}
        self.checks = 0

    def fail(self, what: str) -> None:
        sim = self.sim
        schedule = "\n  ".join(sim.log[-40:])
        raise InvariantViolation(f"seed {sim.seed}, t={sim.now}: {what}\nschedule so far:\n  {schedule}")

    def share_partition(self, tp: TopicPartition) -> SharePartition | None:
        """The coordinator's share-partition of ``tp`` for the group (None: not started yet)."""
        topic = self.sim.core.topics.topics.get(tp.topic)
        if topic is None:
            return None
        return self.sim.core.share_groups.partitions.get((self.sim.share_group_id, topic.topic_id, tp.partition))

    def delivery_limit(self) -> int:
        return self.sim.core.share_groups.partition_settings(self.sim.share_group_id).delivery_count_limit

    def check(self) -> None:
        self.checks += 1
        ledger = self.sim.share_ledger
        if ledger.problems:
            self.fail(ledger.problems[0])
        new, ledger.new_deliveries = ledger.new_deliveries, []
        limit = self.delivery_limit()
        for key, delivery in new:
            self._held_by(key, delivery.member, delivery.member_id, delivery.delivery_count)
            if delivery.delivery_count > limit:
                self.fail(f"{_name(key)} was handed to {delivery.member} at delivery {delivery.delivery_count}, "
                          f"past the limit of {limit}")
            counts = [d.delivery_count for d in ledger.deliveries[key]]
            if counts.count(delivery.delivery_count) > 1:
                self.fail(f"{_name(key)} was handed out twice at delivery {delivery.delivery_count}: "
                          f"{ledger.deliveries[key]}")
        accepted, ledger.new_accepts = ledger.new_accepts, []
        for key in {k for k, _ in new} | set(accepted):
            self._not_after_accept(key)
        self._no_bugs()

    def _held_by(self, key: Key, member: str, member_id: str, count: int) -> None:
        tp, offset = key
        partition = self.share_partition(tp)
        record = None if partition is None else partition.window.get(offset)
        now = self.sim.now
        if (record is None or record.state is not RecordState.ACQUIRED or record.member != member_id
                or record.deliveries != count or record.locked_until is None or record.locked_until <= now):
            held = ("not in the share-partition's window" if record is None else
                    f"{record.state.name} by {record.member or 'nobody'} at delivery {record.deliveries}, "
                    f"locked until {record.locked_until}")
            self.fail(f"{_name(key)} was handed to {member} ({member_id}) at delivery {count}, "
                      f"but the share-partition has it {held}")

    def _not_after_accept(self, key: Key) -> None:
        ledger = self.sim.share_ledger
        for member, count, told_at in ledger.accepted.get(key, []):
            later = [d for d in ledger.deliveries.get(key, []) if d.delivery_count > count and d.at_ms > told_at]
            if later:
                self.fail(f"{_name(key)} was accepted by {member} at delivery {count} (the broker said so), "
                          f"then handed out again: {later}")

    def _no_bugs(self) -> None:
        for member in self.sim.share_members.values():
            seen = self.errors_seen.get(id(member), (member, 0))[1]
            for at, exc in member.errors[seen:]:
                if isinstance(exc, InternalError) or (
                        isinstance(exc, BrokerError) and exc.code == ErrorCode.INVALID_REQUEST):
                    self.fail(f"share member {member.name} failed at t={at}: {exc!r}")
            self.errors_seen[id(member)] = (member, len(member.errors))

    def check_drained(self) -> None:
        """Invariant 6, once nothing is left to deliver."""
        ledger = self.sim.share_ledger
        for name, topic in self.sim.core.topics.topics.items():
            for index, log in enumerate(topic.partitions):
                tp = TopicPartition(name, index)
                partition = self.share_partition(tp)
                start = None if partition is None else partition.start_offset
                if start != log.high_watermark:
                    window = {} if partition is None else {o: r.state.name for o, r in partition.window.items()}
                    self.fail(f"{name}-{index} is not finished: its share-partition starts at {start}, the log "
                              f"ends at {log.high_watermark}; in its window: {dict(list(window.items())[:10])}")
                skipped = [o for o in range(log.high_watermark) if (tp, o) not in ledger.deliveries]
                if skipped:
                    self.fail(f"{name}-{index}: records finished without ever being handed out: {skipped[:10]}")


def _name(key: Key) -> str:
    tp, offset = key
    return f"{tp.topic}-{tp.partition} at {offset}"
