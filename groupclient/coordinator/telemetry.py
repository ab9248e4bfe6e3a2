"""The embedded coordinator's OpenTelemetry metrics (docs/observability.md lists them).

- ``groupclient.coordinator.requests`` and ``groupclient.coordinator.request.duration``: every
  request a node answers, by API (``groupclient.kafka.api``: ``"JoinGroup"``, ``"Fetch"``...), with
  ``error.type`` when it was refused (:func:`refusal`), timed from the request decoded to its answer
  encoded (a JoinGroup held for a rebalance and a Fetch's long poll included);
- ``groupclient.coordinator.rebalances``: each new generation of a classic group and each new group
  epoch of a consumer-protocol group, with why (``groupclient.rebalance.reason``: a
  :class:`~.group_base.rebalance.RebalanceCause`, never a member id);
- ``groupclient.coordinator.groups`` and ``groupclient.coordinator.members``: observable gauges,
  groups by state and protocol, members per group.

Nothing is built without a provider that records (:func:`coordinator_telemetry` returns None and
the nodes check for None once per request).  The OpenTelemetry API is imported only by the
functions that need it, so the coordinator imports this module without it installed.

Threads:

- the cluster's event loop thread (every node of a cluster shares it) records requests and
  rebalances (the SDK's instruments are thread-safe) and, after a request that may have changed a
  group and after coordinator timers ran, replaces its node's view of the groups
  (:meth:`CoordinatorTelemetry.observe_groups`): tuples built on that thread, published by one
  assignment of a new dict, never changed afterwards.  It is the only thread that writes them, and
  the only one that reads the coordinator's groups (which are not locked).
- the metric reader's thread runs the gauge callbacks: it copies the set of live clusters (under
  the instruments' lock), then reads each cluster's published views, taking the reference once.
  It never touches a group.
- any thread: :func:`coordinator_telemetry` (the instruments of a meter are made once, under a
  module lock) and :meth:`CoordinatorTelemetry.close`.

A meter gets one set of instruments, shared by every cluster on it: the SDK hands the first
observable gauge of a name back to whoever creates it again, callbacks included, so each cluster
registering its own would leave the later ones unseen.  The callbacks sum what the live clusters
report (two clusters with a group of the same name report it once, summed).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ..error_codes import ErrorCode
from ..otel import semconv as names
from ..otel.providers import Instrumentation
from ..protocol.apis import ApiKey
from .classic_group.state import GroupState
from .group_base.rebalance import CLASSIC, CONSUMER, RebalanceCause

if TYPE_CHECKING:
    from opentelemetry.metrics import CallbackOptions, Meter, Observation

    from .group.coordinator import GroupCoordinator

# Kafka's names of the APIs ("JoinGroup", "ConsumerGroupHeartbeat"), as its protocol and logs spell them
API_NAMES: Mapping[ApiKey, str] = {key: "".join(word.capitalize() for word in key.name.split("_")) for key in ApiKey}

# The busiest APIs, which never change a group: after them a node's view of its groups is kept
# (timers that ran meanwhile still renew it)
GROUPS_UNTOUCHED = frozenset({ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA,
                              ApiKey.API_VERSIONS, ApiKey.FIND_COORDINATOR, ApiKey.OFFSET_FETCH})

# The states a group of each protocol can be seen in; each is reported, 0 when no group is in it,
# so that a state emptied shows 0 rather than vanishing
_STATES = {
    CLASSIC: tuple(s.value for s in GroupState if s is not GroupState.DEAD),
    CONSUMER: ("Empty", "Assigning", "Reconciling", "Stable"),  # ConsumerGroup.state's
}


class GroupView(NamedTuple):
    """One group as a node last saw it (built on the event loop, read by the metric reader)."""

    group_id: str
    protocol: str
    state: str
    members: int


def refusal(response: Any) -> int:
    """The error code a response refuses its request with (0: none).

    The answer's top-level error code when its version has one (JoinGroup, Heartbeat, Fetch from
    v7...).  An answer without one (Produce, Metadata, ListOffsets, OffsetCommit, DescribeGroups,
    CreateTopics, DeleteGroups...) refuses its request when every entry it lists (topic, partition,
    group) carries the same non-zero code — the request refused as a whole, as a check of the whole
    request or a fault rule answers it; entries with different codes are a partial answer, not a
    refusal.
    """
    version = response.version
    if _plan(type(response), version)[0]:
        return int(response.error_code or 0)
    codes: set[int] = set()
    _entry_codes(response, version, codes)
    return codes.pop() if len(codes) == 1 else 0


# (message class, version) -> (has an error code of its own, its lists of entries): read off
# kafka-python's schema once.  Filled from any cluster's loop thread; an entry is the same
# whoever computes it, so a race only computes it twice.
_PLANS: dict[tuple[type, int], tuple[bool, tuple[str, ...]]] = {}


def _plan(cls: type, version: int) -> tuple[bool, tuple[str, ...]]:
    plan = _PLANS.get((cls, version))
    if plan is None:
        fields: dict[str, Any] = getattr(cls, "fields", None) or {}
        code = fields.get("error_code")
        plan = _PLANS[(cls, version)] = (
            code is not None and bool(code.for_version_q(version)),
            tuple(name for name, field in fields.items() if field.is_struct_array() and field.for_version_q(version)),
        )
    return plan


def _entry_codes(message: Any, version: int, codes: set[int]) -> None:
    """Add the code of each entry of ``message``'s lists (an entry without one: its own entries')."""
    for name in _plan(type(message), version)[1]:
        for entry in getattr(message, name) or ():
            if _plan(type(entry), version)[0]:
                codes.add(int(entry.error_code or 0))
            else:
                _entry_codes(entry, version, codes)
            if len(codes) > 1:
                return  # a partial answer already


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)  # a code newer than error_codes.py


class CoordinatorTelemetry:
    """The metrics of one cluster's coordinator (see the module docstring for threads)."""

    def __init__(self, instruments: CoordinatorInstruments) -> None:
        self._instruments = instruments
        # loop thread only: the attribute dicts of each (API, error code), made once
        self._request_attributes: dict[tuple[ApiKey, int], dict[str, str]] = {}
        # node id -> its groups; replaced whole by the loop thread, read by the metric reader
        self._views: Mapping[int, tuple[GroupView, ...]] = {}
        instruments.watch(self)

    # -- the event loop thread -------------------------------------------------------------------
    @staticmethod
    def now() -> int:
        """A request's start, for :meth:`answered` (a measurement only: the coordinator's clock,
        in whole milliseconds and fake in the simulator, is too coarse for sub-millisecond answers)."""
        return time.perf_counter_ns()

    def answered(self, key: ApiKey, response: Any, started: int) -> None:
        """A node answered a request of ``key`` with ``response``; ``started`` from :meth:`now`."""
        seconds = (time.perf_counter_ns() - started) / 1e9
        code = refusal(response)
        attributes = self._request_attributes.get((key, code))
        if attributes is None:
            attributes = {names.KAFKA_API: API_NAMES[key]}
            if code:
                attributes[names.ERROR_TYPE] = _error_name(code)
            self._request_attributes[(key, code)] = attributes
        self._instruments.requests.add(1, attributes)
        self._instruments.duration.record(seconds, attributes)

    def rebalanced(self, group_id: str, protocol: str, cause: RebalanceCause | None) -> None:
        """A group got a new generation (classic) or group epoch (consumer protocol)."""
        attributes = {names.MESSAGING_CONSUMER_GROUP_NAME: group_id, names.GROUP_PROTOCOL: protocol}
        if cause is not None:
            attributes[names.REBALANCE_REASON] = cause.value
        self._instruments.rebalances.add(1, attributes)

    def observe_groups(self, node_id: int, coordinator: GroupCoordinator) -> None:
        """Take the node's view of its groups again (after they may have changed)."""
        rows = tuple(GroupView(g.group_id, CLASSIC, g.state.value, len(g.members))
                     for g in coordinator.groups.values())
        rows += tuple(GroupView(g.group_id, CONSUMER, g.state, len(g.members)) for g in coordinator.consumer.served())
        self._views = {**self._views, node_id: rows}  # published whole: the reader never sees a half

    # -- any thread ------------------------------------------------------------------------------
    def close(self) -> None:
        """The cluster stopped: its groups are no longer reported."""
        self._instruments.forget(self)
        self._views = {}

    # -- the metric reader's thread --------------------------------------------------------------
    def groups(self) -> Iterable[GroupView]:
        """Every group the cluster's nodes serve, as they last saw them."""
        for rows in self._views.values():
            yield from rows


