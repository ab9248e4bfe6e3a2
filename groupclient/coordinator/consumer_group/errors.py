"""The one error a consumer-protocol group answers with: an error code and Kafka's message."""

from __future__ import annotations

from ...error_codes import ErrorCode


class HeartbeatError(Exception):
    """An error answer: the code and Kafka's message."""

    def __init__(self, code: ErrorCode, message: str | None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message
