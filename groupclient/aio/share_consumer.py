"""``AsyncShareConsumer``: :class:`~groupclient.share.consumer.ShareConsumer` for asyncio.

The same API as coroutines, on the same model as :class:`~groupclient.aio.AsyncGroupConsumer`
(docs/design.md, "asyncio"): the ShareConsumer is owned by a thread of its own
(:class:`~groupclient.aio.consumer_thread.ConsumerThread`), each call is a job for it, and the
event loop never waits on the library.  The heartbeat thread keeps the member in its share group
while the loop is busy; a record's acquisition lock runs regardless, as it does for a blocked
synchronous application.

User code runs on the loop: the acknowledgement commit callback (a coroutine function too) is run
there by the consumer thread, which waits for it.  The deserializers run on the consumer thread,
inside ``poll()``, as they run inside ``poll()`` of a synchronous consumer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from types import TracebackType
from typing import Any, Generic, TypeVar

from ..errors import IllegalStateError
from ..protocol.share_group import AcknowledgeType
from ..share.consumer import ShareConsumer, ShareRecords
from ..share.records import ShareRecord
from ..structs import K, TopicPartition, V
from .consumer_thread import ConsumerThread
from .errors import ConsumerStoppedError

T = TypeVar("T")


class AsyncShareConsumer(Generic[K, V]):
    """A member of a share group, for asyncio.

        from groupclient.aio import AsyncShareConsumer

        async with AsyncShareConsumer("jobs", bootstrap_servers="127.0.0.1:9092",
                                      group_id="workers") as consumer:
            async for record in consumer:
                await handle(record)

    ``start()`` (or ``async with``) connects; every other call is a coroutine running the
    ShareConsumer call of the same name on the consumer's own thread (its arguments, its
    results, its errors: docs/share-groups.md), but ``wakeup()`` and ``metrics()``, which are
    answered at once.  ``stop()`` (or the end of ``async with``) closes it, as ``close()``.
    """

    def __init__(self, *topics: str, **settings: Any) -> None:
        self._topics = topics
        self._settings = dict(settings)
        self._callback: Callable[..., Any] | None = self._settings.pop("acknowledgement_commit_callback", None)
        self._thread: ConsumerThread | None = None
        self._consumer: ShareConsumer[K, V] | None = None
        self._state = "new"

    async def start(self) -> None:
        """Connect and subscribe (the constructor's topics)."""
        if self._state != "new":
            raise IllegalStateError("start() was called already" if self._state == "running"
                                    else "the consumer is stopped: create a new one")
        loop = asyncio.get_running_loop()
        self._thread = thread = ConsumerThread(loop, f"groupclient-share-{self._settings.get('group_id')}")
        settings = dict(self._settings)
        callback = self._callback
        if callback is not None:
            settings["acknowledgement_commit_callback"] = lambda offsets, error: thread.run_on_loop(
                lambda: callback(offsets, error))
        self._state = "starting"
        try:
            self._consumer = await thread.submit(lambda: ShareConsumer(*self._topics, **settings))
        except BaseException:
            self._state = "stopped"
            thread.close()
            raise
        self._state = "running"

    async def _job(self, run: Callable[[ShareConsumer[K, V]], T]) -> T:
        consumer, thread = self._consumer, self._thread
        if self._state != "running" or consumer is None or thread is None:
            raise ConsumerStoppedError("the consumer is not running: start() it first" if self._state == "new"
                                       else "the consumer is stopped")
        return await thread.submit(lambda: run(consumer), nested=True)

    # -- the calls -----------------------------------------------------------------------------
    async def subscribe(self, topics: Iterable[str] | str) -> None:
        """As ShareConsumer.subscribe (topic names only)."""
        names = [topics] if isinstance(topics, str) else list(topics)
        await self._job(lambda c: c.subscribe(names))

    async def unsubscribe(self) -> None:
        """As ShareConsumer.unsubscribe: leave the group."""
        await self._job(lambda c: c.unsubscribe())

    async def subscription(self) -> set[str]:
        """The topics subscribed to."""
        return await self._job(lambda c: c.subscription())

    async def poll(self, timeout_ms: float = 0, max_records: int | None = None) -> ShareRecords[K, V]:
        """As ShareConsumer.poll: the records of this poll, by partition (the last poll's
        settled first: accepted in implicit mode, checked in explicit mode)."""
        return await self._job(lambda c: c.poll(timeout_ms=timeout_ms, max_records=max_records))

    async def acknowledge(self, record: Any, *position: Any, type: AcknowledgeType | int | str | None = None) -> None:
        """As ShareConsumer.acknowledge (explicit mode)."""
        await self._job(lambda c: c.acknowledge(record, *position, type=type))

    async def commit_sync(self, timeout_ms: float | None = None) -> dict[TopicPartition, Exception | None]:
        """As ShareConsumer.commit_sync: each partition's outcome."""
        return await self._job(lambda c: c.commit_sync(timeout_ms))

    async def commit_async(self) -> None:
        """As ShareConsumer.commit_async: the callback gets the outcomes."""
        await self._job(lambda c: c.commit_async())

    async def acquisition_lock_timeout_ms(self) -> int | None:
        """The broker's acquisition lock, from its last answer (None before one)."""
        return await self._job(lambda c: c.acquisition_lock_timeout_ms())

    def wakeup(self) -> None:
        """The poll or commit under way (or the next) raises WakeupError."""
        if self._consumer is not None:
            self._consumer.wakeup()

    def metrics(self) -> dict[str, float]:
        """As ShareConsumer.metrics."""
        return self._consumer.metrics() if self._consumer is not None else {}

    async def stop(self, timeout_ms: float | None = None) -> None:
        """Close (as ShareConsumer.close: acknowledgements made are sent, the share sessions
        closed, the group left) and end the consumer thread.  A second stop does nothing."""
        if self._state in ("stopped", "new"):
            self._state = "stopped"
            return
        consumer, thread = self._consumer, self._thread
        self._state = "stopped"
        if consumer is None or thread is None:
            return
        try:
            await thread.submit(lambda: consumer.close(timeout_ms))
        finally:
            thread.close()

    # -- iteration and context -----------------------------------------------------------------
    def __aiter__(self) -> AsyncIterator[ShareRecord[K, V]]:
        return self._records()

    async def _records(self) -> AsyncIterator[ShareRecord[K, V]]:
        while self._state == "running":
            for records in (await self.poll(timeout_ms=1000)).values():
                for record in records:
                    yield record

    async def __aenter__(self) -> AsyncShareConsumer[K, V]:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()


__all__ = ["AsyncShareConsumer"]
