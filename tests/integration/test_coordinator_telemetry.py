"""The embedded coordinator's OpenTelemetry metrics (groupclient/coordinator/telemetry.py), read
with the SDK's in-memory reader from real groups of GroupConsumers: classic and KIP-848.

Every provider here is passed to the cluster: a global one can be set only once per process.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import metrics as otel_metrics  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402

from groupclient import GroupConsumer  # noqa: E402
from groupclient.coordinator import EmbeddedCluster  # noqa: E402
from groupclient.coordinator import telemetry as coordinator_telemetry_module  # noqa: E402
from groupclient.coordinator.telemetry import coordinator_telemetry, refusal  # noqa: E402
from groupclient.otel import semconv as names  # noqa: E402
from groupclient.testing.pytest_plugin import start_cluster  # noqa: E402

pytestmark = pytest.mark.integration

Points = dict[str, list[tuple[dict[str, Any], Any]]]


@pytest.fixture
def sdk() -> Iterator[tuple[MeterProvider, InMemoryMetricReader]]:
    """A provider for one cluster and the reader that collects from it."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    yield provider, reader
    provider.shutdown()


def collect(reader: InMemoryMetricReader) -> Points:
    """Every data point, by metric name: (attributes, point)."""
    found: Points = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    found.setdefault(metric.name, []).append((dict(point.attributes or {}), point))
    return found


def requests_by_api(points: Points) -> dict[tuple[str, str | None], int]:
    return {(a[names.KAFKA_API], a.get(names.ERROR_TYPE)): p.value for a, p in points[names.COORDINATOR_REQUESTS]}


def groups_by_state(points: Points, protocol: str) -> dict[str, int]:
    return {a[names.GROUP_STATE]: p.value for a, p in points.get(names.COORDINATOR_GROUPS, [])
            if a[names.GROUP_PROTOCOL] == protocol}


def members_of(points: Points, group: str) -> dict[str, int]:
    return {a[names.GROUP_PROTOCOL]: p.value for a, p in points.get(names.COORDINATOR_MEMBERS, [])
            if a[names.MESSAGING_CONSUMER_GROUP_NAME] == group}


def rebalances_of(points: Points, group: str) -> dict[tuple[str, str | None], int]:
    return {(a[names.GROUP_PROTOCOL], a.get(names.REBALANCE_REASON)): p.value
            for a, p in points.get(names.COORDINATOR_REBALANCES, []) if a[names.MESSAGING_CONSUMER_GROUP_NAME] == group}


def poll_until(consumers: list[GroupConsumer], done: Callable[[], bool], timeout_s: float = 30) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if done():
            return True
        for consumer in consumers:
            consumer.poll(50)
    return done()


def consumer_for(cluster: EmbeddedCluster, group: str, **settings: Any) -> GroupConsumer:
    config: dict[str, Any] = dict(bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                                  auto_offset_reset="earliest", fetch_max_wait_ms=100)
    config.update(settings)
    return GroupConsumer(**config)


