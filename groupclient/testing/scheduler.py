"""One fake clock for a whole group, and the baton that lets exactly one thread run at a time.

Every thread of every simulated member (the application loop, the heartbeat thread) is an
*actor*: a real thread that only runs while it holds the baton and hands it back whenever it
would block (in the network poller, :meth:`Scheduler.wait`, or a thread join).  Time moves only
when no actor can run and no event is due: then the clock jumps to the next deadline.  Which of
several runnable actors goes first is drawn from the seeded RNG, so a seed is a schedule and the
same seed replays the same interleaving.  Server-side work (request handlers, coordinator
timers, message deliveries) runs as events on the driver's thread.

The driver is whichever thread calls :meth:`Scheduler.run_until` (or blocks on the scheduler
without being an actor, e.g. a test calling ``consumer.poll()`` itself): it runs the loop.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger("groupclient.testing")

WALL_OFFSET_MS = 1_700_000_000_000


class Crashed(BaseException):
    """Raised inside a crashed member's threads so that they unwind like a killed process.

    A BaseException, so that no ``except Exception`` in the client swallows it.
    """


class SimulationError(AssertionError):
    """The simulation itself cannot go on (a thread blocked outside it, nothing left to run)."""


def _held_lock() -> threading.Lock:
    """A plain lock used as a binary semaphore (much cheaper to hand over than a Semaphore):
    created held; release() lets the waiting side's acquire() through."""
    lock = threading.Lock()
    lock.acquire()
    return lock


@dataclass(eq=False)
class Actor:
    name: str
    owner: str  # the member it belongs to; crashing or stalling a member applies to all its actors
    resume: threading.Lock = field(default_factory=_held_lock)
    wake_at: int | None = None
    wake_if: Callable[[], bool] | None = None
    started: bool = False
    done: bool = False
    crashed: bool = False
    error: BaseException | None = None

    def runnable(self, now: int, frozen_until: int) -> bool:
        if self.done or now < frozen_until:
            return False
        if self.crashed or not self.started:
            return True
        if self.wake_at is not None and self.wake_at <= now:
            return True
        return self.wake_if is not None and self.wake_if()


class ActorThread:
    """What :meth:`Scheduler.start_thread` returns: join and is_alive on the simulated clock."""

    def __init__(self, scheduler: Scheduler, actor: Actor) -> None:
        self._scheduler = scheduler
        self.actor = actor

    def join(self, timeout_s: float | None = None) -> None:
        deadline = None if timeout_s is None else self._scheduler.now + int(timeout_s * 1000)
        self._scheduler.block(deadline, lambda: self.actor.done)

    def is_alive(self) -> bool:
        return not self.actor.done


