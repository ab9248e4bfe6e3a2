"""Group metadata and committed offsets: Kafka's ``__consumer_offsets`` in miniature.

The store is shared by every node of a cluster, like a replicated offsets topic: whichever
node leads a group's partition loads the group from here.  With a data directory every change
is journaled as a JSON entry; replay keeps the last value of each key.
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .journal import Journal

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class MemberSnapshot:
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
    group_id: str
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str | None
    members: tuple[MemberSnapshot, ...]


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str | None
    commit_timestamp_ms: int


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class GroupStore:
    def __init__(self, data_dir: Path | None = None, fsync: bool = False) -> None:
        self.groups: dict[str, GroupSnapshot] = {}
        self.offsets: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        self._journal = Journal(data_dir / "groups.journal", fsync) if data_dir else None
        if self._journal is not None:
            for entry in self._journal.replay():
                self._apply(json.loads(entry))

    def put_group(self, snapshot: GroupSnapshot) -> None:
        record: dict[str, Any] = asdict(snapshot)
        for member in record["members"]:
            member["subscription"] = _b64(member["subscription"])
            member["assignment"] = _b64(member["assignment"])
        self._write({"type": "group", "value": record})

    def put_offsets(self, group_id: str, offsets: dict[TopicPartition, CommittedOffset]) -> None:
        if not offsets:
            return
        rows = [[t, p, asdict(c)] for (t, p), c in offsets.items()]
        self._write({"type": "offsets", "group_id": group_id, "offsets": rows})

    def delete_group(self, group_id: str) -> None:
        self._write({"type": "delete", "group_id": group_id})

    def group_ids(self) -> set[str]:
        return set(self.groups) | set(self.offsets)

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()

    def _write(self, record: dict[str, Any]) -> None:
        if self._journal is not None:
            self._journal.append(json.dumps(record, separators=(",", ":")).encode())
        self._apply(record)

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
        elif kind == "delete":
            self.groups.pop(record["group_id"], None)
            self.offsets.pop(record["group_id"], None)
