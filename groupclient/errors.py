"""Errors raised to users, grouped by what the caller can do about them.

- :class:`ConfigurationError`: fix the arguments; nothing was started.
- :class:`ConcurrentAccessError`, :class:`IllegalStateError`: a usage mistake in the caller's code.
- :class:`WakeupError`: another thread called ``wakeup()``; call ``poll()`` again or shut down.
- :class:`RetriableError`: transient; the consumer retries these itself and only raises one when the
  caller's timeout ran out.  Trying again later may work.
- :class:`FatalGroupError`: the group refused this member for good (bad configuration, fenced
  static member, authorization).  Close the consumer.
- :class:`CommitFailedError`: the commit cannot succeed because the group moved on; the records will
  be redelivered to whoever owns the partitions now.
"""

from __future__ import annotations

from .protocol.errors import ErrorCode


class GroupClientError(Exception):
    """Base class of every error groupclient raises."""


class ConfigurationError(GroupClientError, ValueError):
    pass


class ConcurrentAccessError(GroupClientError, RuntimeError):
    """A consumer is owned by one thread at a time (except ``wakeup()``)."""


class IllegalStateError(GroupClientError, RuntimeError):
    pass


class WakeupError(GroupClientError):
    """``wakeup()`` interrupted a blocking call."""


class KafkaTimeoutError(GroupClientError, TimeoutError):
    pass


class BrokerError(GroupClientError):
    """An error code a broker answered with."""

    def __init__(self, code: ErrorCode, message: str = "") -> None:
        self.code = code
        super().__init__(f"{code.name} ({int(code)})" + (f": {message}" if message else ""))


class RetriableError(BrokerError):
    pass


class FatalGroupError(BrokerError):
    pass


class CommitFailedError(GroupClientError):
    pass


class NodeNotReadyError(GroupClientError):
    """No connection to that node yet (retriable)."""


class DisconnectedError(GroupClientError):
    """The connection closed before the answer came (retriable)."""


class RequestTimedOutError(GroupClientError):
    """No answer within request_timeout_ms (retriable)."""
