"""Another thread's step, put at every point of one thread's step: deterministic interleavings
without threads.

``interleavings(main, other, files, locks)`` runs ``main`` once per switch point, and at that point
runs ``other`` to its end, as if the thread running ``main`` had been switched out there.  The
switch points are the lines executed in ``files`` (the code under test; Python switches threads
between bytecodes, so a line is a coarser but honest grain).  Where ``main`` holds one of
``locks`` at a switch point, ``other`` would block on it: it is run at the first later point
where none of them is held, as the real thread would be.  Each run gets fresh objects from
``setup()``, and ``check`` judges the outcome.

This is what the simulator cannot do: it switches threads only where a thread blocks, so it
never shows what happens between two steps of a check-then-act.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Generic, TypeVar

W = TypeVar("W")  # the world one run acts on

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Step(Generic[W]):
    """One thread's step on a world: ``run(world)``."""

    name: str
    run: Callable[[W], Any]


class _Switcher:
    def __init__(self, files: set[str], locks: Callable[[], Iterable[Any]], at: int, other: Callable[[], None]) -> None:
        self.files = files
        self.locks = locks
        self.at = at
        self.other = other
        self.points = 0
        self.pending = False
        self.ran_at: int | None = None

    def trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "call" and frame.f_code.co_filename in self.files:
            return self.local
        return None

    def local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            self.points += 1
            if self.points == self.at:
                self.pending = True
            self.maybe_switch()
        return self.local

    def maybe_switch(self) -> None:
        if self.pending and not any(_held(lock) for lock in self.locks()):
            self.pending = False
            self.ran_at = self.points
            self.other()  # tracing is off while a trace function runs: nothing of it is counted


def _held(lock: Any) -> bool:
    locked = getattr(lock, "locked", None)
    return bool(locked()) if callable(locked) else False


def _run(main: Callable[[], Any], switcher: _Switcher) -> Any:
    previous = sys.gettrace()
    sys.settrace(switcher.trace)
    try:
        return main()
    finally:
        sys.settrace(previous)
        if switcher.pending or switcher.ran_at is None:
            switcher.pending = False
            switcher.ran_at = switcher.points + 1
            switcher.other()  # past the end of main: the other thread ran after it


def interleavings(setup: Callable[[], W], main: Step[W], other: Step[W], files: Iterable[str],
                  locks: Callable[[W], Iterable[Any]], check: Callable[[W, int], str | None],
                  limit: int = 2000) -> tuple[int, list[str]]:
    """Run ``main`` with ``other`` switched in at each of its points (and before and after it);
    (how many points, what ``check(world, point)`` found wrong at each, as "at N: ...")."""
    paths = {str((ROOT / f).resolve()) for f in files}
    dry_world = setup()
    dry = _Switcher(paths, lambda: locks(dry_world), at=-1, other=lambda: None)
    _run(lambda: main.run(dry_world), dry)
    points = dry.points
    assert 0 < points < limit, f"{main.name}: {points} switch points in {sorted(files)}; is the code traced?"
    problems = []
    for at in range(0, points + 2):  # 0: before main; points + 1: after it
        world = setup()
        switcher = _Switcher(paths, lambda: locks(world), at, lambda: other.run(world))
        if at == 0:
            switcher.pending = True
            switcher.maybe_switch()
        _run(lambda: main.run(world), switcher)
        found = check(world, at)
        if found:
            problems.append(f"{other.name} at point {at} of {main.name} (ran at {switcher.ran_at}): {found}")
    return points, problems


def locks_of(*objects: Any) -> list[Any]:
    """The ``_lock`` of each object (one lock per object, the project's rule)."""
    return [getattr(o, "_lock") for o in objects if isinstance(getattr(o, "_lock", None), type(threading.Lock()))]