def test_a_classic_group_counts_requests_groups_members_and_generations(
        sdk: tuple[MeterProvider, InMemoryMetricReader]) -> None:
    provider, reader = sdk
    group = "tel-classic"
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0, meter_provider=provider) as cluster:
        cluster.create_topic("tel", 2)
        cluster.produce("tel", [b"x"] * 10)
        # no auto-commit: a commit answered REBALANCE_IN_PROGRESS would tell the first member of the
        # rebalance before a heartbeat does
        quick = dict(session_timeout_ms=6000, heartbeat_interval_ms=300, enable_auto_commit=False)
        first, second = consumer_for(cluster, group, **quick), consumer_for(cluster, group, **quick)
        try:
            first.subscribe(["tel"])
            assert poll_until([first], lambda: len(first.assignment()) == 2)
            second.subscribe(["tel"])
            assert poll_until([first, second], lambda: len(first.assignment()) == len(second.assignment()) == 1
                              and (cluster.describe_group(group) or {}).get("state") == "Stable")
            points = collect(reader)
            requests = requests_by_api(points)
            # each member's first JoinGroup is refused (KIP-394: the coordinator names it first)
            assert requests[("JoinGroup", "MEMBER_ID_REQUIRED")] == 2
            assert requests[("JoinGroup", None)] >= 3  # first alone, second, first again
            assert requests[("SyncGroup", None)] >= 3
            # the first member learns of the second one's join from a heartbeat
            assert requests[("Heartbeat", "REBALANCE_IN_PROGRESS")] >= 1
            for api in ("ApiVersions", "Metadata", "FindCoordinator", "Fetch", "OffsetFetch"):
                assert requests[(api, None)] >= 1, (api, requests)
            # the duration histogram has a point for every counted kind, with the conventions' buckets
            durations = {(a[names.KAFKA_API], a.get(names.ERROR_TYPE)): p
                         for a, p in points[names.COORDINATOR_REQUEST_DURATION]}
            assert set(durations) == set(requests)
            for kind in [("JoinGroup", None), ("SyncGroup", None), ("JoinGroup", "MEMBER_ID_REQUIRED")]:
                assert durations[kind].count == requests[kind] and durations[kind].sum >= 0
            assert tuple(durations[("JoinGroup", None)].explicit_bounds) == names.DURATION_BUCKETS
            assert groups_by_state(points, "classic") == {
                "Stable": 1, "Empty": 0, "PreparingRebalance": 0, "CompletingRebalance": 0}
            assert groups_by_state(points, "consumer") == {"Stable": 0, "Empty": 0, "Assigning": 0, "Reconciling": 0}
            assert members_of(points, group) == {"classic": 2}
            # every generation is one rebalance, each begun by a join
            generation = (cluster.describe_group(group) or {})["generation"]
            assert rebalances_of(points, group) == {("classic", "member_joined"): generation}

            second.close()
            assert poll_until([first], lambda: len(first.assignment()) == 2
                              and (cluster.describe_group(group) or {}).get("state") == "Stable")
            points = collect(reader)
            assert requests_by_api(points)[("LeaveGroup", None)] == 1
            assert members_of(points, group) == {"classic": 1}
            rebalances = rebalances_of(points, group)
            assert rebalances[("classic", "member_left")] == 1
            assert sum(rebalances.values()) == (cluster.describe_group(group) or {})["generation"]
        finally:
            first.close()
            second.close()
        assert cluster.wait_until(lambda: groups_by_state(collect(reader), "classic")["Empty"] == 1, timeout_s=10)
        assert members_of(collect(reader), group) == {"classic": 0}
    # a stopped cluster reports no groups at all
    assert names.COORDINATOR_GROUPS not in collect(reader)


def test_a_consumer_protocol_group_and_refused_requests(sdk: tuple[MeterProvider, InMemoryMetricReader]) -> None:
    provider, reader = sdk
    group = "tel-848"
    # the pytest plugin's cluster takes the provider as one of its settings
    cluster = start_cluster(topics={"tel848": 2}, meter_provider=provider)
    first, second = (consumer_for(cluster, group, group_protocol="consumer") for _ in range(2))
    try:
        first.subscribe(["tel848"])
        second.subscribe(["tel848"])
        assert poll_until([first, second], lambda: len(first.assignment()) == len(second.assignment()) == 1
                          and cluster.group_state(group) == "Stable")
        points = collect(reader)
        requests = requests_by_api(points)
        assert requests[("ConsumerGroupHeartbeat", None)] >= 4  # two joins, two acknowledgements at least
        assert not any(api in ("JoinGroup", "SyncGroup", "Heartbeat") for api, _ in requests)
        assert groups_by_state(points, "consumer")["Stable"] == 1
        assert sum(groups_by_state(points, "classic").values()) == 0
        assert members_of(points, group) == {"consumer": 2}
        epoch = cluster.group_epoch(group)
        assert rebalances_of(points, group) == {("consumer", "member_joined"): epoch - 1}  # a group starts at epoch 1

        # refused requests: a top-level error code, and one on every partition of a commit
        cluster.fail("ConsumerGroupHeartbeat", "COORDINATOR_LOAD_IN_PROGRESS")
        cluster.fail("OffsetCommit", "NOT_COORDINATOR")
        assert poll_until([first, second], lambda: cluster.fired("ConsumerGroupHeartbeat") == 1)
        first.commit()  # retried after the refusal, on the coordinator found again
        requests = requests_by_api(collect(reader))
        assert requests[("ConsumerGroupHeartbeat", "COORDINATOR_LOAD_IN_PROGRESS")] == 1
        assert requests[("OffsetCommit", "NOT_COORDINATOR")] == 1
        assert requests[("OffsetCommit", None)] >= 1

        second.close()  # leaves: epoch -1
        assert poll_until([first], lambda: len(first.assignment()) == 2 and cluster.group_state(group) == "Stable")
        points = collect(reader)
        assert members_of(points, group) == {"consumer": 1}
        rebalances = rebalances_of(points, group)
        assert rebalances[("consumer", "member_left")] == 1
        assert sum(rebalances.values()) == cluster.group_epoch(group) - 1  # a group starts at epoch 1
    finally:
        first.close()
        second.close()
        cluster.stop()


