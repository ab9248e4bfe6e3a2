"""The session timeout of a consumer-protocol group, asked of the cluster (DescribeConfigs of the
GROUP resource, ``consumer.session.timeout.ms``: the group's own or the broker's default).

Under the consumer group protocol the broker sets the session timeout and does not tell the
member; knowing it is what lets a member that cannot reach its coordinator let its partitions go
before the broker gives them to others (the lease of :class:`ConsumerGroupMember`).  Asked after
the member joins and again every ``refresh_ms`` (a group's setting may change).  A cluster that
refuses (no DESCRIBE_CONFIGS right on the group, a broker before Kafka 4.0) leaves it unknown: it
is logged once, and the member then keeps its partitions until the broker says it was fenced, as
the Java client does.

Threads: :meth:`maybe_ask` runs on the application thread; the answer is read by either thread and
only replaces ``timeout_ms`` (one reference, read without a lock by the member's lease check).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kafka.protocol.admin.configs import DescribeConfigsRequest, DescribeConfigsResponse

from ..error_codes import error_name
from ..network.future import RequestFuture

log = logging.getLogger("groupclient.member")

GROUP_RESOURCE = 32  # ConfigResource.Type.GROUP (KIP-848)
SESSION_TIMEOUT = "consumer.session.timeout.ms"

Send = Callable[[Any, Any, Callable[[int], Any]], RequestFuture[Any]]


class GroupSessionTimeout:
    def __init__(self, group_id: str, send: Send, refresh_ms: int) -> None:
        self.group_id = group_id
        self._send = send
        self.refresh_ms = refresh_ms
        self.timeout_ms: int | None = None
        self._next_ask_at = 0
        self._asking: RequestFuture[Any] | None = None
        self._told_unknown = False

    def maybe_ask(self, now: int) -> None:
        """Ask if it is time to (application thread)."""
        if now < self._next_ask_at or (self._asking is not None and not self._asking.is_done()):
            return
        self._next_ask_at = now + self.refresh_ms
        R = DescribeConfigsRequest

        def build(version: int) -> Any:
            return R(version=version, include_synonyms=False, include_documentation=False, resources=[
                R.DescribeConfigsResource(resource_type=GROUP_RESOURCE, resource_name=self.group_id,
                                          configuration_keys=[SESSION_TIMEOUT])])

        future = self._send(DescribeConfigsRequest, DescribeConfigsResponse, build)
        future.add_callback(self._answered)
        future.add_errback(lambda exc: self._unknown(repr(exc)))
        self._asking = future

    def _answered(self, response: Any) -> None:
        """Either thread: keep the value, or say once why it is unknown."""
        for result in response.results or ():
            if result.error_code:
                detail = f": {result.error_message}" if result.error_message else ""
                return self._unknown(f"{error_name(result.error_code)}{detail}")
            for config in result.configs or ():
                if config.name == SESSION_TIMEOUT and config.value is not None and config.value.isdigit():
                    self.timeout_ms = int(config.value)
                    return None
        return self._unknown(f"the answer has no {SESSION_TIMEOUT}")

    def _unknown(self, why: str) -> None:
        if not self._told_unknown:
            self._told_unknown = True
            log.info("group %s: the session timeout (%s) could not be asked (%s); without it the member keeps "
                     "its partitions while the coordinator is unreachable until the broker says it was fenced",
                     self.group_id, SESSION_TIMEOUT, why)