class CoordinatorInstruments:
    """The coordinator's instruments on one meter, shared by every cluster on it (module docstring).

    ``_sources`` (the live clusters) is guarded by ``_lock``, held only to add, remove or copy.
    """

    def __init__(self, meter: Meter) -> None:
        self.requests = meter.create_counter(
            names.COORDINATOR_REQUESTS, unit="{request}",
            description="Requests the embedded coordinator answered, by API (error.type: the Kafka error "
                        "refusing it).")
        self.duration = meter.create_histogram(
            names.COORDINATOR_REQUEST_DURATION, unit="s",
            explicit_bucket_boundaries_advisory=list(names.DURATION_BUCKETS),
            description="From a request decoded to its answer (a held JoinGroup and a Fetch's wait included).")
        self.rebalances = meter.create_counter(
            names.COORDINATOR_REBALANCES, unit="{rebalance}",
            description="New generations (classic groups) and group epochs (consumer-protocol groups).")
        self._sources: weakref.WeakSet[CoordinatorTelemetry] = weakref.WeakSet()
        self._lock = threading.Lock()
        meter.create_observable_gauge(names.COORDINATOR_GROUPS, [self._observe_groups], unit="{group}",
                                      description="Groups the embedded coordinator serves, by state and protocol.")
        meter.create_observable_gauge(names.COORDINATOR_MEMBERS, [self._observe_members], unit="{member}",
                                      description="Members of each group the embedded coordinator serves.")

    def watch(self, source: CoordinatorTelemetry) -> None:
        """Report ``source``'s groups until :meth:`forget` (or until it is garbage collected)."""
        with self._lock:
            self._sources.add(source)

    def forget(self, source: CoordinatorTelemetry) -> None:
        """Stop reporting ``source``'s groups."""
        with self._lock:
            self._sources.discard(source)

    def _views(self) -> list[GroupView] | None:
        """Every live cluster's groups; None when no cluster is live."""
        with self._lock:
            sources = list(self._sources)
        if not sources:
            return None
        return [view for source in sources for view in source.groups()]

    def _observe_groups(self, options: CallbackOptions) -> Iterable[Observation]:
        from opentelemetry.metrics import Observation

        views = self._views()
        if views is None:
            return []
        counts: Counter[tuple[str, str]] = Counter(
            {(protocol, state): 0 for protocol, states in _STATES.items() for state in states})
        for view in views:
            counts[(view.protocol, view.state)] += 1
        return [Observation(n, {names.GROUP_PROTOCOL: protocol, names.GROUP_STATE: state})
                for (protocol, state), n in counts.items()]

    def _observe_members(self, options: CallbackOptions) -> Iterable[Observation]:
        from opentelemetry.metrics import Observation

        counts: Counter[tuple[str, str]] = Counter()
        for view in self._views() or ():
            counts[(view.group_id, view.protocol)] += view.members
        return [Observation(n, {names.MESSAGING_CONSUMER_GROUP_NAME: group_id, names.GROUP_PROTOCOL: protocol})
                for (group_id, protocol), n in counts.items()]


_BY_METER: weakref.WeakKeyDictionary[Meter, CoordinatorInstruments] = weakref.WeakKeyDictionary()
_BY_METER_LOCK = threading.Lock()


def check_meter_provider(meter_provider: Any) -> None:
    """Refuse what cannot be a ``MeterProvider`` (ValueError), or one without the API installed
    (ImportError), when the cluster is made rather than when it starts."""
    if meter_provider is not None and not callable(getattr(meter_provider, "get_meter", None)):
        raise ValueError("meter_provider must be an OpenTelemetry MeterProvider (with get_meter()) or None, "
                         f"not {type(meter_provider).__name__}")
    Instrumentation(meter_provider=meter_provider)


def coordinator_telemetry(meter_provider: Any = None) -> CoordinatorTelemetry | None:
    """The metrics of a new cluster, or None when no provider would record them (``meter_provider``:
    an SDK ``MeterProvider``; None: the global one, if the application set one)."""
    meter = Instrumentation(meter_provider=meter_provider).meter()
    if meter is None:
        return None
    with _BY_METER_LOCK:
        instruments = _BY_METER.get(meter)
        if instruments is None:
            instruments = _BY_METER[meter] = CoordinatorInstruments(meter)
    return CoordinatorTelemetry(instruments)
