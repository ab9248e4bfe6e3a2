"""``RequestFuture``: the result of a request, with listeners, ``compose`` and ``chain``.

Listeners run on the thread that completes the future, which is the thread that polled the
network client; the client completes futures only after releasing its lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ..errors import DisconnectedError, NodeNotReadyError, RequestTimedOutError, RetriableError

log = logging.getLogger("groupclient.network")

T = TypeVar("T")
U = TypeVar("U")

_RETRIABLE = (RetriableError, NodeNotReadyError, DisconnectedError, RequestTimedOutError)


class RequestFuture(Generic[T]):
    __slots__ = ("_done", "_value", "_exception", "_on_success", "_on_failure")

    def __init__(self) -> None:
        self._done = False
        self._value: T | None = None
        self._exception: BaseException | None = None
        self._on_success: list[Callable[[T], Any]] = []
        self._on_failure: list[Callable[[BaseException], Any]] = []

    # -- state ---------------------------------------------------------------------------
    def is_done(self) -> bool:
        return self._done

    def succeeded(self) -> bool:
        return self._done and self._exception is None

    def failed(self) -> bool:
        return self._done and self._exception is not None

    def retriable(self) -> bool:
        """Failed with an error that a later attempt may not have."""
        return isinstance(self._exception, _RETRIABLE)

    @property
    def value(self) -> T:
        if not self.succeeded():
            raise RuntimeError("the future has not succeeded")
        return self._value  # type: ignore[return-value]

    @property
    def exception(self) -> BaseException | None:
        return self._exception

    # -- completion ----------------------------------------------------------------------
    def success(self, value: T) -> None:
        if self._done:
            raise RuntimeError("a future completes once")
        self._value, self._done = value, True
        for callback in self._on_success:
            self._run(callback, value)
        self._on_success.clear()
        self._on_failure.clear()

    def failure(self, exc: BaseException) -> None:
        if self._done:
            raise RuntimeError("a future completes once")
        self._exception, self._done = exc, True
        for callback in self._on_failure:
            self._run(callback, exc)
        self._on_success.clear()
        self._on_failure.clear()

    @staticmethod
    def _run(callback: Callable[[Any], Any], arg: Any) -> None:
        try:
            callback(arg)
        except Exception:
            # a listener's bug must not stop the others; it is logged, not swallowed silently
            log.exception("a RequestFuture listener failed")

    # -- listeners -----------------------------------------------------------------------
    def add_callback(self, callback: Callable[[T], Any]) -> RequestFuture[T]:
        if self._done:
            if self._exception is None:
                self._run(callback, self._value)
        else:
            self._on_success.append(callback)
        return self

    def add_errback(self, errback: Callable[[BaseException], Any]) -> RequestFuture[T]:
        if self._done:
            if self._exception is not None:
                self._run(errback, self._exception)
        else:
            self._on_failure.append(errback)
        return self

    def add_both(self, fn: Callable[[Any], Any]) -> RequestFuture[T]:
        return self.add_callback(fn).add_errback(fn)

    def compose(self, adapter: Callable[[T, RequestFuture[U]], None]) -> RequestFuture[U]:
        """A new future completed by ``adapter(value, new_future)`` when this one succeeds.

        Failures pass through unchanged, as in the Java client's RequestFutureAdapter.
        """
        composed: RequestFuture[U] = RequestFuture()
        self.add_callback(lambda value: adapter(value, composed))
        self.add_errback(composed.failure)
        return composed

    def chain(self, other: RequestFuture[T]) -> RequestFuture[T]:
        """Complete ``other`` the way this future completes."""
        self.add_callback(other.success)
        self.add_errback(other.failure)
        return self

    # -- ready-made --------------------------------------------------------------------------
    @classmethod
    def failed_with(cls, exc: BaseException) -> RequestFuture[T]:
        future: RequestFuture[T] = cls()
        future.failure(exc)
        return future

    @classmethod
    def succeeded_with(cls, value: T) -> RequestFuture[T]:
        future: RequestFuture[T] = cls()
        future.success(value)
        return future


