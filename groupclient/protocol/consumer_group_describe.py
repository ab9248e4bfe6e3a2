"""ConsumerGroupDescribe (API 69, KIP-848): a consumer-protocol group's epochs and, per member, what
it owns beside what the group's assignor gave it.

kafka-python 3.0 has no class for it, so the schema is ours (``schemas/``, in kafka-python's JSON
format, field for field Kafka 4.1's).
"""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from . import schemas


class ConsumerGroupDescribeRequest(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """The group ids to describe."""


class ConsumerGroupDescribeResponse(ApiMessage, load_json=schemas.__name__):  # type: ignore[misc,call-arg]
    """Per group: its state, epochs, assignor and members."""
