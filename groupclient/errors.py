"""Errors raised to users, grouped by what the caller can do about them.

- :class:`ConfigurationError`: fix the arguments; nothing was started.
- :class:`RecordDeserializationError`: a deserializer failed on one record; skip it with ``seek()``.
- :class:`ConcurrentAccessError`, :class:`IllegalStateError`: a usage mistake in the caller's code.
- :class:`WakeupError`: another thread called ``wakeup()``; call ``poll()`` again or shut down.
- :class:`RetriableError`: transient (a broker's retriable code, or a network fault:
  :class:`NetworkError`); the consumer retries these itself and only raises one when the
  caller's timeout ran out.  Trying again later may work.
- :class:`RequestFailedError`: the broker refused one request (topic authorization, offset
  metadata too large...); :class:`UnexpectedBrokerError` when the code is one the request does
  not expect (or one newer than this client).  Raised once; the consumer goes on.
- :class:`FatalError`: the consumer cannot go on; it is raised from every later ``poll()``: close
  it.  :class:`FatalGroupError`: the group refused this member for good (bad configuration, fenced
  static member, authorization); :class:`InternalError`: groupclient's own code failed (a bug:
  report it with the traceback, which is the error's ``__cause__``).
- :class:`CommitFailedError`: the commit cannot succeed because the group moved on; the records will
  be redelivered to whoever owns the partitions now.  :class:`RebalanceInProgressError` is the
  kind that says "commit again after the rebalance".
- :class:`CallTimeoutError` (a ``KafkaTimeoutError``): a blocking call ran out of time; it says
  what each partition last got and how often it was tried.  Fix the cause it names, or wait longer.
- :class:`NoBrokersAvailableError`: no bootstrap server answered within ``bootstrap_timeout_ms``.
- :class:`AuthenticationError`: the broker refused this client's SASL credentials
  (:class:`SaslAuthenticationError`), or TLS failed (:class:`TlsError`: a certificate that does
  not verify, a host name that does not match).  Fix the security settings; raised from the
  call that needed the connection, never retried silently in a loop.

Every error is also an instance of the matching ``kafka.errors`` class, so a program written
for kafka-python catches them unchanged: ``ConfigurationError`` is a ``KafkaConfigurationError``,
``KafkaTimeoutError`` kafka-python's ``KafkaTimeoutError``, and a :class:`BrokerError` is the
``kafka.errors`` class of its error code (``kafka.errors.for_code``), e.g. a ``RetriableError``
with code 27 is a ``kafka.errors.RebalanceInProgressError``.  The messages are groupclient's.
"""

from __future__ import annotations

from typing import Any

import kafka.errors as kafka_errors

# ErrorCode is re-exported: the code numbers users compare ``BrokerError.code`` with
from .error_codes import ErrorCode as ErrorCode
from .error_codes import error_name, known


class GroupClientError(kafka_errors.KafkaError):
    """Base class of every error groupclient raises (and so a kafka-python ``KafkaError``)."""

    # kafka-python's KafkaError compares by class and args and so is unhashable, and prefixes
    # the class name to the message; groupclient errors keep plain exception behaviour
    __str__ = Exception.__str__
    __eq__ = object.__eq__
    __hash__ = object.__hash__


class ConfigurationError(GroupClientError, kafka_errors.KafkaConfigurationError, ValueError):
    """A setting or argument that cannot work; nothing was started.  Fix it (the message names it)."""


class ArgumentTypeError(ConfigurationError, TypeError):
    """An argument of the wrong type: a ConfigurationError that names it, and a TypeError,
    which kafka-python raises there."""


class ConcurrentAccessError(GroupClientError, kafka_errors.IllegalStateError, RuntimeError):
    """A consumer is owned by one thread at a time (except ``wakeup()``).  kafka-python has no
    such check; its nearest class is IllegalStateError."""


class IllegalStateError(GroupClientError, kafka_errors.IllegalStateError, RuntimeError):
    """A call the consumer's state does not allow (closed, not subscribed, assign after subscribe...)."""


class UnassignedPartitionError(IllegalStateError, ValueError):
    """seek() or position() of a partition the consumer does not own (kafka-python raises
    ValueError or IllegalStateError there: this is both)."""


class UnsupportedCodecError(GroupClientError, kafka_errors.UnsupportedCodecError):
    """A record batch uses a compression whose package is not installed."""


class RecordDeserializationError(GroupClientError, ValueError):
    """The key or value deserializer failed on one record (its exception is ``__cause__``):
    ``partition`` (a TopicPartition), ``offset`` and ``key_or_value`` say which.  The records
    before it were returned; the position stays at this record, so ``poll()`` raises this again
    until ``seek(error.partition, error.offset + 1)`` skips it (Java's
    RecordDeserializationException).  Also a ``ValueError``, which most deserializers raise."""

    def __init__(self, partition: Any, offset: int, key_or_value: str, cause: BaseException) -> None:
        super().__init__(
            f"the {key_or_value} deserializer failed on the record at offset {offset} of "
            f"{partition.topic}-{partition.partition}: {cause!r}; seek(TopicPartition({partition.topic!r}, "
            f"{partition.partition}), {offset + 1}) skips it")
        self.partition = partition
        self.offset = offset
        self.key_or_value = key_or_value
        self.__cause__ = cause
        # the records of the same batch before this one, handed out first (set by the decoder)
        self.records_before: list[Any] = []


