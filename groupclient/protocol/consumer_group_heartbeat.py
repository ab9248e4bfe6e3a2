"""ConsumerGroupHeartbeat (API 68, KIP-848): the one request of the consumer group protocol.

kafka-python 3.0 has no class for it, so the schema is ours (``schemas/``, in kafka-python's JSON
format, which its ``ApiMessage`` builds encoders and decoders from); the tests check the bytes
against the Java client's.  Both versions are flexible; v1 adds the broker-side regex and wants
the member to make up its own id (KIP-1082).
"""

from __future__ import annotations

import base64
import random
import uuid

from kafka.protocol.api_message import ApiMessage

from . import schemas

LEAVE_EPOCH = -1  # a dynamic member leaves
STATIC_LEAVE_EPOCH = -2  # a static member leaves and will come back with its instance id
JOIN_EPOCH = 0


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """The member's heartbeat: join (epoch 0), acknowledge, or leave (epoch -1/-2)."""


class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """The member's epoch, the heartbeat interval, and its target assignment when it changed."""


def new_member_id(rng: random.Random) -> str:
    """A member id as the Java client makes one (``Uuid.randomUuid().toString()``): a version-4
    UUID in URL-safe base64 without padding, 22 characters, drawn again while it holds a ``-``
    (Java's, so that an id never reads as a command-line option)."""
    while True:
        raw = bytearray(rng.getrandbits(8) for _ in range(16))
        raw[6] = (raw[6] & 0x0F) | 0x40
        raw[8] = (raw[8] & 0x3F) | 0x80
        text = base64.urlsafe_b64encode(bytes(raw)).decode("ascii").rstrip("=")
        if "-" not in text:
            return text


def topic_id_text(topic_id: uuid.UUID | None) -> str:
    """A topic id as Kafka prints it (URL-safe base64, 22 characters)."""
    if topic_id is None:
        return "AAAAAAAAAAAAAAAAAAAAAA"
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")
