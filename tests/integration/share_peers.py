"""Share-group member processes (groupclient's, confluent-kafka's, Java's) and what they report
(tests/peers/share_common.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from tests.integration.peers import PEERS_DIR

SCRIPTS = {"groupclient": "gc_share_consumer.py", "confluent": "ck_share_consumer.py"}

Key = tuple[int, int]  # (partition, offset)


class SharePeer:
    """One share consumer process; a reader thread folds its JSON lines into state."""

    def __init__(self, kind: str, bootstrap: str, group: str, topic: str, name: str, max_records: int = 10,
                 work_ms: float = 0.0) -> None:
        self.kind = kind
        self.name = name
        if kind == "java":
            from tests.kafka.java_peer import java_share_peer_command
            program = java_share_peer_command()
        else:
            program = [sys.executable, str(PEERS_DIR / SCRIPTS[kind])]
        self.proc = subprocess.Popen(
            [*program, "--bootstrap", bootstrap, "--group", group, "--topic", topic, "--client-id", name,
             "--max-records", str(max_records), "--work-ms", str(work_ms)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # every delivery: (partition, offset, value, delivery count, when)
        self.delivered: list[tuple[int, int, str, int, float]] = []
        self.accepted: dict[Key, float] = {}  # what the broker took, and when it said so
        self.refused: list[list[Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.events: list[str] = []
        self.stderr_tail: list[str] = []
        self.ended = False
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self._changed:
                kind, at = event["event"], event["t"]
                self.events.append(kind)
                if kind == "delivered":
                    self.delivered += [(p, o, v, n, at) for p, o, v, n in event["items"]]
                elif kind == "accepted":
                    for p, o in event["items"]:
                        self.accepted[(p, o)] = at
                elif kind == "refused":
                    self.refused += event["items"]
                elif kind == "error":
                    self.errors.append(event)
                self._changed.notify_all()
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_tail = [*self.stderr_tail[-40:], line.rstrip()]

    def wait_for(self, predicate: Callable[[SharePeer], bool], timeout_s: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(left, 0.2))
        return True

    def terminate(self, timeout_s: float = 30.0) -> int:
        """Graceful: the consumer closes (sessions, then the group); once its last line is read."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait(5)
        self.wait_for(lambda p: p.ended, 10)
        return code

    def kill(self) -> None:
        """SIGKILL: no acknowledgement, no leave; the broker releases its records when its
        connections close."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(5)
        self.wait_for(lambda p: p.ended, 10)

    def describe(self) -> str:
        return (f"{self.name}: delivered={len(self.delivered)} accepted={len(self.accepted)} "
                f"refused={self.refused[:5]} errors={self.errors} exit={self.proc.poll()} "
                f"stderr={self.stderr_tail[-8:]}")
