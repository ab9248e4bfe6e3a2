"""Peer client processes (kafka-python, confluent-kafka) and checks on what they report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

PEERS_DIR = Path(__file__).resolve().parent.parent / "peers"
SCRIPTS = {"kafka-python": "kp_consumer.py", "confluent": "ck_consumer.py", "groupclient": "gc_consumer.py",
           "groupclient-aio": "aio_consumer.py", "aiokafka": "aio_consumer.py"}
EXTRA = {"aiokafka": ["--library", "aiokafka"]}  # one script serves both asyncio libraries


class Peer:
    """One consumer process; a reader thread folds its JSON lines into state."""

    def __init__(self, kind: str, bootstrap: str, group: str, topic: str, strategy: str = "range",
                 instance_id: str | None = None, client_id: str | None = None, session_ms: int = 6000,
                 extra: list[str] | None = None, protocol: str = "classic") -> None:
        self.kind = kind
        self.name = client_id or f"{kind}-{os.urandom(2).hex()}"
        if kind == "java":
            from tests.kafka.java_peer import java_peer_command
            program = java_peer_command()
        else:
            program = [sys.executable, str(PEERS_DIR / SCRIPTS[kind]), *EXTRA.get(kind, [])]
        cmd = [*program, "--bootstrap", bootstrap, "--group", group, "--topic", topic, "--strategy", strategy,
               "--client-id", self.name, "--session-ms", str(session_ms), "--protocol", protocol]
        if instance_id:
            cmd += ["--instance-id", instance_id]
        cmd += extra or []
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assignment: set[int] = set()
        # the generation of its last assignment, where the peer reports it (groupclient, whose listener
        # hears of every generation, as Java's does; kafka-python's does not, in a cooperative group)
        self.generation: int | None = None
        self.consumed: set[tuple[int, int]] = set()
        self.values: list[str] = []
        self.events: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.stderr_tail: list[str] = []
        self.ended_at: float | None = None  # time.monotonic() when its stdout closed (it exited)
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
                self.events.append(event)
                kind = event["event"]
                if kind == "assigned":
                    self.assignment = set(event["partitions"])
                    self.generation = event.get("generation", self.generation)
                elif kind in ("revoked", "lost"):
                    self.assignment -= set(event["partitions"])
                elif kind == "records":
                    for partition, offset, value in event["items"]:
                        self.consumed.add((partition, offset))
                        self.values.append(value)
                elif kind == "error":
                    self.errors.append(event)
                self._changed.notify_all()
        with self._changed:
            self.ended_at = time.monotonic()
            self._changed.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_tail = [*self.stderr_tail[-40:], line.rstrip()]

    def wait_for(self, predicate: Callable[[Peer], bool], timeout_s: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(left, 0.2))
        return True

    def snapshot(self) -> list[dict[str, Any]]:
        """A copy of the events so far (the reader thread keeps appending)."""
        with self._changed:
            return list(self.events)

    def has_event(self, name: str) -> bool:
        return any(e["event"] == name for e in self.events)

    def terminate(self, timeout_s: float = 20.0) -> int:
        """Graceful stop (the client closes and leaves the group); returns once every line it
        wrote has been read (its last event, ``closed``, among them)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait(5)
        self.wait_read()
        return code

    def kill(self) -> None:
        """SIGKILL: no LeaveGroup; the coordinator must notice by session expiry."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(5)
        self.wait_read()

    def wait_read(self, timeout_s: float = 10.0) -> bool:
        """Once the process has exited: until the reader thread has folded in its last line (the
        exit comes first; the reader may still be behind on a loaded machine)."""
        return self.wait_for(lambda p: p.ended_at is not None, timeout_s)

    def describe(self) -> str:
        return (f"{self.name}: assignment={sorted(self.assignment)} consumed={len(self.consumed)} "
                f"errors={self.errors} exit={self.proc.poll()} stderr={self.stderr_tail[-5:]}")


class PeerSet:
    """Starts peers and stops whatever is left at the end of a test."""

    def __init__(self) -> None:
        self.peers: list[Peer] = []

    def start(self, *args: Any, **kwargs: Any) -> Peer:
        peer = Peer(*args, **kwargs)
        self.peers.append(peer)
        return peer

    def stop_all(self) -> None:
        for peer in self.peers:
            if peer.proc.poll() is None:
                peer.proc.send_signal(signal.SIGTERM)
        for peer in self.peers:
            try:
                peer.proc.wait(15)
            except subprocess.TimeoutExpired:
                peer.proc.kill()
                peer.proc.wait(5)
            peer.wait_read()


class PollGate:
    """Holds a polling thread off ``poll()`` from the end of the one under way.  The thread asks
    ``may_poll()`` before each poll() and calls ``ended()`` when it stops; ``hold()`` returns once
    no poll() is under way (a flag checked only at the top of the loop let a poll() already
    started go on acting); ``release()`` lets it poll again."""

    def __init__(self) -> None:
        self._changed = threading.Condition()  # guards _held (asked not to poll) and _polling
        self._held = False
        self._polling = False

    def may_poll(self) -> bool:
        with self._changed:
            self._polling = not self._held
            self._changed.notify_all()
            return self._polling

    def ended(self) -> None:
        with self._changed:
            self._polling = False
            self._changed.notify_all()

    def hold(self, who: str) -> None:
        with self._changed:
            self._held = True
            assert self._changed.wait_for(lambda: not self._polling, 30), f"{who}'s poll() did not return"

    def release(self) -> None:
        with self._changed:
            self._held = False


def wait_until(predicate: Callable[[], bool], timeout_s: float = 30.0, interval_s: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()


def holds_for(predicate: Callable[[], bool], duration_s: float, interval_s: float = 0.1) -> bool:
    """The predicate stays true for the whole duration (checked every ``interval_s``): for
    asserting that something does *not* happen, such as a rebalance."""
    deadline = time.monotonic() + duration_s
    while time.monotonic() < deadline:
        if not predicate():
            return False
        time.sleep(interval_s)
    return predicate()


def decode_assignment(data: bytes) -> dict[str, list[int]]:
    if not data:
        return {}
    decoded = ConsumerProtocolAssignment.decode(data)
    return {t.topic: sorted(t.partitions) for t in decoded.assigned_partitions}


def coordinator_assignments(cluster: Any, group: str, topic: str) -> dict[str, set[int]] | None:
    """Member id -> partitions, as the coordinator holds them, if the group is Stable."""
    described = cluster.describe_group(group)
    if described is None or described["state"] != "Stable":
        return None
    return {mid: set(decode_assignment(m["assignment"]).get(topic, []))
            for mid, m in described["members"].items()}


def exclusive_cover(assignments: Iterable[set[int]], partitions: int) -> bool:
    sets = list(assignments)
    return sum(len(s) for s in sets) == partitions and set().union(*sets) == set(range(partitions))


def stable_cover(held: Mapping[str, set[int]] | None, views: list[set[int]], partitions: int) -> bool:
    """Whether the coordinator's assignment (``held``, by member) is an exact, non-overlapping cover
    of the partitions with one owner set per peer, and the peers' own views are those same sets (a
    peer still holding what an earlier generation gave it, beside one not yet given anything, is a
    cover too, but not this one)."""
    if held is None or len(held) != len(views) or not exclusive_cover(held.values(), partitions):
        return False
    return sorted(map(sorted, held.values())) == sorted(map(sorted, views))


def wait_stable_cover(cluster: Any, group: str, topic: str, partitions: int, peers: list[Peer],
                      timeout_s: float = 45.0) -> bool:
    """A stable point (:func:`stable_cover`) of the group on the topic, within ``timeout_s``."""
    return wait_until(lambda: stable_cover(coordinator_assignments(cluster, group, topic),
                                           [set(p.assignment) for p in peers], partitions), timeout_s)


def all_consumed(peers: Iterable[Peer], expected: set[tuple[int, int]]) -> bool:
    seen: set[tuple[int, int]] = set()
    for p in peers:
        seen |= p.consumed
    return expected <= seen
