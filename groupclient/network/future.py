"""``RequestFuture``: the result of a request, with listeners, ``compose`` and ``chain``.

Listeners run on the thread that completes the future, which is the thread that polled the
network client; the client completes futures only after releasing its lock.  A listener added
after completion runs at once on the adding thread.  Each future has a small lock of its own,
held only to change its state or take its listener lists, never while a listener runs, so that a
listener added while another thread completes the future runs exactly once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ..errors import GroupClientError, InternalError, RetriableError

log = logging.getLogger("groupclient.network")

T = TypeVar("T")
U = TypeVar("U")

_RETRIABLE = RetriableError  # network errors are RetriableErrors too


class RequestFuture(Generic[T]):
    __slots__ = ("_lock", "_done", "_value", "_exception", "_on_success", "_on_failure")

    def __init__(self) -> None:
        self._lock = threading.Lock()
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
        if not self._complete(value, None):
            raise RuntimeError("a future completes once")

    def failure(self, exc: BaseException) -> None:
        if not self._complete(None, exc):
            raise RuntimeError("a future completes once")

    def _complete(self, value: T | None, exc: BaseException | None) -> bool:
        """Complete the future unless it is done already; whether this call completed it."""
        with self._lock:
            if self._done:
                return False
            # value and exception are set before _done: a reader that sees _done sees them
            self._value, self._exception = value, exc
            self._done = True
            on_success, self._on_success = self._on_success, []
            on_failure, self._on_failure = self._on_failure, []
        if exc is None:
            for callback in on_success:
                self._run(callback, value)
        else:
            for errback in on_failure:
                self._run(errback, exc)
        return True

    @staticmethod
    def _run(callback: Callable[[Any], Any], arg: Any) -> None:
        try:
            callback(arg)
        except Exception:
            # a listener's bug must not stop the others; it is logged, not swallowed silently
            log.exception("a RequestFuture listener failed")

    # -- listeners -----------------------------------------------------------------------
    def add_callback(self, callback: Callable[[T], Any]) -> RequestFuture[T]:
        with self._lock:
            if not self._done:
                self._on_success.append(callback)
                return self
        if self._exception is None:
            self._run(callback, self._value)
        return self

    def add_errback(self, errback: Callable[[BaseException], Any]) -> RequestFuture[T]:
        with self._lock:
            if not self._done:
                self._on_failure.append(errback)
                return self
        if self._exception is not None:
            self._run(errback, self._exception)
        return self

    def add_both(self, fn: Callable[[Any], Any]) -> RequestFuture[T]:
        return self.add_callback(fn).add_errback(fn)

    def compose(self, adapter: Callable[[T, RequestFuture[U]], None]) -> RequestFuture[U]:
        """A new future completed by ``adapter(value, new_future)`` when this one succeeds.

        Failures pass through unchanged, as in the Java client's RequestFutureAdapter.  An adapter
        that raises before completing the new future fails it, so callers never wait until their
        timeout: with its own error if it raised a groupclient one (an answer it found unusable
        is a ``ProtocolError``), and with :class:`InternalError` for anything else, which is a bug
        of groupclient's: fatal, never retried, its traceback logged and kept as ``__cause__``.
        """
        composed: RequestFuture[U] = RequestFuture()

        def adapt(value: T) -> None:
            try:
                adapter(value, composed)
            except GroupClientError as exc:
                composed._complete(None, exc)  # a no-op if the adapter completed it first
            except Exception as exc:
                log.exception("handling an answer failed: a bug in groupclient")
                bug = InternalError(f"handling an answer failed with {exc!r}: a bug in groupclient (the "
                                    "traceback is this error's __cause__); close the consumer")
                bug.__cause__ = exc
                composed._complete(None, bug)

        self.add_callback(adapt)
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


