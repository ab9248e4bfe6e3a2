"""Errors raised to users, grouped by what the caller can do about them.

- :class:`ConfigurationError`: fix the arguments; nothing was started.
- :class:`ConcurrentAccessError`, :class:`IllegalStateError`: a usage mistake in the caller's code.
- :class:`WakeupError`: another thread called ``wakeup()``; call ``poll()`` again or shut down.
- :class:`RetriableError`: transient (a broker's retriable code, or a network fault:
  :class:`NetworkError`); the consumer retries these itself and only raises one when the
  caller's timeout ran out.  Trying again later may work.
- :class:`RequestFailedError`: the broker refused one request (topic authorization, offset
  metadata too large...); :class:`UnexpectedBrokerError` when the code is one the request does
  not expect (or one newer than this client).  Raised once; the consumer goes on.
- :class:`FatalGroupError`: the group refused this member for good (bad configuration, fenced
  static member, authorization).  Close the consumer.
- :class:`CommitFailedError`: the commit cannot succeed because the group moved on; the records will
  be redelivered to whoever owns the partitions now.  :class:`RebalanceInProgressError` is the
  kind that says "commit again after the rebalance".
"""

from __future__ import annotations

from .protocol.errors import ErrorCode, error_name, known


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
    """An error code a broker answered with (``code`` is its number, ``name`` its protocol name)."""

    def __init__(self, code: int, message: str = "") -> None:
        self.code: int = known(code) or int(code)  # an ErrorCode when this client knows it
        self.name = error_name(code)
        super().__init__(f"{self.name} ({self.code})" + (f": {message}" if message else ""))


class RetriableError(BrokerError):
    pass


class FatalGroupError(BrokerError):
    pass


class RequestFailedError(BrokerError):
    """The broker refused this one request (topic authorization, offset metadata too large...);
    raised to the caller once, nothing about the member changed."""


class UnexpectedBrokerError(RequestFailedError):
    """A code the request's API does not expect (or one newer than this client)."""


class NetworkError(RetriableError):
    """The network failed a request (retriable)."""

    CODE = ErrorCode.NETWORK_EXCEPTION

    def __init__(self, message: str) -> None:
        super().__init__(self.CODE, message)


class NodeNotReadyError(NetworkError):
    """No connection to that node yet."""


class DisconnectedError(NetworkError):
    """The connection closed before the answer came."""


class RequestTimedOutError(NetworkError):
    """No answer within request_timeout_ms."""

    CODE = ErrorCode.REQUEST_TIMED_OUT


class ProtocolError(DisconnectedError):
    """The broker sent bytes this client cannot read; the connection was closed."""


class CommitFailedError(GroupClientError):
    pass


class RebalanceInProgressError(CommitFailedError):
    """The group is rebalancing: commit again once the member has rejoined."""
