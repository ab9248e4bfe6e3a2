"""The command line: the demo (the README's first command) and the coordinator's shutdown."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from kafka import KafkaConsumer

pytestmark = pytest.mark.integration


def test_demo_consumes_everything_and_commits_exactly() -> None:
    done = subprocess.run([sys.executable, "-m", "groupclient", "demo", "--log-level", "WARNING",
                           "--records", "300", "--members", "3", "--partitions", "6"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "consumed 300 records" in done.stdout
    assert done.stdout.rstrip().endswith("OK")


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


def test_coordinator_cli_rejects_bad_arguments() -> None:
    done = subprocess.run([sys.executable, "-m", "groupclient.coordinator", "--nodes", "0"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and "--nodes must be at least 1" in done.stderr
    done = subprocess.run([sys.executable, "-m", "groupclient.coordinator", "--topic", "x:many"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and "NAME:PARTITIONS" in done.stderr
