"""The command line: the demo (the README's first command) and the coordinator's shutdown."""

from __future__ import annotations

import signal
import subprocess
import sys

import time

import pytest
from kafka import KafkaConsumer

from groupclient import GroupConsumer

pytestmark = pytest.mark.integration


def test_demo_consumes_everything_and_commits_exactly_and_prints_only_its_result() -> None:
    """Quiet by default: its result lines on stdout, nothing on stderr (before: 42 INFO lines of
    member ids around the 6 lines of result); ``--verbose`` shows the log."""
    done = subprocess.run([sys.executable, "-m", "groupclient", "demo", "--records", "300", "--members", "3",
                           "--partitions", "6"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "consumed 300 records" in done.stdout
    assert done.stdout.rstrip().endswith("OK")
    assert done.stderr == "" and len(done.stdout.splitlines()) == 3 + 3  # produced, 3 members, consumed, OK
    verbose = subprocess.run([sys.executable, "-m", "groupclient", "demo", "--records", "30", "--verbose"],
                             capture_output=True, text=True, timeout=120)
    assert verbose.returncode == 0 and " INFO groupclient." in verbose.stderr


def test_coordinator_cli_serves_several_nodes_and_stops_on_sigint() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "groupclient.coordinator", "--port", "0", "--nodes", "2",
                             "--topic", "cli:4", "--log-level", "WARNING"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("bootstrap_servers=127.0.0.1:")
        bootstrap = line.split("=", 1)[1]
        assert len(bootstrap.split(",")) == 2
        consumer = KafkaConsumer(bootstrap_servers=bootstrap)
        assert consumer.partitions_for_topic("cli") == {0, 1, 2, 3}
        consumer.close()
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_coordinator_shutdown_is_one_line_not_a_failover(sig: signal.Signals) -> None:
    """Stopping the whole coordinator moves no group anywhere: one INFO line says it stops, and
    no group is logged as going Dead because its "coordinator moved away"."""
    proc = subprocess.Popen([sys.executable, "-m", "groupclient", "coordinator", "--port", "0", "--nodes", "2",
                             "--topic", "shut:2", "--initial-rebalance-delay-ms", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        bootstrap = proc.stdout.readline().strip().split("=", 1)[1]
        with GroupConsumer("shut", bootstrap_servers=bootstrap, group_id="shut-g", enable_auto_commit=False) as c:
            deadline = time.monotonic() + 30
            while not c.assignment() and time.monotonic() < deadline:
                c.poll(timeout_ms=100)
            assert c.assignment()
            c.commit()
    finally:
        proc.send_signal(sig)
        try:
            _, stderr = proc.communicate(timeout=15)
        finally:
            proc.kill()
    assert proc.returncode == 0, stderr
    lines = stderr.splitlines()
    shutdown = [line for line in lines if "shutting down" in line]
    assert len(shutdown) == 1, stderr
    assert shutdown[0].endswith(f"INFO groupclient.coordinator: coordinator shutting down ({sig.name}): "
                                "stopping nodes 0, 1 with 1 group; groups and offsets not kept (in memory only)")
    assert not [line for line in lines if "moved" in line or "-> Dead" in line or "stopped" in line], stderr


def test_coordinator_cli_rejects_bad_arguments() -> None:
    done = subprocess.run([sys.executable, "-m", "groupclient.coordinator", "--nodes", "0"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "argument --nodes: must be at least 1" in done.stderr
    done = subprocess.run([sys.executable, "-m", "groupclient.coordinator", "--topic", "x:many"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and "NAME:PARTITIONS" in done.stderr


def test_coordinator_cli_sets_the_consumer_protocols_settings_or_leaves_the_protocol_out() -> None:
    """--consumer-heartbeat-interval-ms reaches a KIP-848 member (the interval its heartbeats are
    told); bounds out of order, or protocols without classic, are a usage error saying so."""
    proc = subprocess.Popen([sys.executable, "-m", "groupclient", "coordinator", "--port", "0", "--topic", "cli848:2",
                             "--initial-rebalance-delay-ms", "0", "--consumer-heartbeat-interval-ms", "700",
                             "--consumer-min-heartbeat-interval-ms", "500"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        bootstrap = proc.stdout.readline().strip().split("=", 1)[1]
        consumer = GroupConsumer("cli848", bootstrap_servers=bootstrap, group_id="cli848", group_protocol="consumer")
        try:
            deadline = time.monotonic() + 30
            while len(consumer.assignment()) < 2 and time.monotonic() < deadline:
                consumer.poll(100)
            assert len(consumer.assignment()) == 2
            assert consumer._group.member.interval_ms == 700  # type: ignore[union-attr]
        finally:
            consumer.close()
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 0
    done = subprocess.run([sys.executable, "-m", "groupclient.coordinator", "--consumer-heartbeat-interval-ms", "100"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "group_consumer_min_heartbeat_interval_ms (5000)" in done.stderr
    done = subprocess.run([sys.executable, "-m", "groupclient.coordinator", "--rebalance-protocols", "consumer"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "must hold 'classic'" in done.stderr
