"""What the coordinator's request handlers wait on: futures, timers and sleeps.

The server runs on asyncio (:class:`AsyncioRuntime`).  The deterministic group simulator in
:mod:`groupclient.testing` drives the very same handlers with its own runtime on a fake clock,
so nothing below the node may call ``asyncio`` for waiting or time directly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Waiter(Protocol[T]):
    """A one-shot result a handler awaits (an ``asyncio.Future`` fits)."""

    def done(self) -> bool: ...

    def set_result(self, result: T, /) -> None: ...

    def cancel(self, msg: Any | None = None) -> bool: ...

    def __await__(self) -> Generator[Any, None, T]: ...


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class ServerRuntime(Protocol):
    def create_waiter(self) -> Waiter[Any]: ...

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle: ...

    async def sleep(self, delay_ms: int) -> None: ...


class AsyncioRuntime:
    """The running asyncio loop (the server thread's)."""

    def create_waiter(self) -> Waiter[Any]:
        return asyncio.get_running_loop().create_future()

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(max(delay_ms, 0) / 1000, callback)

    async def sleep(self, delay_ms: int) -> None:
        await asyncio.sleep(max(delay_ms, 0) / 1000)
