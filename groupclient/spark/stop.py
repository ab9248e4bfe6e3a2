"""When a consuming executor task stops: a pure decision over its progress and the time."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigurationError


@dataclass(frozen=True)
class StopWhen:
    """Stop conditions of one member task; the first one met stops it.  At least one is needed.

    - ``records``: this member delivered at least this many records;
    - ``idle_ms``: no record arrived for this long (counted from the task's start, then from
      the last record);
    - ``at_end``: every partition this member owns reached the end offset it had when the job
      started (records written later are left for the next run);
    - ``deadline``: wall-clock time, seconds since the epoch (executors' clocks are trusted to
      agree with the driver's to within a second or so).
    """

    AT_END = "every owned partition reached its end offset"

    records: int | None = None
    idle_ms: int | None = None
    at_end: bool = False
    deadline: float | None = None

    def __post_init__(self) -> None:
        if self.records is None and self.idle_ms is None and not self.at_end and self.deadline is None:
            raise ConfigurationError("StopWhen needs at least one of records, idle_ms, at_end or deadline")
        for name in ("records", "idle_ms"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
                raise ConfigurationError(f"StopWhen.{name} must be a positive integer, not {value!r}")

    def reason(self, progress: Progress, now_ms: int, wall_ms: int) -> str | None:
        """Why the task stops now, or None to go on."""
        if self.records is not None and progress.records >= self.records:
            return f"delivered {progress.records} records"
        if self.at_end and progress.at_end:
            return self.AT_END
        if self.deadline is not None and wall_ms >= self.deadline * 1000:
            return "deadline reached"
        if self.idle_ms is not None and now_ms - progress.last_record_ms >= self.idle_ms:
            return f"no record for {self.idle_ms} ms"
        return None

    def wait_ms(self, progress: Progress, now_ms: int, wall_ms: int, longest_ms: int) -> int:
        """How long the next poll may wait without overshooting a time-based condition."""
        wait = longest_ms
        if self.deadline is not None:
            wait = min(wait, int(self.deadline * 1000) - wall_ms)
        if self.idle_ms is not None:
            wait = min(wait, progress.last_record_ms + self.idle_ms - now_ms)
        return max(0, wait)


@dataclass
class Progress:
    records: int
    last_record_ms: int
    at_end: bool = False
