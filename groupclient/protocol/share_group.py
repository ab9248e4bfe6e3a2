"""The share group APIs (KIP-932, Kafka 4.2+): their messages, from schemas of ours (``schemas/``,
in kafka-python's JSON format; kafka-python 3.0 has none), byte for byte the Java client's
(tests/unit/test_share_group_wire.py holds what Kafka 4.4's own classes write).

- ShareGroupHeartbeat (76) v1: a member joins (epoch 0), heartbeats, or leaves (epoch -1); the
  answer carries its epoch, the heartbeat interval and, when it changed, its assignment. A
  partition may be assigned to several members at once: they share it.
- ShareGroupDescribe (77) v1.
- ShareFetch (78) v1-2: acquire records of share-partitions within a share session, acknowledging
  earlier ones on the way; v2 adds the acquire mode (KIP-1206) and renewals (KIP-1222).
- ShareAcknowledge (79) v1-2: acknowledge without fetching.
- DescribeShareGroupOffsets (90) v0-1, AlterShareGroupOffsets (91) v0, DeleteShareGroupOffsets
  (92) v0: the admin side of a share group's start offsets.

Version 0 of the first four was Kafka 4.0's early access, removed in 4.1; no broker speaks it now.
"""

from __future__ import annotations

import enum

from kafka.protocol.api_message import ApiMessage

from . import schemas

LEAVE_EPOCH = -1  # ShareGroupHeartbeat: the member leaves
OPEN_SESSION_EPOCH = 0  # ShareFetch/ShareAcknowledge: opens a share session
CLOSE_SESSION_EPOCH = -1  # ... and closes it


class AcknowledgeType(enum.IntEnum):
    """What becomes of acknowledged records (``AcknowledgeTypes`` on the wire; GAP marks offsets
    that hold no record, as in a compacted topic)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class ShareAcquireMode(enum.IntEnum):
    """ShareFetch v2's ``ShareAcquireMode`` (KIP-1206): whole batches, or at most MaxRecords."""

    BATCH_OPTIMIZED = 0
    RECORD_LIMIT = 1


class ShareGroupHeartbeatRequest(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """A share group member's heartbeat: join (epoch 0), stay, or leave (epoch -1)."""


class ShareGroupHeartbeatResponse(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """The member's epoch, the heartbeat interval, and its assignment when it changed."""


class ShareGroupDescribeRequest(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """Describe share groups."""


class ShareGroupDescribeResponse(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """Share groups: state, epochs, members and their assignments."""


class ShareFetchRequest(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """Acquire records of share-partitions within a share session, acknowledging earlier ones."""


class ShareFetchResponse(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """The records acquired (batches and acquired ranges with delivery counts), per partition."""


class ShareAcknowledgeRequest(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """Acknowledge records acquired by this member."""


class ShareAcknowledgeResponse(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """How the acknowledgements went, per partition."""


class DescribeShareGroupOffsetsRequest(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """The start offsets of share groups' partitions."""


class DescribeShareGroupOffsetsResponse(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """Start offsets (and, from v1, lag) per partition."""


class AlterShareGroupOffsetsRequest(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """Set the start offsets of an empty share group's partitions."""


class AlterShareGroupOffsetsResponse(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """How each partition's change went."""


class DeleteShareGroupOffsetsRequest(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """Forget a share group's state for whole topics."""


class DeleteShareGroupOffsetsResponse(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """How each topic's deletion went."""
