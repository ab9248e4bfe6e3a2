"""The records a :class:`~groupclient.share.consumer.ShareConsumer` hands out: a
``ConsumerRecord``'s fields (kafka-python's, in the same order) and ``delivery_count``: how many
times the share group has delivered the record, this delivery included (1 the first time; more
after a release, an expired lock or a consumer that left without acknowledging it).

At run time ``ShareRecord`` is a plain namedtuple (Python 3.10 has no generic NamedTuple); under
``TYPE_CHECKING`` it is declared with its field types and generic in K and V like
``ConsumerRecord``.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any, Generic, NamedTuple

from ..structs import ConsumerRecord, K, V

if TYPE_CHECKING:
    from collections.abc import Sequence

    class ShareRecord(NamedTuple, Generic[K, V]):
        """One record ``ShareConsumer.poll()`` returns: a ``ConsumerRecord``'s fields and its
        ``delivery_count`` (1 on the first delivery)."""

        topic: str
        partition: int
        leader_epoch: int
        offset: int
        timestamp: int
        timestamp_type: int
        key: K | None
        value: V | None
        headers: Sequence[tuple[str, bytes | None]]
        checksum: int | None
        serialized_key_size: int
        serialized_value_size: int
        serialized_header_size: int
        delivery_count: int
else:
    ShareRecord = collections.namedtuple("ShareRecord", (*ConsumerRecord._fields, "delivery_count"))
    ShareRecord.__doc__ = ("One record ``ShareConsumer.poll()`` returns: a ``ConsumerRecord``'s fields and its "
                           "``delivery_count`` (1 on the first delivery).")


def share_record(record: Any, delivery_count: int) -> ShareRecord[Any, Any]:
    """``record`` (a ConsumerRecord) as delivered for the ``delivery_count``-th time."""
    return ShareRecord(*record, delivery_count)  # type: ignore[call-arg]  # a ConsumerRecord's 13 fields


__all__ = ["ShareRecord", "share_record"]
