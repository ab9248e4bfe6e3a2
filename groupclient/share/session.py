"""One share session: what a share consumer and one broker agree it fetches from that broker
(KIP-932's share sessions; the Java client's ``ShareSessionHandler``).  Sans-IO.

The first request to a broker opens the session (epoch 0) and names every partition to fetch;
each later one, ShareFetch or ShareAcknowledge, carries the next epoch (1, 2, ... back to 1 after
2**31 - 1) and names only what changed: partitions added, partitions forgotten, and the
partitions whose records it acknowledges.  A broker that lost the session (SHARE_SESSION_NOT_FOUND,
INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED) or a request that got no answer starts a
new session: epoch 0 again, every partition named again.  Closing sends epoch -1.  A ShareAcknowledge
cannot open a session, so acknowledgements to a broker with no open session fail at once.

One request at a time per session: the epochs must arrive in order.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from ..error_codes import ErrorCode
from ..protocol.share_group import (
    CLOSE_SESSION_EPOCH, OPEN_SESSION_EPOCH, AcknowledgeType, ShareAcknowledgeRequest, ShareFetchRequest,
)
from ..structs import TopicPartition
from .in_flight import Batch

TopicIdPartition = tuple[uuid.UUID, int]
MAX_EPOCH = 2**31 - 1
# answers that say the broker has no such session (any more): open a new one
LOST_SESSION = frozenset({ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                          ErrorCode.SHARE_SESSION_LIMIT_REACHED})


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch`` (Java's ``ShareRequestMetadata.nextEpoch``)."""
    if epoch < 0:
        return CLOSE_SESSION_EPOCH
    return 1 if epoch == MAX_EPOCH else epoch + 1


@dataclass(frozen=True)
class SessionRequest:
    """What one request of the session says: its epoch, the partitions it adds (all, opening)
    and forgets, and the acknowledgements it carries, per partition."""

    epoch: int
    added: list[tuple[TopicPartition, TopicIdPartition]]
    forgotten: list[TopicIdPartition]
    acks: dict[TopicPartition, tuple[TopicIdPartition, list[Batch]]]

    def fetch_topics(self) -> list[Any]:
        """ShareFetch's Topics: the partitions added, and those acknowledged with their batches."""
        by_topic: dict[Any, dict[int, list[Batch]]] = {}
        for _, (topic_id, partition) in self.added:
            by_topic.setdefault(topic_id, {}).setdefault(partition, [])
        for _, ((topic_id, partition), batches) in self.acks.items():
            by_topic.setdefault(topic_id, {})[partition] = batches
        F = ShareFetchRequest.FetchTopic
        return [F(topic_id=topic_id, partitions=[
            F.FetchPartition(partition_index=partition, partition_max_bytes=0, acknowledgement_batches=[
                F.FetchPartition.AcknowledgementBatch(first_offset=f, last_offset=last, acknowledge_types=types)
                for f, last, types in batches]) for partition, batches in parts.items()])
            for topic_id, parts in by_topic.items()]

    def acknowledge_topics(self) -> list[Any]:
        """ShareAcknowledge's Topics: the partitions acknowledged with their batches."""
        by_topic: dict[Any, dict[int, list[Batch]]] = {}
        for _, ((topic_id, partition), batches) in self.acks.items():
            by_topic.setdefault(topic_id, {})[partition] = batches
        A = ShareAcknowledgeRequest.AcknowledgeTopic
        return [A(topic_id=topic_id, partitions=[
            A.AcknowledgePartition(partition_index=partition, acknowledgement_batches=[
                A.AcknowledgePartition.AcknowledgementBatch(first_offset=f, last_offset=last, acknowledge_types=t)
                for f, last, t in batches]) for partition, batches in parts.items()])
            for topic_id, parts in by_topic.items()]

    def forgotten_topics(self) -> list[Any]:
        """ShareFetch's ForgottenTopicsData."""
        by_topic: dict[Any, list[int]] = {}
        for topic_id, partition in self.forgotten:
            by_topic.setdefault(topic_id, []).append(partition)
        return [ShareFetchRequest.ForgottenTopic(topic_id=t, partitions=p) for t, p in by_topic.items()]

    @property
    def renews(self) -> bool:
        """It renews locks (KIP-1222): the request may carry no other acknowledgement kind's
        fetch, so it fetches nothing."""
        return any(AcknowledgeType.RENEW in types for _, batches in self.acks.values() for _, _, types in batches)


class ShareSession:
    """This consumer's share session with one broker."""

    def __init__(self, node: int) -> None:
        self.node = node
        self.epoch = OPEN_SESSION_EPOCH
        # the partitions the broker fetches for this session (as the last request left them)
        self.partitions: dict[TopicPartition, TopicIdPartition] = {}
        self.in_flight = False
        self._retry_at = 0  # no request before then (monotonic ms): the last answer was an error

    def back_off(self, until: int) -> None:
        """The last answer was an error: ask again only from ``until`` on."""
        self._retry_at = until

    def backing_off(self, now: int) -> bool:
        return now < self._retry_at

    @property
    def is_open(self) -> bool:
        """The broker holds the session (epoch above 0)."""
        return self.epoch > 0

    def fetch(self, wanted: dict[TopicPartition, TopicIdPartition],
              acks: dict[TopicPartition, tuple[TopicIdPartition, list[Batch]]]) -> SessionRequest:
        """The next ShareFetch: fetch ``wanted`` from now on, acknowledging ``acks``."""
        if self.epoch == OPEN_SESSION_EPOCH:
            self.partitions.update(wanted)
            added = list(self.partitions.items())
            forgotten: list[TopicIdPartition] = []
            for tp in [tp for tp in self.partitions if tp not in wanted]:
                del self.partitions[tp]
                added = [(a, tip) for a, tip in added if a != tp]
        else:
            added, forgotten = [], []
            for tp, tip in list(self.partitions.items()):
                now = wanted.get(tp)
                if now is None:
                    del self.partitions[tp]
                    forgotten.append(tip)
                elif now != tip:  # the topic was recreated: forget the old, add the new
                    forgotten.append(tip)
                    self.partitions[tp] = now
                    added.append((tp, now))
            for tp, tip in wanted.items():
                if tp not in self.partitions:
                    self.partitions[tp] = tip
                    added.append((tp, tip))
        return SessionRequest(self.epoch, added, forgotten, dict(acks))

    def acknowledge(self, acks: dict[TopicPartition, tuple[TopicIdPartition, list[Batch]]]) -> SessionRequest | None:
        """The next ShareAcknowledge, or None: a ShareAcknowledge cannot open a session."""
        if not self.is_open and self.epoch != CLOSE_SESSION_EPOCH:
            return None
        return SessionRequest(self.epoch, [], [], dict(acks))

    def close(self) -> None:
        """The next request closes the session (epoch -1)."""
        self.epoch = CLOSE_SESSION_EPOCH

    def answered(self, error_code: int) -> bool:
        """The broker answered a request of the session with ``error_code`` (top level): whether
        it took it in the session."""
        if error_code in LOST_SESSION:
            self.epoch = OPEN_SESSION_EPOCH
            return False
        self.epoch = next_epoch(self.epoch)
        return error_code == ErrorCode.NONE

    def failed(self) -> None:
        """The request got no answer (a dropped connection, a timeout): the broker ends the
        session with the connection, so the next request opens a new one."""
        if self.epoch != CLOSE_SESSION_EPOCH:
            self.epoch = OPEN_SESSION_EPOCH