class RebalanceListenerError(GroupClientError):
    """The rebalance listener raised (its exception is ``__cause__``); raised from ``poll()``
    after the rebalance step finished, as kafka-python and Java do."""


class WakeupError(GroupClientError, kafka_errors.KafkaError):
    """``wakeup()`` interrupted a blocking call."""


class KafkaTimeoutError(GroupClientError, kafka_errors.KafkaTimeoutError, TimeoutError):
    """The call's timeout ran out before the cluster answered; trying again later may work."""


class CallTimeoutError(KafkaTimeoutError):
    """A blocking call (``commit``, ``committed``, ``position``, the offset look-ups, ``topics``...)
    retried what can be retried until its timeout ran out: ``timeout_ms`` given, else
    ``default_api_timeout_ms``.  The message and the attributes say why each try failed:
    ``operation``, ``timeout_ms``, ``last_errors`` (what each partition, or the call as a
    whole under ``""``, last got: an error code's name or an exception's) and ``tries``.
    Often a cause that waiting will not cure (a partition that does not exist); to wait
    longer, pass ``timeout_ms`` (``float("inf")`` waits until the call finishes)."""

    def __init__(self, *, operation: str, timeout_ms: int | None, last_errors: dict[str, str],
                 tries: int) -> None:
        self.operation = operation
        self.timeout_ms = timeout_ms
        self.last_errors = dict(last_errors)
        self.tries = tries
        super().__init__(_call_timeout_message(operation, timeout_ms, self.last_errors, tries))

    def renamed(self, operation: str) -> CallTimeoutError:
        """The same timeout, said of the call that waited on this one (``position()`` for the
        committed-offset fetch it made)."""
        return CallTimeoutError(operation=operation, timeout_ms=self.timeout_ms, last_errors=self.last_errors,
                                tries=self.tries)

    def __reduce__(self) -> Any:  # keyword-only arguments: pickle by a function of them
        return _rebuild_call_timeout, (self.operation, self.timeout_ms, self.last_errors, self.tries)


def _rebuild_call_timeout(operation: str, timeout_ms: int | None, last_errors: dict[str, str],
                          tries: int) -> CallTimeoutError:
    return CallTimeoutError(operation=operation, timeout_ms=timeout_ms, last_errors=last_errors, tries=tries)


_SUBJECTS_SHOWN = 5


def _call_timeout_message(operation: str, timeout_ms: int | None, last_errors: dict[str, str], tries: int) -> str:
    """"commit of 1 offset did not finish in 60000 ms: n-99 UNKNOWN_TOPIC_OR_PARTITION (12 tries)":
    subjects grouped by their last error, a few named each, the rest counted."""
    by_error: dict[str, list[str]] = {}
    for subject, error in last_errors.items():
        by_error.setdefault(error, []).append(subject)
    causes = []
    for error, subjects in by_error.items():
        named = [s for s in subjects if s][:_SUBJECTS_SHOWN]
        more = len([s for s in subjects if s]) - len(named)
        who = ", ".join(named) + (f" and {more} more" if more else "")
        causes.append(f"{who} {error}" if who else error)
    within = "in time" if timeout_ms is None else f"in {timeout_ms} ms"
    why = "; ".join(causes) if causes else "no answer"
    return f"{operation} did not finish {within}: {why} ({tries} {'try' if tries == 1 else 'tries'})"


class NoBrokersAvailableError(KafkaTimeoutError):
    """No bootstrap server could be reached within bootstrap_timeout_ms.  kafka-python 3.0
    raises its KafkaTimeoutError ("Unable to bootstrap") at the same point."""


# (groupclient class, error code) -> the class that is both; made once, on first use
_COMBINED: dict[tuple[type[BrokerError], int], type[BrokerError]] = {}


def _combined_class(cls: type[BrokerError], code: int) -> type[BrokerError]:
    key = (cls, code)
    found = _COMBINED.get(key)
    if found is None:
        kafka_cls: type[Exception] = kafka_errors.for_code(code)
        # named like the groupclient class, so tracebacks and logs read as before
        found = type(cls.__name__, (cls, kafka_cls), {"__module__": cls.__module__,
                                                      "__qualname__": cls.__qualname__,
                                                      "_plain_class": cls})
        _COMBINED[key] = found
    return found


