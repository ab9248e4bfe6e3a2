"""A budget for the bytes of requests being read and handled, across every connection of the
process (Kafka's ``queued.max.request.bytes`` and its ``SimpleMemoryPool``).

A connection reads a frame's 4-byte size first, then asks the pool for that many bytes and
reads the frame only once they are granted; while the pool is used up it waits, reading
nothing more (the socket's buffers fill and the client is held back, as Kafka mutes the
channel).  Like Kafka's pool it is not strict: a request is let in whenever *any* budget is
left, so a request as big as ``max_request_bytes`` always gets in eventually, and the pool
overshoots its capacity by less than one request.  Waiters are served first come, first
served, so a big request is not starved by a stream of small ones.

Everything here runs on the server's event loop thread; nothing is locked.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass

log = logging.getLogger("groupclient.coordinator.memory")


@dataclass(frozen=True)
class PoolStats:
    capacity: int
    in_use: int  # bytes granted and not yet released
    peak: int  # the most ever in use at once
    waiting: int  # requests waiting for bytes now
    waits: int  # requests that ever had to wait


class Grant:
    """Bytes granted to one request; :meth:`release` gives them back (again is a no-op)."""

    __slots__ = ("_pool", "size")

    def __init__(self, pool: RequestMemoryPool | None, size: int) -> None:
        self._pool: RequestMemoryPool | None = pool
        self.size = size

    def release(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool._give_back(self.size)


class RequestMemoryPool:
    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("the request memory budget must be at least 1 byte")
        self.capacity = capacity
        self._in_use = 0
        self._peak = 0
        self._waits = 0
        self._waiters: deque[tuple[int, asyncio.Future[Grant]]] = deque()

    def stats(self) -> PoolStats:
        return PoolStats(self.capacity, self._in_use, self._peak, len(self._waiters), self._waits)

    async def acquire(self, size: int) -> Grant:
        if not self._waiters and self._in_use < self.capacity:
            return self._grant(size)
        if not self._waiters:
            log.warning("request memory budget used up (%d of %d bytes, queued_max_request_bytes): "
                        "connections wait before reading their next request", self._in_use, self.capacity)
        self._waits += 1
        waiter: asyncio.Future[Grant] = asyncio.get_running_loop().create_future()
        entry = (size, waiter)
        self._waiters.append(entry)
        try:
            return await waiter
        except asyncio.CancelledError:
            # the connection went away while waiting; bytes granted just before are given back
            if waiter.done() and not waiter.cancelled():
                waiter.result().release()
            elif entry in self._waiters:  # not yet skipped over by _give_back
                self._waiters.remove(entry)
            raise

    def _grant(self, size: int) -> Grant:
        self._in_use += size
        self._peak = max(self._peak, self._in_use)
        return Grant(self, size)

    def _give_back(self, size: int) -> None:
        self._in_use -= size
        while self._waiters and self._in_use < self.capacity:
            size, waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(self._grant(size))
