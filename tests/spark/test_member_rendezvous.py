"""Members that hold their partitions until the group has all of them (no Spark: member threads
on the embedded coordinator, classic and KIP-848 protocols)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from groupclient.coordinator import EmbeddedCluster
from groupclient.spark.member_loop import HandOver, MemberOptions, MemberReport, Polled, TaskInfo, run_member
from groupclient.spark.stop import StopWhen
from tests.spark.helpers import config, ends, new_topic, produce

pytestmark = pytest.mark.integration

PROTOCOLS = {"classic": {}, "consumer": {"group_protocol": "consumer"}}


def consumer_config(bootstrap: str, group: str, protocol: str) -> dict[str, Any]:
    cfg = config(bootstrap, group, max_poll_records=50, **PROTOCOLS[protocol])
    if protocol == "consumer":
        del cfg["session_timeout_ms"], cfg["heartbeat_interval_ms"]  # the broker's to set
    return cfg


def run_members(bootstrap: str, topic: str, cfg: dict[str, Any], placed: set[tuple[int, int]], count: int,
                hold: bool, start_gap_s: float) -> list[MemberReport]:
    reports: list[MemberReport] = []
    errors: list[BaseException] = []
    first_ended = threading.Event()

    def member(index: int) -> None:
        if index:
            # holding, the later members start while the first waits for them; not holding, once
            # the first has ended (a fixed gap raced the first's reading of everything)
            first_ended.wait(start_gap_s if hold else 60)
        try:
            delivered: list[Polled] = []
            report = run_member([topic], cfg, HandOver(delivered.append), StopWhen(at_end=True),
                                TaskInfo(index), MemberOptions(end_offsets={topic: ends(placed, 4)},
                                                               members=count if hold else None,
                                                               join_timeout_ms=30_000))
            reports.append(report)
        except BaseException as exc:  # raised by the test thread
            errors.append(exc)
        finally:
            if index == 0 and not hold:
                first_ended.set()

    threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    assert not errors, errors
    assert len(reports) == count, "every member finished"
    return reports


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def broker(request: pytest.FixtureRequest) -> Iterator[str]:
    """The embedded coordinator (KIP-848 heartbeats every 500 ms) or Apache Kafka (every 1 s)."""
    if request.param == "kafka":
        yield str(request.getfixturevalue("kafka_broker").bootstrap)
        return
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0, group_consumer_heartbeat_interval_ms=500,
                         group_consumer_min_heartbeat_interval_ms=500) as cluster:
        yield str(cluster.bootstrap_servers)


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_members_that_hold_until_all_joined_share_the_partitions(broker: str, protocol: str) -> None:
    topic = new_topic(broker, 4)
    placed = produce(broker, topic, 4000, 4)
    cfg = consumer_config(broker, f"g-{uuid.uuid4().hex[:6]}", protocol)
    reports = run_members(broker, topic, cfg, placed, 2, hold=True, start_gap_s=1.0)
    assert sum(r.records for r in reports) == len(placed)
    assert max(r.records for r in reports) <= 0.6 * len(placed), [r.as_row() for r in reports]
    assert all(r.waited_ms > 0 for r in reports)
    # the same without holding: the first member waits for nobody, reads everything and ends
    # (the second, started then, finds nothing left)
    cfg = consumer_config(broker, f"g-{uuid.uuid4().hex[:6]}", protocol)
    reports = run_members(broker, topic, cfg, placed, 2, hold=False, start_gap_s=1.0)
    assert sorted(r.records for r in reports) == [0, len(placed)]
    assert all(r.waited_ms == 0 for r in reports), [r.as_row() for r in reports]
