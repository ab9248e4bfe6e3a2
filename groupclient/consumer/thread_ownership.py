"""One thread at a time: the consumer's owner + re-entry count (the Java client's acquire())."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import ConcurrentAccessError


class ThreadOwnership:
    def __init__(self, owner: str = "GroupConsumer") -> None:
        self._name = owner  # what the error names
        self._guard = threading.Lock()  # held for the compare-and-set only
        self._owner: int | None = None
        self._count = 0

    @contextmanager
    def acquired(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._guard:
            if self._owner is not None and self._owner != me:
                raise ConcurrentAccessError(
                    f"this {self._name} is in use by another thread; a consumer is not safe for "
                    "multi-threaded access (only wakeup() may be called from another thread)")
            self._owner = me
            self._count += 1
        try:
            yield
        finally:
            with self._guard:
                self._count -= 1
                if self._count == 0:
                    self._owner = None