class EventHandle:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Scheduler:
    """The simulator's clock (it implements :class:`groupclient.clock.Clock`) and its loop."""

    def __init__(self, seed: int = 0, start_ms: int = 1_000_000, real_timeout_s: float = 60.0,
                 max_simulated_ms: int = 7 * 24 * 3600 * 1000) -> None:
        self.now = start_ms
        # a bound on every run, so that a wait that never ends fails instead of spinning forever
        self.end_of_time = start_ms + max_simulated_ms
        self.rng = random.Random(seed)
        self.real_timeout_s = real_timeout_s
        self.steps = 0
        self.observers: list[Callable[[], None]] = []  # called after every step (invariants)
        self.errors: list[tuple[str, BaseException]] = []  # exceptions that ended an actor
        self._events: list[tuple[int, int, EventHandle, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._actors: list[Actor] = []
        self._by_thread: dict[int, Actor] = {}
        self._frozen: dict[str, int] = {}  # owner -> time until which its actors are stopped
        # owners just let go of a freeze: their threads run before anyone else's, as a resumed
        # process's threads all wake at once; meanwhile the invariants do not count them
        self.thawing: set[str] = set()
        self._yielded = _held_lock()
        self._driving = False

    # -- the Clock protocol --------------------------------------------------------------
    def monotonic_ms(self) -> int:
        return self.now

    def wall_ms(self) -> int:
        return WALL_OFFSET_MS + self.now

    def wait(self, event: threading.Event, timeout_ms: int) -> bool:
        if not event.is_set():
            self.block(self.now + max(timeout_ms, 0), event.is_set)
        return event.is_set()

    def start_thread(self, name: str, target: Callable[[], None]) -> ActorThread:
        current = self.current_actor()
        return self.spawn(name, target, current.owner if current is not None else "driver")

    # -- actors --------------------------------------------------------------------------
    def spawn(self, name: str, target: Callable[[], None], owner: str) -> ActorThread:
        actor = Actor(name, owner)
        self._actors.append(actor)

        def run() -> None:
            self._by_thread[threading.get_ident()] = actor
            actor.resume.acquire()
            try:
                if not actor.crashed:
                    target()
            except Crashed:
                pass
            except BaseException as exc:  # reported by the driver, never lost
                actor.error = exc
                self.errors.append((actor.name, exc))
                log.exception("simulated thread %s failed", actor.name)
            finally:
                actor.done = True
                self._yielded.release()

        threading.Thread(target=run, name=f"sim-{name}", daemon=True).start()
        return ActorThread(self, actor)

    def current_actor(self) -> Actor | None:
        return self._by_thread.get(threading.get_ident())

    def crash(self, owner: str) -> None:
        """Every actor of ``owner`` raises :class:`Crashed` the next time it runs."""
        for actor in self._actors:
            if actor.owner == owner and not actor.done:
                actor.crashed = True
        self._frozen.pop(owner, None)

    def freeze(self, owner: str, until_ms: int) -> None:
        """Stop ``owner``'s actors until ``until_ms`` (a SIGSTOP): nothing of it runs meanwhile."""
        self._frozen[owner] = max(self._frozen.get(owner, 0), until_ms)

    def frozen_until(self, owner: str) -> int:
        return self._frozen.get(owner, 0)

    def block(self, deadline: int | None, wake_if: Callable[[], bool] | None) -> None:
        """Give up the baton until ``wake_if()`` holds or the clock reaches ``deadline``."""
        actor = self.current_actor()
        if actor is None:
            # the driver: run the simulation until its own condition holds or its deadline comes
            self.run_until(lambda: wake_if is not None and wake_if(),
                           None if deadline is None else max(deadline - self.now, 0))
            return
        if actor.crashed:
            raise Crashed()
        actor.wake_at, actor.wake_if = deadline, wake_if
        self._yielded.release()
        actor.resume.acquire()
        actor.wake_at, actor.wake_if = None, None
        if actor.crashed:
            raise Crashed()

    def sleep(self, ms: int) -> None:
        self.block(self.now + max(ms, 0), None)

    # -- events --------------------------------------------------------------------------
    def call_at(self, when: int, callback: Callable[[], None]) -> EventHandle:
        handle = EventHandle()
        heapq.heappush(self._events, (max(when, self.now), next(self._seq), handle, callback))
        return handle

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> EventHandle:
        return self.call_at(self.now + max(delay_ms, 0), callback)

    # -- the loop ------------------------------------------------------------------------
    def run_until(self, done: Callable[[], bool], max_ms: int | None = None) -> bool:
        """Run actors and events until ``done()`` holds (True) or ``max_ms`` passed (False)."""
        if self._driving:
            raise SimulationError("the scheduler loop is already running on another thread")
        self._driving = True
        limit = None if max_ms is None else self.now + max_ms
        try:
            while True:
                self._raise_errors()
                if done():
                    return True
                if self._step():
                    continue
                if limit is not None and self.now >= limit:
                    return False
                target = self._next_time()
                if limit is not None:
                    target = limit if target is None else min(target, limit)
                if target is None:
                    raise SimulationError("nothing can run and nothing is scheduled: the simulation is stuck")
                if target > self.end_of_time:
                    raise SimulationError(f"the simulation reached its end of time ({self.end_of_time} ms) "
                                          "waiting for a condition that never came")
                self.now = max(self.now, target)
        finally:
            self._driving = False

    def run_for(self, ms: int) -> None:
        self.run_until(lambda: False, ms)

    def _step(self) -> bool:
        """Run one runnable actor or one due event; False when neither exists now."""
        for owner, until in list(self._frozen.items()):
            if until <= self.now:
                del self._frozen[owner]
                self.thawing.add(owner)
        runnable = [a for a in self._actors if a.runnable(self.now, self._frozen.get(a.owner, 0))]
        if self.thawing:
            first = [a for a in runnable if a.owner in self.thawing]
            self.thawing = {a.owner for a in first}
            runnable = first or runnable
        if runnable:
            actor = runnable[0] if len(runnable) == 1 else self.rng.choice(runnable)
            self._resume(actor)
        else:
            while self._events and self._events[0][2].cancelled:
                heapq.heappop(self._events)
            if not self._events or self._events[0][0] > self.now:
                return False
            _, _, _, callback = heapq.heappop(self._events)
            callback()
        self.steps += 1
        for observe in self.observers:
            observe()
        return True

    def _resume(self, actor: Actor) -> None:
        actor.started = True
        actor.resume.release()
        if not self._yielded.acquire(timeout=self.real_timeout_s):
            raise SimulationError(f"simulated thread {actor.name} did not hand back control within "
                                  f"{self.real_timeout_s} s of real time: it blocked outside the simulator")
        if actor.done:
            self._actors.remove(actor)

    def _next_time(self) -> int | None:
        times = [e[0] for e in self._events if not e[2].cancelled]
        for actor in self._actors:
            frozen = self._frozen.get(actor.owner, 0)
            if frozen > self.now:
                times.append(frozen)
            elif actor.wake_at is not None:
                times.append(actor.wake_at)
        return min(times) if times else None

    def _raise_errors(self) -> None:
        if self.errors:
            name, exc = self.errors[0]
            raise SimulationError(f"simulated thread {name} failed: {exc!r}") from exc

    def live_actors(self) -> list[Actor]:
        return [a for a in self._actors if not a.done]