def _default_global_provider() -> bool:
    provider = otel_metrics.get_meter_provider()
    return isinstance(provider, otel_metrics.NoOpMeterProvider) or type(provider).__name__ == "_ProxyMeterProvider"


def test_without_a_provider_nothing_is_built() -> None:
    if not _default_global_provider():
        pytest.skip("this process has a global meter provider")
    meters_before = len(coordinator_telemetry_module._BY_METER)
    with EmbeddedCluster(nodes=2, group_initial_rebalance_delay_ms=0) as cluster:
        cluster.create_topic("quiet", 2)
        consumer = consumer_for(cluster, "quiet")
        try:
            consumer.subscribe(["quiet"])
            assert poll_until([consumer], lambda: len(consumer.assignment()) == 2)
        finally:
            consumer.close()
        core = cluster._core
        assert core is not None and core.telemetry is None
        assert all(node.telemetry is None for node in core.nodes.values())
    assert coordinator_telemetry(None) is None
    assert len(coordinator_telemetry_module._BY_METER) == meters_before


def test_without_the_api_installed_a_cluster_imports_nothing_of_opentelemetry() -> None:
    code = """
        import sys
        sys.modules["opentelemetry"] = None  # as if groupclient[otel] were not installed
        from groupclient.coordinator import EmbeddedCluster
        with EmbeddedCluster(nodes=1) as cluster:
            assert cluster._core.telemetry is None
        try:
            EmbeddedCluster(meter_provider=object())
        except ValueError as exc:
            print("refused:", exc)
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry") and sys.modules[m] is not None))
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "refused: meter_provider must be an OpenTelemetry MeterProvider (with get_meter()) or None, " \
                       "not object"
    assert lines[-1] == "[]"


def _coordinator(classic: dict[str, tuple[str, int]], consumer: dict[str, tuple[str, int]]) -> Any:
    """A stand-in for a node's GroupCoordinator: group id -> (state, members) per protocol."""
    def group(group_id: str, state: Any, members: int) -> Any:
        return SimpleNamespace(group_id=group_id, state=state, members=dict.fromkeys(range(members)))

    served = [group(g, s, n) for g, (s, n) in consumer.items()]
    return SimpleNamespace(
        groups={g: group(g, SimpleNamespace(value=s), n) for g, (s, n) in classic.items()},
        consumer=SimpleNamespace(served=lambda: served))


def test_clusters_sharing_a_provider_are_all_reported_until_they_stop(
        sdk: tuple[MeterProvider, InMemoryMetricReader]) -> None:
    provider, reader = sdk
    one, two = coordinator_telemetry(provider), coordinator_telemetry(provider)
    assert one is not None and two is not None
    one.observe_groups(0, _coordinator({"a": ("Stable", 2)}, {"b": ("Reconciling", 3)}))
    two.observe_groups(0, _coordinator({"a": ("Stable", 1)}, {}))
    two.observe_groups(1, _coordinator({"c": ("PreparingRebalance", 4)}, {}))
    points = collect(reader)
    assert groups_by_state(points, "classic") == {
        "Stable": 2, "PreparingRebalance": 1, "Empty": 0, "CompletingRebalance": 0}
    assert groups_by_state(points, "consumer")["Reconciling"] == 1
    assert members_of(points, "a") == {"classic": 3} and members_of(points, "c") == {"classic": 4}
    two.close()
    points = collect(reader)
    assert groups_by_state(points, "classic")["Stable"] == 1 and members_of(points, "c") == {}
    one.close()
    assert names.COORDINATOR_GROUPS not in collect(reader)


def test_a_refusal_is_a_top_level_code_or_one_code_on_every_entry() -> None:
    from kafka.protocol.consumer.group import HeartbeatResponse, OffsetCommitResponse

    topic = OffsetCommitResponse.OffsetCommitResponseTopic
    partition = topic.OffsetCommitResponsePartition

    def commit(*codes: int) -> Any:
        return OffsetCommitResponse(version=8, throttle_time_ms=0, topics=[topic(name="t", partitions=[
            partition(partition_index=i, error_code=code) for i, code in enumerate(codes)])])

    assert refusal(HeartbeatResponse(version=4, throttle_time_ms=0, error_code=27)) == 27
    assert refusal(HeartbeatResponse(version=4, throttle_time_ms=0, error_code=0)) == 0
    assert refusal(commit(16, 16)) == 16
    assert refusal(commit(16, 0)) == 0  # a partial answer
    assert refusal(commit()) == 0
