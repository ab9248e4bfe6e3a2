"""The real coordinator (``ClusterCore`` and its ``BrokerNode``s) driven by the simulator.

Request handlers are coroutines; here they are stepped by a small trampoline instead of an
asyncio loop, and what they wait on (:class:`SimWaiter`) is resolved by scheduler events, so the
whole server runs on the simulator's clock, on the driver's thread, deterministically.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Generator
from typing import Any, TypeVar

from ..coordinator.runtime import TimerHandle, Waiter
from .scheduler import Scheduler

log = logging.getLogger("groupclient.testing")

T = TypeVar("T")


class SimWaiter(Waiter[T]):
    """A one-shot result; awaiting it suspends the handler's coroutine until it is resolved.

    As with asyncio futures, what waits on it resumes later (as its own scheduler event), never
    inside ``set_result``: the coordinator delivers answers from inside loops over its members."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self._done = False
        self._cancelled = False
        self._result: T | None = None
        self._listeners: list[Callable[[], None]] = []

    def done(self) -> bool:
        return self._done

    def set_result(self, result: T, /) -> None:
        if self._done:
            raise RuntimeError("a waiter is resolved once")
        self._done, self._result = True, result
        self._fire()

    def cancel(self, msg: Any | None = None) -> bool:
        if self._done:
            return False
        self._done = self._cancelled = True
        self._fire()
        return True

    def add_listener(self, listener: Callable[[], None]) -> None:
        if self._done:
            listener()
        else:
            self._listeners.append(listener)

    def _fire(self) -> None:
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            self._scheduler.call_later(0, listener)

    def __await__(self) -> Generator[Any, None, T]:
        if not self._done:
            yield self
        if self._cancelled:
            raise asyncio.CancelledError()
        return self._result  # type: ignore[return-value]  # set before _done, and T may be None


class SimServerRuntime:
    """:class:`groupclient.coordinator.runtime.ServerRuntime` on the simulator's clock."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

    def create_waiter(self) -> Waiter[Any]:
        return SimWaiter(self.scheduler)

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        return self.scheduler.call_later(delay_ms, callback)

    async def sleep(self, delay_ms: int) -> None:
        waiter: SimWaiter[None] = SimWaiter(self.scheduler)
        self.scheduler.call_later(delay_ms, lambda: waiter.set_result(None))
        await waiter


class SimTask:
    """Steps a handler coroutine; each time it awaits a :class:`SimWaiter`, resumes it when the
    waiter resolves; ``on_done(result, error)`` at the end."""

    def __init__(self, coro: Coroutine[Any, Any, T],
                 on_done: Callable[[T | None, BaseException | None], None]) -> None:
        self._coro = coro
        self._on_done = on_done

    def start(self) -> None:
        self._step()

    def _step(self) -> None:
        try:
            awaited = self._coro.send(None)
        except StopIteration as stop:
            self._on_done(stop.value, None)
            return
        except BaseException as exc:  # handed to the connection, which decides what it means
            self._on_done(None, exc)
            return
        if not isinstance(awaited, SimWaiter):
            self._coro.close()
            self._on_done(None, TypeError(f"a simulated handler awaited {awaited!r}, not a SimWaiter"))
            return
        awaited.add_listener(self._step)

    def cancel(self) -> None:
        self._coro.close()
