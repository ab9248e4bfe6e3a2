"""Asking the cluster for metadata: a Metadata request whenever ClusterMetadata says one is due,
for the topics the consumer wants, and one for every topic on demand.

Apart from NetworkClient (client.py) because none of it touches a connection: it sends and waits
through the client's Transport like any other maker of requests, so the client keeps the sockets,
the lock and the node table, and this module keeps what to ask and what to do with the answer.
When an update is due and what the answers say is ClusterMetadata's (metadata.py).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from ..attempts import Attempts
from ..clock import Timer
from ..errors import InternalError
from .future import RequestFuture
from .transport import Transport


class MetadataRefresh:
    """The Metadata requests of one NetworkClient, and the topics they ask about."""

    def __init__(self, client: Transport, allow_auto_create_topics: bool,
                 locked: Callable[[], AbstractContextManager[None]], applied: Callable[[], None]) -> None:
        """``locked``: the client's lock, which guards the wanted topics and ``internal_error``
        (either thread may set them); ``applied``: run after an answer is applied (the client
        drops the connections of brokers the metadata no longer names)."""
        self._client = client
        self._auto_create = allow_auto_create_topics
        self._locked = locked
        self._applied = applied
        self._future: RequestFuture[Any] | None = None
        self._wanted_topics: set[str] | None = set()  # None: all topics
        # a bug of groupclient's handling a Metadata answer: raised by every application wait
        self.internal_error: InternalError | None = None

    def set_topics(self, topics: set[str] | None) -> None:
        """Topics to keep metadata for; None means every topic (pattern subscriptions)."""
        with self._locked():
            if topics != self._wanted_topics:
                self._wanted_topics = None if topics is None else set(topics)
                self._client.metadata.request_update()

    def maybe_update_metadata(self) -> RequestFuture[Any] | None:
        """Send a Metadata request if one is due; return the in-flight one, if any."""
        if self._future is not None and not self._future.is_done():
            return self._future
        client, metadata = self._client, self._client.metadata
        now = client.clock.monotonic_ms()
        if not metadata.needs_update(now):
            return None
        node = client.least_loaded_node()
        if node is None or not client.ready(node):
            return None
        topics = self._wanted_topics
        auto_create = self._auto_create
        requests = metadata.update_requests()

        future = client.send(node, MetadataRequest, MetadataResponse,
                             lambda version: _metadata_request(version, topics, auto_create))

        def apply(response: Any, applied: RequestFuture[Any]) -> None:
            metadata.update(response, client.clock.monotonic_ms(), topics is None, requests)
            self._applied()
            applied.success(response)

        handled: RequestFuture[Any] = future.compose(apply)
        handled.add_errback(self._failed)
        self._future = handled
        return handled

    def _failed(self, exc: BaseException) -> None:
        self._client.metadata.request_update()
        if isinstance(exc, InternalError):
            with self._locked():
                self.internal_error = self.internal_error or exc

    def fetch_all_topics(self, timer: Timer) -> None:
        """One Metadata request for every topic, creating none and leaving the topics this client
        keeps metadata for unchanged (``topics()``, ``partitions_for_topic()``)."""
        client, metadata = self._client, self._client.metadata
        attempts = Attempts("listing topics", timer)
        while True:
            node = client.least_loaded_node()
            if node is not None and client.ready(node):
                requests = metadata.update_requests()
                attempts.tried()
                future = client.send(node, MetadataRequest, MetadataResponse,
                                     lambda version: _metadata_request(version, None, False))
                client.poll_until(future, timer)
                if future.succeeded():
                    metadata.update(future.value, client.clock.monotonic_ms(), True, requests)
                    self._applied()
                    return
                if future.failed():
                    assert future.exception is not None
                    attempts.failed(future.exception)
            else:
                attempts.waiting("no broker connected" if node is None else f"broker {node} not connected")
            # a moment before the next try; a connect event ends it early
            client.poll_until(None, Timer(client.clock, min(timer.remaining_ms(), 100)))
            if timer.expired():
                raise attempts.timed_out()


def _metadata_request(version: int, topics: set[str] | None, auto_create: bool) -> Any:
    """Metadata for ``topics`` (None: every topic; version 0 spells that as an empty list)."""
    wanted = None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in sorted(topics)]
    if version == 0 and wanted is None:
        wanted = []
    return MetadataRequest(version=version, topics=wanted, allow_auto_topic_creation=auto_create,
                           include_cluster_authorized_operations=False, include_topic_authorized_operations=False)
