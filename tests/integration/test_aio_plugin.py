"""The pytest plugin's cluster fixtures from async tests: under pytest-asyncio and under anyio's
pytest plugin, a test that awaits AsyncGroupConsumer uses ``groupclient_cluster`` (with its
marker and fault helpers) and ``groupclient_cluster_session`` as a sync test does.  Run as a user's
suite: a pytest subprocess that loads every plugin from its entry point, no conftest."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.integration

ASYNC_TESTS = '''
import asyncio

import pytest

from groupclient.aio import AsyncGroupConsumer


async def consume_all(bootstrap, topic, group, count):
    async with AsyncGroupConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                                  enable_auto_commit=False, fetch_max_wait_ms=100) as consumer:
        got = []
        for _ in range(100):
            for records in (await consumer.getmany(timeout_ms=200)).values():
                got += records
            if len(got) >= count:
                break
        await consumer.commit()
        return got


@pytest.mark.asyncio
@pytest.mark.groupclient_cluster(topics={"orders": 3})
async def test_pytest_asyncio_with_the_per_test_cluster(groupclient_cluster):
    groupclient_cluster.produce("orders", [f"o{i}" for i in range(30)])
    groupclient_cluster.fail("JoinGroup", "COORDINATOR_NOT_AVAILABLE")  # retried inside
    got = await consume_all(groupclient_cluster.bootstrap_servers, "orders", "billing", 30)
    assert sorted(r.value for r in got) == sorted(f"o{i}".encode() for i in range(30))
    assert groupclient_cluster.caught_up("billing", "orders")
    assert groupclient_cluster.fired("JoinGroup") == 1
    assert groupclient_cluster.group_state("billing") == "Empty"


@pytest.mark.asyncio
async def test_pytest_asyncio_with_the_session_cluster(groupclient_cluster_session):
    groupclient_cluster_session.create_topic("asyncio-shared", 2)
    groupclient_cluster_session.produce("asyncio-shared", ["a", "b", "c", "d"])
    got = await consume_all(groupclient_cluster_session.bootstrap_servers, "asyncio-shared", "g1", 4)
    assert len(got) == 4 and groupclient_cluster_session.caught_up("g1", "asyncio-shared")


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.groupclient_cluster(topics={"payments": 2})
async def test_anyio_with_the_per_test_cluster(groupclient_cluster):
    groupclient_cluster.produce("payments", ["p1", "p2", "p3", "p4"])
    got = await consume_all(groupclient_cluster.bootstrap_servers, "payments", "ledger", 4)
    assert len(got) == 4
    assert groupclient_cluster.committed("ledger", "payments") == {0: 2, 1: 2}


@pytest.mark.anyio
async def test_anyio_with_the_session_cluster(groupclient_cluster_session):
    groupclient_cluster_session.create_topic("anyio-shared", 1)
    groupclient_cluster_session.produce("anyio-shared", ["x", "y"])
    got = await consume_all(groupclient_cluster_session.bootstrap_servers, "anyio-shared", "g2", 2)
    assert [r.value for r in got] == [b"x", b"y"]
'''


def test_the_cluster_fixtures_work_from_pytest_asyncio_and_anyio_tests(pytester: pytest.Pytester,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    pytester.makepyfile(test_async_app=ASYNC_TESTS)
    result = pytester.runpytest_subprocess("--strict-markers", "-p", "no:cacheprovider", "-W", "error::pytest.PytestUnraisableExceptionWarning", timeout=240)
    result.assert_outcomes(passed=4)
