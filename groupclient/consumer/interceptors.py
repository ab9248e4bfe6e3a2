"""Consumer interceptors (Java's KIP-42 ``ConsumerInterceptor``), configured as ``interceptors=[...]``.

An interceptor may see and change what ``poll()`` returns (``on_consume``), is told of every
successful commit (``on_commit``) and is closed with the consumer (``close``).  As in Java:

- interceptors run in the order given, each ``on_consume`` getting what the one before returned;
- an interceptor that raises is logged and skipped: the poll loop goes on with the records of
  the last interceptor that succeeded, a commit is unaffected;
- everything runs on the application thread, inside ``poll()`` / ``commit()`` / ``close()``,
  never under a lock.

Offsets: the consumer advances its positions (and so what it commits) by the records it
fetched, before ``on_consume`` runs, so records an interceptor filters out are still consumed
and committed, as in Java.
"""

from __future__ import annotations

import logging
from typing import Any

from ..structs import ConsumerRecord
from ..structs import OffsetAndMetadata, TopicPartition

from ..errors import ConfigurationError

log = logging.getLogger("groupclient.consumer")

Records = dict[TopicPartition, list[ConsumerRecord]]


class ConsumerInterceptor:
    """Subclass and override what you need; duck-typed objects with these methods work too."""

    def on_consume(self, records: Records) -> Records:
        """Called with what ``poll()`` is about to return; return what it should return."""
        return records

    def on_commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        """Called after offsets were committed (sync, async or auto-commit)."""

    def close(self) -> None:
        """Called once, when the consumer closes."""


class InterceptorChain:
    def __init__(self, interceptors: tuple[Any, ...]) -> None:
        for interceptor in interceptors:
            if not any(callable(getattr(interceptor, m, None)) for m in ("on_consume", "on_commit", "close")):
                raise ConfigurationError(f"interceptor {interceptor!r} has none of on_consume, on_commit, close")
        self.interceptors = interceptors

    def __bool__(self) -> bool:
        return bool(self.interceptors)

    def on_consume(self, records: Records) -> Records:
        for interceptor in self.interceptors:
            method = getattr(interceptor, "on_consume", None)
            if method is None:
                continue
            try:
                changed = method(records)
            except Exception as exc:
                log.warning("interceptor %r failed in on_consume: %r; its change is skipped", interceptor, exc)
                continue
            if not isinstance(changed, dict):
                log.warning("interceptor %r returned %s from on_consume, not the records; ignored",
                            interceptor, type(changed).__name__)
                continue
            records = changed
        return records

    def on_commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        self._each("on_commit", dict(offsets))

    def close(self) -> None:
        self._each("close")

    def _each(self, name: str, *args: Any) -> None:
        for interceptor in self.interceptors:
            method = getattr(interceptor, name, None)
            if method is None:
                continue
            try:
                method(*args)
            except Exception as exc:
                log.warning("interceptor %r failed in %s: %r", interceptor, name, exc)
