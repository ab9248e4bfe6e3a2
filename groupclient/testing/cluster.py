"""``GroupclientCluster``: an ``EmbeddedCluster`` with a few helpers for tests.

It is what the ``groupclient_cluster`` pytest fixtures give (see docs/pytest-plugin.md); every
``EmbeddedCluster`` method is there too.  The helpers only translate: API and error names to
``FaultRule``s, keyed values to Kafka's default partitioning, offsets to per-topic dicts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafka.partitioner import murmur2

from ..coordinator import EmbeddedCluster, FaultKind, FaultRule
from ..protocol.apis import ApiKey
from ..error_codes import ErrorCode

Value = bytes | str | None
ApiName = ApiKey | int | str
ErrorName = ErrorCode | int | str | Any  # also kafka-python error classes, by their ``errno``


def api_key(api: ApiName) -> ApiKey:
    """``ApiKey`` for ``"Fetch"``, ``"JoinGroup"``, ``"join_group"``, ``"HEARTBEAT"``, ``12``, ...

    Only APIs this server answers; a rule for another one could never fire, so it is refused.
    """
    if isinstance(api, str):
        wanted = api.replace("_", "").replace("-", "").replace(" ", "").lower()
        for key in ApiKey:
            if key.name.replace("_", "").lower() == wanted:
                return key
        raise ValueError(f"unknown API {api!r}; the server answers {', '.join(k.name for k in ApiKey)}")
    try:
        return ApiKey(int(api))
    except ValueError:
        raise ValueError(f"API key {api} is not served; the server answers "
                         f"{', '.join(f'{k.name}={int(k)}' for k in ApiKey)}") from None


def error_code(error: ErrorName) -> ErrorCode:
    """``ErrorCode`` for a name (``"NOT_COORDINATOR"``), a number, or a kafka-python error class."""
    if isinstance(error, str):
        try:
            return ErrorCode[error.upper()]
        except KeyError:
            raise ValueError(f"unknown Kafka error code name {error!r}") from None
    errno = getattr(error, "errno", error)  # kafka.errors.NotCoordinatorError.errno == 16
    return ErrorCode(int(errno))


def _as_bytes(value: Value) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


class GroupclientCluster(EmbeddedCluster):
    """An ``EmbeddedCluster`` with test helpers; use it as ``EmbeddedCluster`` (a context manager)."""

    # -- records -------------------------------------------------------------------------
    def produce(self, topic: str,
                records: Iterable[tuple[Value, Value] | bytes | str] | bytes | str,
                partition: int | None = None, timestamp_ms: int | None = None, *,
                key: Value = None) -> list[tuple[int, int]]:
        """Append values (``bytes`` or ``str``) or ``(key, value)`` pairs; ``key`` applies to plain values.

        A keyed record without ``partition`` goes where Kafka's default partitioner (murmur2, as the
        Java and kafka-python producers) puts it; others round-robin.  Returns ``(partition, offset)``
        per record, in order.
        """
        if isinstance(records, (bytes, str)):
            records = [records]
        items = [(_as_bytes(r[0]), _as_bytes(r[1])) if isinstance(r, tuple) else (_as_bytes(key), _as_bytes(r))
                 for r in records]
        if partition is not None or all(k is None for k, _ in items):
            return super().produce(topic, items, partition, timestamp_ms)
        count = len(self.end_offsets(topic))
        by_partition: dict[int, list[int]] = {}
        for i, (k, _) in enumerate(items):
            target = (murmur2(k) & 0x7FFFFFFF) % count if k is not None else i % count
            by_partition.setdefault(target, []).append(i)
        placed: list[tuple[int, int]] = [(-1, -1)] * len(items)
        for target, indexes in by_partition.items():
            for i, where in zip(indexes, super().produce(topic, [items[i] for i in indexes], target, timestamp_ms)):
                placed[i] = where
        return placed

    # -- groups --------------------------------------------------------------------------
    def committed(self, group_id: str, topic: str) -> dict[int, int]:
        """Partition -> committed offset of ``group_id`` on ``topic`` (partitions without a commit left out)."""
        return {p: offset for (t, p), offset in self.committed_offsets(group_id).items() if t == topic}

    def caught_up(self, group_id: str, topic: str) -> bool:
        """Whether ``group_id`` has committed the end offset of every partition of ``topic``."""
        committed = self.committed(group_id, topic)
        return all(committed.get(p, 0) >= end for p, end in self.end_offsets(topic).items())

    def group_state(self, group_id: str) -> str | None:
        """A classic group's ``"Stable"``, ``"PreparingRebalance"``, ..., a consumer-protocol group's
        ``"Stable"``, ``"Reconciling"``, ``"Assigning"``, ``"Empty"``, or ``None`` for a group the
        coordinator does not have."""
        description = self.describe_group(group_id) or self.describe_consumer_group(group_id)
        return None if description is None else str(description["state"])

    def group_epoch(self, group_id: str) -> int | None:
        """A consumer-protocol group's epoch (a classic group's generation), or ``None``."""
        classic = self.describe_group(group_id)
        if classic is not None:
            return int(classic["generation"])
        consumer = self.describe_consumer_group(group_id)
        return None if consumer is None else int(consumer["epoch"])

    # -- faults --------------------------------------------------------------------------
    def fail(self, api: ApiName, error: ErrorName = ErrorCode.UNKNOWN_SERVER_ERROR, *, count: int = 1,
             node: int | None = None) -> None:
        """Answer the next ``count`` requests of ``api`` with ``error`` instead of handling them."""
        self.inject_fault(FaultRule(api_key(api), FaultKind.ERROR, count=count, error_code=error_code(error),
                                    node_id=node))

    def delay(self, api: ApiName, ms: int, *, count: int = 1, node: int | None = None) -> None:
        """Handle the next ``count`` requests of ``api`` ``ms`` milliseconds late."""
        self.inject_fault(FaultRule(api_key(api), FaultKind.DELAY, count=count, delay_ms=ms, node_id=node))

    def drop(self, api: ApiName, *, count: int = 1, node: int | None = None) -> None:
        """Close the connection, without an answer, on each of the next ``count`` requests of ``api``."""
        self.inject_fault(FaultRule(api_key(api), FaultKind.DROP, count=count, node_id=node))

    def fired(self, api: ApiName | None = None) -> int:
        """How many injected faults fired (for ``api`` only, if given)."""
        key = None if api is None else api_key(api)
        return sum(1 for _, k, _ in self.faults_fired() if key is None or k == key)
