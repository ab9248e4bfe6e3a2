"""What both protocols' members do with their group coordinator: find it, forget it, send to it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..clock import Timer
from ..errors import FatalError
from ..network.future import RequestFuture
from .coordinator_lookup import CoordinatorLookup


class Coordinated:
    """A member's access to its coordinator (``coordinator`` is set by the member)."""

    coordinator: CoordinatorLookup

    def set_fatal(self, error: BaseException) -> None:
        raise NotImplementedError

    def coordinator_unknown(self) -> bool:
        return self.coordinator.unknown()

    def coordinator_problem(self) -> str | None:
        """Why the coordinator was last lost or not found, for a timeout's message."""
        return self.coordinator.problem

    def mark_coordinator_dead(self, reason: str) -> None:
        self.coordinator.mark_dead(reason)

    def ensure_coordinator_ready(self, timer: Timer) -> bool:
        """Find the coordinator and connect to it within the timer; a fatal answer (group
        authorization...) is kept for poll() and raised."""
        try:
            return self.coordinator.ensure_ready(timer)
        except FatalError as exc:
            self.set_fatal(exc)
            raise

    def send_to_coordinator(self, request_cls: Any, response_cls: Any, build: Callable[[int], Any],
                            timeout_ms: int | None = None, heartbeat: bool = False) -> RequestFuture[Any]:
        return self.coordinator.send(request_cls, response_cls, build, timeout_ms, heartbeat)
