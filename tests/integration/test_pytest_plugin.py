"""The pytest plugin (groupclient/testing/pytest_plugin.py): auto-loaded, markers honoured, clusters stopped."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from kafka import KafkaProducer
from kafka.errors import NotCoordinatorError
from kafka.protocol.admin.groups import ListGroupsRequest
from kafka.protocol.consumer.group import HeartbeatRequest

from groupclient.protocol.apis import ApiKey
from groupclient.error_codes import ErrorCode
from groupclient.testing import GroupclientCluster
from groupclient.testing.cluster import api_key, error_code
from tests.integration.wire import WireClient

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pytest_plugin" / "test_consumer_app.py"


@pytest.fixture
def pytester_autoload(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester whose runs load plugins from entry points, as a user's pytest does (no conftest)."""
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    return pytester


def test_example_suite_passes_with_the_plugin_loaded_from_its_entry_point(pytester_autoload: pytest.Pytester) -> None:
    """Runs examples/pytest_plugin/test_consumer_app.py, of which "docs/pytest-plugin.md: import
    time" is an excerpt."""
    pytester_autoload.makepyfile(test_consumer_app=EXAMPLE.read_text())
    result = pytester_autoload.runpytest_subprocess("--strict-markers", "-p", "no:cacheprovider", timeout=240)
    result.assert_outcomes(passed=6)
    assert not list(pytester_autoload.path.glob("conftest.py"))


MARKER_TESTS = '''
import socket
from pathlib import Path

import pytest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest

pytestmark = pytest.mark.groupclient_cluster(topics={"orders": 6}, offsets_topic_partitions=5)


def record(cluster):
    with Path("addresses.txt").open("a") as out:
        out.write(cluster.bootstrap_servers + "\\n")


def api_versions_answered(address):
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        request = ApiVersionsRequest(version=3, client_software_name="t", client_software_version="1")
        request.with_header(correlation_id=1, client_id="t")
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        return sock.recv(4) != b""


def test_defaults_and_module_marker(groupclient_cluster):
    record(groupclient_cluster)
    assert len(groupclient_cluster.bootstrap_servers.split(",")) == 1
    assert groupclient_cluster.end_offsets("orders") == {p: 0 for p in range(6)}
    assert groupclient_cluster.config.group_initial_rebalance_delay_ms == 0
    assert groupclient_cluster.config.offsets_topic_partitions == 5


@pytest.mark.groupclient_cluster(nodes=3, topics={"audit": 2}, initial_rebalance_delay_ms=250)
def test_the_closest_marker_wins_per_option(groupclient_cluster):
    record(groupclient_cluster)
    hosts = [a.rsplit(":", 1)[0] for a in groupclient_cluster.bootstrap_servers.split(",")]
    assert hosts == ["127.0.0.1"] * 3
    assert groupclient_cluster.end_offsets("audit") == {0: 0, 1: 0}
    assert groupclient_cluster.config.group_initial_rebalance_delay_ms == 250
    assert groupclient_cluster.config.offsets_topic_partitions == 5  # from the module marker
    with pytest.raises(KeyError):
        groupclient_cluster.end_offsets("orders")  # topics is replaced, not merged
    assert all(api_versions_answered(groupclient_cluster.address_of(n)) for n in range(3))


@pytest.mark.groupclient_cluster(topics=["a", "b"], group_min_session_timeout_ms=1000)
def test_topic_names_and_coordinator_settings(groupclient_cluster):
    record(groupclient_cluster)
    assert groupclient_cluster.end_offsets("a") == {0: 0}
    assert groupclient_cluster.end_offsets("b") == {0: 0}
    assert groupclient_cluster.config.group_min_session_timeout_ms == 1000


@pytest.mark.groupclient_cluster(3)
def test_positional_marker_arguments_are_refused(groupclient_cluster):
    pass


@pytest.mark.groupclient_cluster(no_such_setting=1)
def test_unknown_settings_are_refused(groupclient_cluster):
    pass


def test_session_cluster_first(groupclient_cluster_session):
    record(groupclient_cluster_session)
    groupclient_cluster_session.create_topic("shared", 1)
    groupclient_cluster_session.produce("shared", [b"kept"])
    groupclient_cluster_session.drop("ApiVersions", count=5)  # never fired in this test


def test_session_cluster_second(groupclient_cluster_session):
    assert groupclient_cluster_session.end_offsets("shared") == {0: 1}  # shared state
    assert api_versions_answered(groupclient_cluster_session.bootstrap_servers)  # faults were cleared
    assert groupclient_cluster_session.fired() == 0
'''


