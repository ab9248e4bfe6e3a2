"""What one blocking call tried before its time ran out: :class:`Attempts`.

A blocking call (a commit, a committed-offset fetch, an offset look-up, a metadata request)
retries what can be retried until its timer ends.  The error it raises then must say why, as
the Java client's does not: each partition's last error and the number of tries, so that
"commit of 1 offset did not finish in 60000 ms: n-99 UNKNOWN_TOPIC_OR_PARTITION (12 tries)"
tells the caller the topic does not exist rather than that the cluster was slow.  The loops
record into an ``Attempts`` as they go; :meth:`Attempts.timed_out` makes the error.

One ``Attempts`` belongs to one call on one thread (the caller's); it takes no lock.
"""

from __future__ import annotations

from collections.abc import Iterable

from .clock import Timer
from .error_codes import error_name
from .errors import BrokerError, CallTimeoutError, NetworkError


def reason(error: BaseException | int | str) -> str:
    """A short name for why a try failed: an error code's name (``NOT_COORDINATOR``) for a
    broker's answer, what happened for a network failure (``REQUEST_TIMED_OUT: no answer within
    30000 ms``), else the exception's class and message."""
    if isinstance(error, str):
        return error
    if isinstance(error, int):
        return error_name(error)
    if isinstance(error, NetworkError):  # what the network did: the detail says more than the code
        return f"{error.name}: {error.detail}" if error.detail else error.name
    if isinstance(error, BrokerError):  # a broker's answer: its code's name says it all
        return error.name
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class Attempts:
    """The tries of one blocking call and the last error each of its subjects (partitions, by
    ``str(tp)``-like names; topics; or none) got.  ``""`` stands for the call as a whole."""

    def __init__(self, operation: str, timer: Timer, subjects: Iterable[str] = ()) -> None:
        self.operation = operation
        self.timer = timer
        self.subjects = list(subjects)
        self.tries = 0
        self.last_errors: dict[str, str] = {}
        self._this_try: set[str] = set()  # the subjects that got an error of their own in this try

    def tried(self) -> None:
        """One more request sent (or one more round of requests, one per broker)."""
        self.tries += 1
        self._this_try.clear()

    def failed(self, error: BaseException | int | str, subjects: Iterable[str] | None = None) -> None:
        """A try failed: for ``subjects`` (each partition's own error code), or for the whole
        call when None (a dropped connection, no coordinator).  The most precise cause wins: an
        error of the whole request after some subjects got their own in the same try (the
        request fails with the first of them) changes nothing."""
        why = reason(error)
        if subjects is None:
            if self._this_try:
                return
            subjects = self.subjects or [""]
        else:
            subjects = list(subjects)
            self._this_try.update(subjects)
        for subject in subjects:
            self.last_errors[subject] = why

    def waiting(self, what: str, subjects: Iterable[str] | None = None) -> None:
        """Nothing was sent for ``subjects`` (all when None) this try, for ``what`` (no leader
        known, a connection being made): their last error, unless they already have one, which
        says more (the request timeout that made the client reconnect)."""
        for subject in (self.subjects or [""]) if subjects is None else subjects:
            self.last_errors.setdefault(subject, what)

    def timed_out(self, pending: Iterable[str] | None = None) -> CallTimeoutError:
        """The error to raise: the subjects still ``pending`` (default: all) with their last
        error ("no answer" for one that never got any)."""
        wanted = list(self.subjects if pending is None else pending)
        last = {s: self.last_errors.get(s, "no answer") for s in wanted}
        if not wanted:
            last = {"": self.last_errors.get("", "no answer")}
        return CallTimeoutError(operation=self.operation, timeout_ms=self.timer.timeout_ms, last_errors=last,
                                tries=self.tries)


def partition_name(topic: str, partition: int) -> str:
    """How a partition is named in messages: ``topic-partition``, as Kafka's tools write it."""
    return f"{topic}-{partition}"


def counted(n: int, thing: str) -> str:
    """``1 offset``, ``3 offsets``."""
    return f"{n} {thing}" if n == 1 else f"{n} {thing}s"
