"""tests/kafka/broker.py's own contract, without a JVM: a broker that is running is not started a
second time (a second JVM on its ports and data directory took the first down on a loaded machine:
the oldest-Kafka test's CreateTopics went unanswered, then its connections were refused)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.kafka import broker as broker_module


def test_a_running_broker_is_not_started_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(broker_module, "fetch", lambda version=broker_module.KAFKA_VERSION: tmp_path)
    broker = broker_module.KafkaBroker(version="4.1.1")
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    launched: list[Any] = []
    try:
        broker.proc = running  # as start() leaves it
        monkeypatch.setattr(broker_module.subprocess, "Popen", lambda *a, **k: launched.append(a))
        monkeypatch.setattr(broker_module.subprocess, "run", lambda *a, **k: launched.append(a))
        with pytest.raises(RuntimeError, match="running already"):
            broker.start()
        with pytest.raises(RuntimeError, match="running already"):
            broker.__enter__()  # `with broker.start()` started it twice
        assert launched == [] and broker.proc is running
    finally:
        running.kill()
        running.wait()
        broker.proc = None
        broker.close()