def test_marker_options_are_honoured_and_clusters_stop_at_teardown(pytester_autoload: pytest.Pytester) -> None:
    pytester_autoload.makepyfile(test_markers=MARKER_TESTS)
    result = pytester_autoload.runpytest_subprocess("--strict-markers", "-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=5, errors=2)
    result.stdout.fnmatch_lines([
        "*ERROR at setup of test_positional_marker_arguments_are_refused*",
        "E * TypeError: @pytest.mark.groupclient_cluster takes keyword arguments only, got (3,)",
        "*ERROR at setup of test_unknown_settings_are_refused*",
        "E * TypeError: *unexpected keyword argument 'no_such_setting'",
    ])
    addresses = (pytester_autoload.path / "addresses.txt").read_text().split()
    ports = [int(a.rsplit(":", 1)[1]) for entry in addresses for a in entry.split(",")]
    assert len(ports) == 1 + 3 + 1 + 1
    for port in ports:  # every cluster, the session's too, was stopped: nothing listens any more
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_the_marker_is_registered(pytester_autoload: pytest.Pytester) -> None:
    result = pytester_autoload.runpytest_subprocess("--markers", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["@pytest.mark.groupclient_cluster(nodes=1, topics=None, *"])


# -- the helpers, through the fixture of the main suite (the plugin is loaded here too) --------
def test_api_and_error_names() -> None:
    assert api_key("JoinGroup") is ApiKey.JOIN_GROUP
    assert api_key("join_group") is ApiKey.JOIN_GROUP
    assert api_key("HEARTBEAT") is ApiKey.HEARTBEAT
    assert api_key("Fetch") is api_key(1) is api_key(ApiKey.FETCH) is ApiKey.FETCH
    with pytest.raises(ValueError, match="unknown API"):
        api_key("Fetchh")
    with pytest.raises(ValueError, match="not served"):
        api_key(4)  # LeaderAndIsr: a rule for it could never fire
    assert error_code("not_coordinator") is ErrorCode.NOT_COORDINATOR
    assert error_code(NotCoordinatorError) is ErrorCode.NOT_COORDINATOR
    assert error_code(16) is error_code(ErrorCode.NOT_COORDINATOR) is ErrorCode.NOT_COORDINATOR
    with pytest.raises(ValueError):
        error_code("NOT_A_CODE")


def test_fault_hooks_by_name(groupclient_cluster: GroupclientCluster) -> None:
    client = WireClient(groupclient_cluster.bootstrap_servers)
    try:
        groupclient_cluster.fail("Heartbeat", "NOT_COORDINATOR", count=2)
        hb = HeartbeatRequest(version=4, group_id="g", generation_id=1, member_id="m", group_instance_id=None)
        assert [client.request(hb).error_code for _ in range(3)] == [
            ErrorCode.NOT_COORDINATOR, ErrorCode.NOT_COORDINATOR, ErrorCode.UNKNOWN_MEMBER_ID]

        groupclient_cluster.delay("ListGroups", ms=300)
        started = time.monotonic()
        assert client.request(ListGroupsRequest(version=4, states_filter=[])).error_code == 0
        assert time.monotonic() - started >= 0.3

        groupclient_cluster.drop("ListGroups")
        with pytest.raises(ConnectionError):
            client.request(ListGroupsRequest(version=4, states_filter=[]))
    finally:
        client.close()
    assert groupclient_cluster.fired("Heartbeat") == 2
    assert groupclient_cluster.fired("list_groups") == 2
    assert groupclient_cluster.fired() == 4
    assert [kind for _, _, kind in groupclient_cluster.faults_fired()] == ["error", "error", "delay", "drop"]


@pytest.mark.groupclient_cluster(topics={"keyed": 5})
def test_keyed_records_land_where_kafka_clients_put_them(groupclient_cluster: GroupclientCluster) -> None:
    keys = [f"customer-{i}" for i in range(12)]
    producer = KafkaProducer(bootstrap_servers=groupclient_cluster.bootstrap_servers)
    try:
        by_client = [producer.send("keyed", key=k.encode(), value=b"v").get(timeout=10).partition for k in keys]
    finally:
        producer.close(timeout=5)
    placed = groupclient_cluster.produce("keyed", [(k, "v") for k in keys])
    assert [p for p, _ in placed] == by_client
    assert [p for p, _ in groupclient_cluster.produce("keyed", ["a", "b"], key="customer-3")] == [by_client[3]] * 2
    end = groupclient_cluster.end_offsets("keyed")[4]
    assert groupclient_cluster.produce("keyed", "one value", partition=4) == [(4, end)]
    assert [p for p, _ in groupclient_cluster.produce("keyed", [b"x"] * 5)] == [0, 1, 2, 3, 4]  # round-robin


@pytest.mark.groupclient_cluster(topics={"t": 2})
def test_offsets_helpers(groupclient_cluster: GroupclientCluster) -> None:
    assert groupclient_cluster.caught_up("nobody", "t")  # nothing to consume
    assert groupclient_cluster.group_state("nobody") is None
    groupclient_cluster.produce("t", [b"a", b"b", b"c"])
    assert not groupclient_cluster.caught_up("nobody", "t")
    assert groupclient_cluster.committed("nobody", "t") == {}


@pytest.mark.groupclient_cluster(topics={"orders": 4})
def test_a_consumer_protocol_group_with_fault_hooks_on_its_heartbeats(groupclient_cluster: GroupclientCluster) -> None:
    """KIP-848 members on the fixture's cluster (a 500 ms heartbeat interval by default): faults on
    ConsumerGroupHeartbeat by name — a coordinator error, a delay, a dropped connection — and the
    group still shares every partition and consumes every record."""
    from groupclient import GroupConsumer

    cluster = groupclient_cluster
    members = [GroupConsumer("orders", bootstrap_servers=cluster.bootstrap_servers, group_id="billing",
                             group_protocol="consumer", auto_offset_reset="earliest") for _ in range(2)]
    seen: set[tuple[int, int]] = set()

    def poll_all() -> None:
        for member in members:
            seen.update((r.partition, r.offset) for rs in member.poll(50).values() for r in rs)

    def shared() -> bool:
        poll_all()
        owned = [tp.partition for m in members for tp in m.assignment()]
        return sorted(owned) == [0, 1, 2, 3] and all(m.assignment() for m in members)

    try:
        assert cluster.wait_until(shared, timeout_s=30, interval_s=0)
        # a group starts at epoch 1; each join moves it on
        assert cluster.group_state("billing") == "Stable" and cluster.group_epoch("billing") == 3
        assert all(m._group.member.interval_ms == 500 for m in members)  # type: ignore[union-attr]  # the plugin's
        cluster.fail("ConsumerGroupHeartbeat", "NOT_COORDINATOR", count=2)
        cluster.delay("consumer_group_heartbeat", ms=300)
        cluster.drop("CONSUMER_GROUP_HEARTBEAT")
        expected = set(cluster.produce("orders", [f"o{i}" for i in range(40)]))
        assert cluster.wait_until(lambda: shared() and expected <= seen and cluster.fired() == 4,
                                  timeout_s=30, interval_s=0), (cluster.faults_fired(), len(seen))
        assert cluster.fired("ConsumerGroupHeartbeat") == 4
    finally:
        for member in members:
            member.close()
