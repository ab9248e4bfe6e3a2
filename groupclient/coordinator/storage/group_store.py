"""Group metadata, committed offsets and groups' own configs: Kafka's ``__consumer_offsets`` in
miniature (and, for the configs, the part of its cluster metadata that holds them).

The store is shared by every node of a cluster, like a replicated offsets topic: whichever
node leads a group's partition loads the group from here.  With a data directory every change
is journaled as a JSON entry; replay keeps the last value of each key, and tombstones (a deleted
group, expired offsets) remove keys.

The journal is compacted as Kafka compacts ``__consumer_offsets``, but all at once: when it has
grown past ``COMPACTION_RATIO`` times the size of the live state, and past
``compaction_min_bytes`` (1 MiB), it is rewritten to hold one entry per live group and one per
group's offsets; tombstones are not needed after that, the keys are simply absent.  Each append
costs amortized O(1): a rewrite of L bytes only happens after at least L bytes were appended.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from .journal import Journal

log = logging.getLogger("groupclient.coordinator.storage")

TopicPartition = tuple[str, int]
Record = dict[str, Any]  # a consumer group's or member's journal record (JSON)

COMPACTION_MIN_BYTES = 1024 * 1024
COMPACTION_RATIO = 2
# offsets per journal entry when the journal is rewritten (keeps single entries small)
_OFFSETS_PER_ENTRY = 1000


@dataclass(frozen=True)
class MemberSnapshot:
    """A classic member as stored (its subscription in the group's protocol)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupSnapshot:
    """A classic group as stored (Kafka's GroupMetadata record)."""

    group_id: str
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str | None
    members: tuple[MemberSnapshot, ...]


@dataclass(frozen=True)
class CommittedOffset:
    """One partition's committed offset (Kafka's OffsetCommit record)."""

    offset: int
    leader_epoch: int
    metadata: str | None
    commit_timestamp_ms: int


class StoredConsumerGroup(Protocol):
    """What the store reads of a consumer-protocol group itself: its id and its members' ids."""

    @property
    def group_id(self) -> str:
        """The group's id."""

    @property
    def members(self) -> Mapping[str, object]:
        """The group's members by member id."""


G = TypeVar("G", bound=StoredConsumerGroup)


class ConsumerGroupCodec(Protocol[G]):
    """How a consumer-protocol group becomes journal records and back.  The consumer groups' own
    package supplies it (``consumer_group/records.py``): the store, below both kinds of group,
    keeps records and knows neither kind."""

    def group_record(self, group: G) -> Record:
        """What the group is, without its members."""

    def member_record(self, group: G, member_id: str) -> Record:
        """One member of the group (one it has)."""

    def rebuild(self, group: Record, members: Iterable[Record]) -> G:
        """The group the records describe."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _encode(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode()


class GroupStore(Generic[G]):
    """Classic groups' snapshots, consumer groups (kept as the ``consumer_records`` codec makes
    their records) and every group's committed offsets, journaled in ``data_dir`` when given."""

    def __init__(self, data_dir: Path | None = None, fsync: bool = False,
                 compaction_min_bytes: int = COMPACTION_MIN_BYTES, *, consumer_records: ConsumerGroupCodec[G]) -> None:
        self.groups: dict[str, GroupSnapshot] = {}
        self.offsets: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        # the consumer-protocol (KIP-848) groups: whichever node leads a group's offsets partition
        # serves it at the epochs it had; with a data dir their records are journaled too (the
        # records as last written: what a change is compared with, and what compaction keeps)
        self.consumer_groups: dict[str, G] = {}
        # each group's own configs (IncrementalAlterConfigs), by name, as strings; kept whether or
        # not the group exists, as Kafka keeps them in its cluster metadata
        self.group_configs: dict[str, dict[str, str]] = {}
        # each share group's share-partitions as last kept, by (group, topic id, partition): the
        # start offset and the window's ranges of (first, last, state, deliveries)
        self.share_states: dict[tuple[str, str, int], tuple[int, list[list[int]]]] = {}
        self.share_groups: set[str] = set()  # the share groups that exist (their members are not kept)
        self._codec = consumer_records
        self._consumer_records: dict[str, tuple[Record, dict[str, Record]]] = {}
        self._compaction_min_bytes = compaction_min_bytes
        self._check_compaction_at = compaction_min_bytes
        self._journal = Journal(data_dir / "groups.journal", fsync) if data_dir else None
        if self._journal is not None:
            for entry in self._journal.replay():
                self._apply(json.loads(entry))
            self.consumer_groups = {gid: consumer_records.rebuild(group, members.values())
                                    for gid, (group, members) in self._consumer_records.items()}
            self._maybe_compact()  # a journal left large (by a crash or an older version)

    def put_group(self, snapshot: GroupSnapshot) -> None:
        """Keep a classic group's snapshot (replacing the one before)."""
        self._write(self._group_record(snapshot))

    def put_offsets(self, group_id: str, offsets: dict[TopicPartition, CommittedOffset]) -> None:
        """Keep committed offsets (each replacing its partition's)."""
        if not offsets:
            return
        self._write(self._offsets_record(group_id, offsets.items()))

    def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        """Tombstones for committed offsets (expired by retention)."""
        table = self.offsets.get(group_id, {})
        known = [[t, p] for t, p in partitions if (t, p) in table]
        if known:
            self._write({"type": "offsets_delete", "group_id": group_id, "partitions": known})

    def delete_group(self, group_id: str) -> None:
        """A tombstone for the group's metadata and all its offsets."""
        if group_id in self.groups or group_id in self.offsets:
            self._write({"type": "delete", "group_id": group_id})

    def put_group_configs(self, group_id: str, configs: Mapping[str, str]) -> None:
        """Keep a group's own configs (replacing what it had; none: it has none left)."""
        if dict(configs) != self.group_configs.get(group_id, {}):
            self._write({"type": "group_configs", "group_id": group_id, "configs": dict(configs)})

    def put_share_state(self, group_id: str, topic_id: str, partition: int, start_offset: int,
                        ranges: Iterable[Iterable[int]]) -> None:
        """Keep a share-partition's state (replacing what it had)."""
        value = (start_offset, [list(r) for r in ranges])
        if self.share_states.get((group_id, topic_id, partition)) != value:
            self._write({"type": "share_state", "key": [group_id, topic_id, partition], "start": start_offset,
                         "ranges": value[1]})

    def put_share_group(self, group_id: str) -> None:
        """A share group exists."""
        if group_id not in self.share_groups:
            self._write({"type": "share_group", "group_id": group_id})

    def delete_share_group(self, group_id: str) -> None:
        """A share group is gone (DeleteGroups)."""
        if group_id in self.share_groups:
            self._write({"type": "share_group_delete", "group_id": group_id})

    def delete_share_state(self, group_id: str, topic_id: str, partition: int) -> None:
        """A tombstone for a share-partition's state (its group deleted)."""
        if (group_id, topic_id, partition) in self.share_states:
            self._write({"type": "share_state_delete", "key": [group_id, topic_id, partition]})

    def save_consumer_group(self, group: G, member_ids: Iterable[str] | None = None) -> None:
        """Journal what changed of a consumer group: its own record, and the members named (every
        member when None; one that is gone gets a tombstone).  Without a data dir, nothing."""
        if self._journal is None:
            return
        kept_group, kept_members = self._consumer_records.get(group.group_id, ({}, {}))
        record = self._codec.group_record(group)
        if record != kept_group:
            self._write({"type": "consumer_group", "value": record})
        if member_ids is None:
            member_ids = set(group.members) | set(kept_members)
        for member_id in member_ids:
            if member_id not in group.members:
                if member_id in kept_members:
                    self._write({"type": "consumer_member_delete", "group_id": group.group_id, "member_id": member_id})
            elif (value := self._codec.member_record(group, member_id)) != kept_members.get(member_id):
                self._write({"type": "consumer_member", "group_id": group.group_id, "value": value})

    def delete_consumer_group(self, group_id: str) -> None:
        """A consumer group is gone (its offsets stay unless deleted too)."""
        self.consumer_groups.pop(group_id, None)
        if group_id in self._consumer_records:
            self._write({"type": "consumer_group_delete", "group_id": group_id})

    def forget_topic(self, topic: str) -> None:
        """A topic was deleted: every group's committed offsets for it go."""
        for group_id, table in list(self.offsets.items()):
            gone = [tp for tp in table if tp[0] == topic]
            if gone:
                self.delete_offsets(group_id, gone)

    def group_ids(self) -> set[str]:
        """Every group with a snapshot or committed offsets."""
        return set(self.groups) | set(self.offsets)

    def close(self) -> None:
        """Close the journal."""
        if self._journal is not None:
            self._journal.close()

    # -- the journal ---------------------------------------------------------------------
    def _write(self, record: dict[str, Any]) -> None:
        if self._journal is not None:
            self._journal.append(_encode(record))  # first: a failed write changes nothing
        self._apply(record)
        self._maybe_compact()

    def _maybe_compact(self) -> None:
        journal = self._journal
        if journal is None or journal.size_bytes <= self._check_compaction_at:
            return
        live = [_encode(record) for record in self._live_records()]
        live_bytes = sum(len(entry) + 8 for entry in live)  # + each entry's header
        if journal.size_bytes > COMPACTION_RATIO * live_bytes:
            before = journal.size_bytes
            journal.rewrite(live)
            log.info("%s compacted from %d to %d bytes", journal.path, before, journal.size_bytes)
        # the next check once the journal has doubled the live state again
        self._check_compaction_at = max(self._compaction_min_bytes, COMPACTION_RATIO * live_bytes)

    def _live_records(self) -> Iterator[dict[str, Any]]:
        for snapshot in self.groups.values():
            yield self._group_record(snapshot)
        for group_id, (group, members) in self._consumer_records.items():
            yield {"type": "consumer_group", "value": group}
            for member in members.values():
                yield {"type": "consumer_member", "group_id": group_id, "value": member}
        for group_id, configs in self.group_configs.items():
            yield {"type": "group_configs", "group_id": group_id, "configs": configs}
        for group_id in sorted(self.share_groups):
            yield {"type": "share_group", "group_id": group_id}
        for key, (start, ranges) in self.share_states.items():
            yield {"type": "share_state", "key": list(key), "start": start, "ranges": ranges}
        for group_id, table in self.offsets.items():
            rows = list(table.items())
            for start in range(0, len(rows), _OFFSETS_PER_ENTRY):
                yield self._offsets_record(group_id, rows[start:start + _OFFSETS_PER_ENTRY])

    @staticmethod
    def _group_record(snapshot: GroupSnapshot) -> dict[str, Any]:
        value: dict[str, Any] = asdict(snapshot)
        for member in value["members"]:
            member["subscription"] = _b64(member["subscription"])
            member["assignment"] = _b64(member["assignment"])
        return {"type": "group", "value": value}

    @staticmethod
    def _offsets_record(group_id: str, offsets: Iterable[tuple[TopicPartition, CommittedOffset]]) -> dict[str, Any]:
        rows = [[t, p, asdict(c)] for (t, p), c in offsets]
        return {"type": "offsets", "group_id": group_id, "offsets": rows}

    def _apply(self, record: dict[str, Any]) -> None:
        kind = record["type"]
        if kind == "group":
            value = record["value"]
            members = tuple(
                MemberSnapshot(**{
                    **m,
                    "subscription": base64.b64decode(m["subscription"]),
                    "assignment": base64.b64decode(m["assignment"]),
                })
                for m in value["members"]
            )
            self.groups[value["group_id"]] = GroupSnapshot(**{**value, "members": members})
        elif kind == "offsets":
            table = self.offsets.setdefault(record["group_id"], {})
            for topic, partition, committed in record["offsets"]:
                table[(topic, partition)] = CommittedOffset(**committed)
        elif kind == "offsets_delete":
            group_id = record["group_id"]
            table = self.offsets.get(group_id, {})
            for topic, partition in record["partitions"]:
                table.pop((topic, partition), None)
            if not table:
                self.offsets.pop(group_id, None)
        elif kind == "delete":
            self.groups.pop(record["group_id"], None)
            self.offsets.pop(record["group_id"], None)
        elif kind == "consumer_group":
            group: Record = record["value"]
            kept: dict[str, Record] = self._consumer_records.get(group["group_id"], ({}, {}))[1]
            self._consumer_records[group["group_id"]] = (group, kept)
        elif kind == "consumer_member":
            self._consumer_records[record["group_id"]][1][record["value"]["member_id"]] = record["value"]
        elif kind == "consumer_member_delete":
            self._consumer_records[record["group_id"]][1].pop(record["member_id"], None)
        elif kind == "consumer_group_delete":
            self._consumer_records.pop(record["group_id"], None)
        elif kind == "share_state":
            group_id, topic_id, partition = record["key"]
            self.share_states[(group_id, topic_id, partition)] = (record["start"], record["ranges"])
        elif kind == "share_group":
            self.share_groups.add(record["group_id"])
        elif kind == "share_group_delete":
            self.share_groups.discard(record["group_id"])
        elif kind == "share_state_delete":
            group_id, topic_id, partition = record["key"]
            self.share_states.pop((group_id, topic_id, partition), None)
        elif kind == "group_configs":
            if record["configs"]:
                self.group_configs[record["group_id"]] = dict(record["configs"])
            else:
                self.group_configs.pop(record["group_id"], None)
