"""The thread that owns an AsyncGroupConsumer's GroupConsumer: the event loop hands it jobs.

Concurrency model (docs/design.md, "asyncio"):

- The event loop's thread calls :meth:`ConsumerThread.submit`; it only appends to a queue under
  the thread's one lock (held for the append, never for a job), so the loop never waits.
- The consumer thread runs the jobs one at a time, in order, and is the GroupConsumer's owner
  (its ThreadOwnership), so every blocking call (join, fetch, commit) happens here.
- A job's outcome reaches its asyncio future through ``loop.call_soon_threadsafe``: futures are
  completed on the loop, never from this thread.  A job may also carry ``on_result``, run on the
  loop with the outcome *even when the future was cancelled* (records are never lost that way).
- Between jobs the thread runs its *background turn* (:meth:`run_in_background`): the
  consumer keeps its group (joins, rebalances, auto-commit) whether or not the application
  fetches.  A turn is bounded, and ends at once when a job comes (``submit`` calls ``wake``).
  A turn that raises hands its error to ``on_error`` (on the loop) and turns stop until
  :meth:`resume_background`: the error waits for the application instead of repeating.
- User code the GroupConsumer calls inside a job or a turn (a rebalance listener) is run on the
  loop by :meth:`run_on_loop`; while the thread waits for it, it runs the queued jobs marked
  ``nested`` (commit, position, committed... that a listener coroutine awaits), as a synchronous
  listener would call the consumer from inside ``poll()``; the others wait their turn.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .errors import ConsumerStoppedError

log = logging.getLogger("groupclient.aio")

T = TypeVar("T")

LISTENER_WAIT_SLICE_S = 0.1  # how often a wait for the loop looks whether the loop is gone

# the ConsumerThread whose rebalance listener the current task (or a task it started) runs for
_LISTENER_OF: contextvars.ContextVar[ConsumerThread | None] = contextvars.ContextVar("listener_of", default=None)


@dataclass
class Job(Generic[T]):
    """One call for the consumer thread."""

    run: Callable[[], T]
    future: asyncio.Future[T]
    nested: bool  # may run while a listener of an outer job is running (see the module doc)
    on_result: Callable[[T], None] | None = None


@dataclass
class Background:
    """What the thread does between jobs: ``turn()`` (bounded; ``wake()`` from any thread ends
    it early), and ``on_error`` called on the loop with what a turn raised."""

    turn: Callable[[], None]
    wake: Callable[[], None]
    on_error: Callable[[BaseException], None]


class ConsumerThread:
    """Runs jobs for one AsyncGroupConsumer on a thread of its own (see the module doc)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, name: str) -> None:
        self._loop = loop
        # guards _jobs, _closed, _background and _paused; never held around a job or a turn
        self._cond = threading.Condition()
        self._jobs: deque[Job[Any]] = deque()
        self._closed = False
        self._background: Background | None = None
        self._paused = False  # a turn raised: no more turns until resume_background()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def run_in_background(self, background: Background) -> None:
        """From then on, run ``background.turn()`` whenever no job is queued."""
        with self._cond:
            self._background, self._paused = background, False
            self._cond.notify_all()

    def stop_background(self) -> None:
        """No more turns (the consumer closes); a turn under way finishes (a job submitted
        with this call wakes it)."""
        with self._cond:
            self._background = None
            self._cond.notify_all()

    def resume_background(self) -> None:
        """The error a turn raised reached the application: turns go on."""
        with self._cond:
            if self._paused:
                self._paused = False
                self._cond.notify_all()

    def submit(self, run: Callable[[], T], *, nested: bool = False,
               on_result: Callable[[T], None] | None = None) -> asyncio.Future[T]:
        """From the loop: queue ``run`` and return the future its outcome completes."""
        future: asyncio.Future[T] = self._loop.create_future()
        job = Job(run, future, nested, on_result)
        with self._cond:
            if self._closed:
                raise ConsumerStoppedError("the consumer is stopped")
            self._jobs.append(job)
            self._cond.notify_all()
            background = self._background
        if background is not None:
            background.wake()  # a turn under way gives way to the job
        return future

    def in_listener(self) -> bool:
        """On the loop: whether the running task is one of this thread's listener calls (or a task
        one started: the context is inherited)."""
        return _LISTENER_OF.get() is self

    def has_waiting_jobs(self) -> bool:
        """Whether jobs are queued (a long job gives way to them)."""
        with self._cond:
            return bool(self._jobs)

    def close(self) -> None:
        """No more jobs; the thread ends once the queued ones ran."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # -- the consumer thread ---------------------------------------------------------------
    def _main(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._closed and (self._background is None or self._paused):
                    self._cond.wait()
                job = self._jobs.popleft() if self._jobs else None
                background = self._background if job is None and not self._closed else None
                if job is None and background is None:
                    return  # closed, and every queued job ran
            if job is not None:
                self._execute(job)
            elif background is not None:
                self._turn(background)

    def _turn(self, background: Background) -> None:
        try:
            background.turn()
        except BaseException as exc:  # the application hears it; turns wait for it to
            with self._cond:
                self._paused = True
            try:
                self._loop.call_soon_threadsafe(background.on_error, exc)
            except RuntimeError:  # the loop is closed: nobody to tell
                log.debug("the event loop closed before a background error reached it: %r", exc)

    def _execute(self, job: Job[Any]) -> None:
        try:
            value, error = job.run(), None
        except BaseException as exc:  # handed to the awaiting coroutine, whatever it is
            value, error = None, exc
        self._post(job, value, error)

    def _post(self, job: Job[Any], value: Any, error: BaseException | None) -> None:
        def complete() -> None:
            if error is None and job.on_result is not None:
                job.on_result(value)
            if job.future.cancelled():
                if error is not None:  # a fetch keeps its error in its result instead
                    log.debug("a cancelled call's error: %r", error)
                return
            if error is not None:
                job.future.set_exception(error)
            else:
                job.future.set_result(value)
        try:
            self._loop.call_soon_threadsafe(complete)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            log.debug("the event loop closed before a result of the consumer thread reached it")

    def run_on_loop(self, call: Callable[[], Any]) -> Any:
        """On the consumer thread: run ``call()`` on the loop (awaited if it returns an
        awaitable) and return its result, running nested jobs meanwhile."""
        done = concurrent.futures.Future[Any]()

        async def on_loop() -> None:
            _LISTENER_OF.set(self)  # this task's own context (create_task copied it)
            try:
                result = call()
                if inspect.isawaitable(result):
                    result = await result
                done.set_result(result)
            except asyncio.CancelledError:
                # an Exception for the rebalance code, which goes on (a BaseException would
                # break it off half-way): the listener's error, raised from the next call
                done.set_exception(ConsumerStoppedError("the rebalance listener's task was cancelled"))
            except BaseException as exc:
                done.set_exception(exc)
            finally:
                with self._cond:
                    self._cond.notify_all()

        try:
            self._loop.call_soon_threadsafe(lambda: self._loop.create_task(on_loop()))
        except RuntimeError:
            raise ConsumerStoppedError("the event loop is closed: the rebalance listener cannot run") from None
        while True:
            with self._cond:
                job = self._take_nested()
                if job is None:
                    if done.done():
                        break
                    self._cond.wait(LISTENER_WAIT_SLICE_S)
            if job is not None:
                self._execute(job)
            elif self._loop.is_closed() and not done.done():
                raise ConsumerStoppedError("the event loop closed while a rebalance listener ran")
        return done.result()

    def _take_nested(self) -> Job[Any] | None:
        for index, job in enumerate(self._jobs):
            if job.nested:
                del self._jobs[index]
                return job
        return None