class BrokerError(GroupClientError):
    """An error code a broker answered with (``code`` is its number, ``name`` its protocol name).

    An instance's class is also the ``kafka.errors`` class of its code."""

    _plain_class: Any = None  # set on the combined classes

    def __new__(cls, code: int, message: str = "", *args: Any) -> BrokerError:
        # ``cls._plain_class or cls``: unpickling and copying call this with the combined class
        error: BrokerError = super().__new__(_combined_class(cls._plain_class or cls, int(code)))
        return error

    def __init__(self, code: int, message: str = "") -> None:
        self.code: int = known(code) or int(code)  # an ErrorCode when this client knows it
        self.errno = int(code)  # kafka-python's name for it
        self.name = error_name(code)
        self.detail = message
        super().__init__(f"{self.name} ({self.code})" + (f": {message}" if message else ""))

    def __reduce__(self) -> tuple[Any, ...]:
        return (self._plain_class or type(self), (int(self.code), self.detail))


class RetriableError(BrokerError, kafka_errors.RetriableError):
    """A transient code or network fault; the consumer retries these itself, and raises one only
    when the caller's timeout ran out."""


class FatalError(GroupClientError):
    """The consumer cannot go on: raised from the call that found it and from every later
    ``poll()``.  Close the consumer."""


class FatalGroupError(BrokerError, FatalError):
    """The group refused this member for good (its ``code`` says why)."""


class InternalError(FatalError):
    """groupclient's own code failed while handling an answer: a bug, never retried.  The
    original exception, with its traceback, is ``__cause__`` (and in the log); please report it."""


class RequestFailedError(BrokerError):
    """The broker refused this one request (topic authorization, offset metadata too large...);
    raised to the caller once, nothing about the member changed."""


class UnexpectedBrokerError(RequestFailedError):
    """A code the request's API does not expect (or one newer than this client)."""


class AcknowledgementFailedError(RequestFailedError):
    """A share group's broker did not take acknowledgements of these records (``code`` says why):
    what was not acknowledged goes back to the group when its acquisition lock runs out, and is
    delivered again (to any member) with a higher delivery count."""


class InvalidRecordStateError(AcknowledgementFailedError):
    """INVALID_RECORD_STATE: the records are no longer acquired by this consumer (their lock ran
    out, or its share session ended); the broker may have delivered them to another member."""


class NetworkError(RetriableError):
    """The network failed a request (retriable)."""

    CODE = ErrorCode.NETWORK_EXCEPTION

    def __new__(cls, message: str, *args: Any) -> NetworkError:
        plain = cls._plain_class or cls
        return BrokerError.__new__(plain, plain.CODE, message)

    def __init__(self, message: str) -> None:
        super().__init__(self.CODE, message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (self._plain_class or type(self), (self.detail,))


class NodeNotReadyError(NetworkError, kafka_errors.NodeNotReadyError):
    """No connection to that node yet."""


class DisconnectedError(NetworkError, kafka_errors.KafkaConnectionError):
    """The connection closed before the answer came."""


class RequestTimedOutError(NetworkError):
    """No answer within request_timeout_ms."""

    CODE = ErrorCode.REQUEST_TIMED_OUT


class ProtocolError(DisconnectedError):
    """The broker sent bytes this client cannot read; the connection was closed."""


class CommitFailedError(GroupClientError, kafka_errors.CommitFailedError):
    """The commit cannot succeed: the group moved on, and the records will be consumed again by
    whoever owns the partitions now.  ``partitions`` says, for each partition of the commit the
    broker answered, why it was not committed (empty when the commit was not sent)."""

    def __init__(self, message: str = "", partitions: dict[Any, str] | None = None) -> None:
        super().__init__(message)
        self.partitions: dict[Any, str] = dict(partitions or {})  # TopicPartition -> why


class RebalanceInProgressError(CommitFailedError, kafka_errors.RebalanceInProgressError):
    """The group is rebalancing: commit again once the member has rejoined."""


class AuthenticationError(GroupClientError):
    """A connection could not be authenticated: fix the security settings.  ``node`` is the
    broker's node id.  Raised from ``poll()`` (and the other calls that wait on the network) once
    per failed attempt; the client tries that broker again only after its reconnect backoff."""

    def __init__(self, message: str, node: int | None = None) -> None:
        super().__init__(message)
        self.node = node


class SaslAuthenticationError(AuthenticationError, kafka_errors.SaslAuthenticationFailedError):
    """The broker refused the SASL exchange (``code``: SASL_AUTHENTICATION_FAILED,
    UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE); the message is the broker's."""

    def __init__(self, message: str, node: int | None = None,
                 code: int = ErrorCode.SASL_AUTHENTICATION_FAILED) -> None:
        super().__init__(message, node)
        self.code = known(code) or int(code)
        self.errno = int(code)


class TlsError(AuthenticationError):
    """The TLS handshake failed: the broker's certificate does not verify against ssl_cafile or
    does not name the host (ssl_check_hostname), or the broker refused this client's certificate."""

