"""Fault hooks for tests: make the next N requests of an API fail, stall or drop the connection."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..error_codes import ErrorCode


class FaultKind(enum.Enum):
    ERROR = "error"  # answer with ``error_code`` instead of handling the request
    DELAY = "delay"  # handle the request ``delay_ms`` late
    DROP = "drop"  # close the connection without answering


@dataclass
class FaultRule:
    api_key: int
    kind: FaultKind
    count: int = 1
    error_code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR
    delay_ms: int = 0
    node_id: int | None = None  # None: any node

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError("a fault rule applies to at least one request")
        if self.kind is FaultKind.DELAY and self.delay_ms <= 0:
            raise ValueError("a delay fault needs delay_ms > 0")


class FaultInjector:
    """Rules are consumed in the order they were added.  Touched only on the server's loop."""

    def __init__(self) -> None:
        self._rules: list[FaultRule] = []
        self.fired: list[tuple[int, int, FaultKind]] = []  # (node, api key, kind), for assertions

    def add(self, rule: FaultRule) -> None:
        self._rules.append(rule)

    def clear(self) -> None:
        self._rules.clear()

    def take(self, api_key: int, node_id: int) -> FaultRule | None:
        for rule in self._rules:
            if rule.api_key == api_key and rule.node_id in (None, node_id):
                rule.count -= 1
                if rule.count == 0:
                    self._rules.remove(rule)
                self.fired.append((node_id, api_key, rule.kind))
                return rule
        return None
