"""A small synchronous admin connection over the consumer's :class:`NetworkClient`.

Each call takes a :class:`~groupclient.clock.Timer` and returns or raises before it expires:
there is no background thread, and nothing waits outside ``NetworkClient.poll``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, TypeVar

import kafka.errors as kafka_errors

from ..clock import Clock, SystemClock, Timer
from ..errors import GroupClientError, NetworkError
from ..network.client import NetworkClient, NetworkConfig, parse_bootstrap
from ..network.security import PLAINTEXT, Security
from ..error_codes import error_name
from ..protocol.apis import ApiKey

T = TypeVar("T")

RETRY_BACKOFF_MS = 100


class AdminError(GroupClientError):
    """A command failed; ``exit_code`` is what the command line exits with."""

    exit_code = 1


class UnreachableError(AdminError):
    """No bootstrap server answered in time."""

    exit_code = 2


class AdminTimeoutError(AdminError):
    """The brokers were reached, but an answer did not come in time."""

    exit_code = 2


class GroupNotFoundError(AdminError):
    def __init__(self, group_id: str) -> None:
        super().__init__(f"group {group_id} not found")
        self.group_id = group_id


class BrokerAnswerError(AdminError):
    """A broker answered with an error code."""

    def __init__(self, code: int, what: str, message: str | None = None) -> None:
        detail = f": {message}" if message else ""
        super().__init__(f"{what}: {error_name(code)} ({code}){detail}")
        self.code = code

    @property
    def retriable(self) -> bool:
        return bool(getattr(kafka_errors.for_code(self.code), "retriable", False))


def check(code: int, what: str, message: str | None = None) -> None:
    """Raise a :class:`BrokerAnswerError` unless ``code`` is 0."""
    if code:
        raise BrokerAnswerError(code, what, message)


def _is_retriable(exc: BaseException) -> bool:
    if isinstance(exc, BrokerAnswerError):
        return exc.retriable
    return isinstance(exc, NetworkError)


class AdminConnection:
    """Requests to any broker of one cluster, each waited for within a timer."""

    def __init__(self, bootstrap_servers: str | list[str], timeout_ms: int = 10000,
                 client_id: str = "groupclient-admin", clock: Clock | None = None,
                 security: Security = PLAINTEXT) -> None:
        """``security``: TLS and SASL, as a consumer's configuration gives them
        (``security_from_config``)."""
        self.bootstrap_servers = bootstrap_servers
        self.timeout_ms = timeout_ms
        self.clock = clock or SystemClock()
        config = NetworkConfig(bootstrap_servers=parse_bootstrap(bootstrap_servers), client_id=client_id,
                               request_timeout_ms=timeout_ms, reconnect_backoff_ms=50,
                               reconnect_backoff_max_ms=1000, allow_auto_create_topics=False, security=security)
        self.client = NetworkClient(config, self.clock, random.Random())
        self._reached = False  # some broker has answered on this connection
        self._added: dict[int, tuple[str, int]] = {}  # nodes named outside metadata (coordinators)

    def __enter__(self) -> AdminConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.client.close()

    def timer(self, timeout_ms: int | None = None) -> Timer:
        return Timer(self.clock, self.timeout_ms if timeout_ms is None else timeout_ms)

    # -- metadata ------------------------------------------------------------------------
    def refresh_metadata(self, timer: Timer, topics: set[str] | None = None) -> None:
        """A fresh Metadata answer (brokers, and the leaders of ``topics``), or raise in time."""
        if topics is not None:
            self.client.set_topics(topics)
        self.client.metadata.request_update()
        while True:
            future = self.client.maybe_update_metadata()
            if future is None:
                # no broker connected yet: maybe_update_metadata() started connecting to one
                self.client.poll(min(50, timer.remaining_ms()))
            else:
                self.client.poll_until(future, timer, wakeup=False)
                if future.succeeded() and self.client.metadata.brokers:
                    self._reached = True
                    return
                if future.failed():
                    self.pause(RETRY_BACKOFF_MS, timer)
            if timer.expired():
                raise self._timed_out("Metadata", timer=timer)

    def brokers(self, timer: Timer) -> dict[int, tuple[str, int]]:
        self.refresh_metadata(timer)
        return dict(self.client.metadata.brokers)

    def leader_for(self, topic: str, partition: int) -> int | None:
        return self.client.metadata.leader_for(topic, partition)

    def add_node(self, node_id: int, host: str, port: int) -> None:
        self._added[node_id] = (host, port)
        self.client.add_node(node_id, host, port)

    def _where(self, node_id: int) -> str:
        address = self.client.metadata.brokers.get(node_id) or self._added.get(node_id)
        return f"node {node_id}" + (f" at {address[0]}:{address[1]}" if address else "")

    def pause(self, ms: int, timer: Timer | None = None) -> None:
        """Wait ``ms`` (at most until ``timer`` expires), doing network I/O meanwhile."""
        wait = Timer(self.clock, ms if timer is None else min(ms, timer.remaining_ms()))
        while not wait.expired():
            self.client.poll(wait.remaining_ms())

    # -- requests ------------------------------------------------------------------------
    def version_for(self, node_id: int, api_key: int) -> int | None:
        return self.client.version_for(node_id, api_key)

    def supports(self, node_id: int, api_key: int, timer: Timer) -> bool:
        """Whether the node serves the API at a version this client speaks (once connected:
        the versions are those of its ApiVersions answer)."""
        self._connect(node_id, ApiKey(api_key).name, timer)
        return self.client.version_for(node_id, api_key) is not None

    def _connect(self, node_id: int, what: str, timer: Timer) -> None:
        while not self.client.ready(node_id):
            if timer.expired():
                raise self._timed_out(f"{what} (cannot connect to {self._where(node_id)})", timer=timer)
            self.client.poll(min(50, timer.remaining_ms()))

    def request(self, node_id: int, request_cls: Any, response_cls: Any, build: Callable[[int], Any],
                timer: Timer) -> Any:
        """Send ``build(version)`` to a node once it is connected; its answer, or raise."""
        name = request_cls.__name__.removesuffix("Request")
        self._connect(node_id, name, timer)
        future = self.client.send(node_id, request_cls, response_cls, build, timeout_ms=max(timer.remaining_ms(), 1))
        self.client.poll_until(future, timer, wakeup=False)
        if not future.is_done():
            raise self._timed_out(name, timer=timer)
        if future.failed():
            exc = future.exception
            assert exc is not None
            if isinstance(exc, NetworkError):
                raise exc
            if isinstance(exc, GroupClientError):
                raise AdminError(f"{name} to {self._where(node_id)}: {exc}") from None
            raise exc
        self._reached = True
        return future.value

    def retrying(self, what: str, timer: Timer, attempt: Callable[[], T]) -> T:
        """``attempt()`` again after retriable errors (a moved coordinator, a broken
        connection...) until the timer expires; then the last error, as a timeout."""
        tries = 0
        while True:
            tries += 1
            try:
                return attempt()
            except (AdminError, NetworkError) as exc:
                if not _is_retriable(exc):
                    raise
                last: BaseException = exc
            if timer.expired():
                raise self._timed_out(what, last, timer, tries)
            self.client.metadata.request_update()
            self.pause(RETRY_BACKOFF_MS, timer)

    def _timed_out(self, what: str, last: BaseException | None = None, timer: Timer | None = None,
                   tries: int = 1) -> AdminError:
        """The error of a wait that ran out: the budget it had (the timer's, which a watch's
        round shortens), the last error and the tries."""
        budget = timer.timeout_ms if timer is not None and timer.timeout_ms is not None else self.timeout_ms
        if not self._reached:
            return UnreachableError(f"no bootstrap server answered within {budget} ms: "
                                    f"{'; '.join(self.client.bootstrap_errors())}")
        cause = f" (last error: {last}; {tries} {'try' if tries == 1 else 'tries'})" if last is not None else ""
        return AdminTimeoutError(f"{what}: no answer within {budget} ms{cause}")
