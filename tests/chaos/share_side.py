"""The share group of a chaos run: ShareConsumer members (share_member.py, each in its own process)
on a topic of their own, more members than partitions, on the run's embedded cluster, with records
produced all along.

Besides what the run does to the whole cluster (nodes stopped and started, connections dropped),
the share side has faults of its own, drawn from the run's seed on a stream of its own: a member
SIGKILLed and restarted, a member SIGSTOPped for a moment or past the record lock, a member closed
gracefully and started again, error and dropped answers to ShareFetch, ShareAcknowledge and
ShareGroupHeartbeat.  At the end the faults stop, the members drain the topic, and what they
logged is judged (:func:`check_share`):

- each delivery of a record is counted once: no two deliveries carry the same delivery count, so
  no acquisition went to two members (the simulator checks the holder at each hand-out, which
  processes cannot: tests/sim/test_share_groups.py);
- no record is delivered more than ``share.delivery.count.limit`` times;
- a record whose ACCEPT the broker took (the acknowledgement commit callback) is never delivered
  again after that answer.  (An answer can come after the record went to another member: a member
  paused past the lock whose ACCEPT reaches the broker once another member has finished the record
  is told it was taken, as Kafka takes any acknowledgement of what is behind the share-partition's
  start offset.  Those are counted, ``share_accepts_after_redelivery``, not judged);
- every record produced is delivered at least once, and the share group finishes every one of
  them (Acknowledged or Archived: each share-partition's start offset reaches the log's end);
- no member fails.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from groupclient.coordinator.faults import FaultKind, FaultRule
from groupclient.error_codes import ErrorCode
from groupclient.protocol.apis import ApiKey
from tests.integration.peers import wait_until

from .harness import ChaosSettings, Incarnation

if TYPE_CHECKING:
    from .harness import ChaosRun

SHARE_SCRIPT = Path(__file__).resolve().parent / "share_member.py"
SHARE_TOPIC, SHARE_GROUP = "chaos-share", "chaos-share-group"
SHARE_MEMBERS, SHARE_PARTITIONS = 3, 2  # more members than partitions: what share groups allow
LOCK_MS, DELIVERY_LIMIT = 15_000, 3  # Kafka's lowest lock, so that a SIGSTOP can outlast it
_SHARE_FAULTS = {ApiKey.SHARE_FETCH: [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_SERVER_ERROR,
                                      ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH],
                 ApiKey.SHARE_ACKNOWLEDGE: [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.SHARE_SESSION_NOT_FOUND,
                                            ErrorCode.REQUEST_TIMED_OUT],
                 ApiKey.SHARE_GROUP_HEARTBEAT: [ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                                                ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]}


class ShareIncarnation(Incarnation):
    """One share member process."""

    script = SHARE_SCRIPT
    prefix = "s"

    def arguments(self, settings: ChaosSettings, bootstrap: str) -> list[str]:
        return ["--bootstrap", bootstrap, "--group", SHARE_GROUP, "--topic", SHARE_TOPIC,
                "--client-id", self.client_id, "--seed", f"{settings.seed}/{self.name}"]


class ShareSide:
    """The share members of one run, their producer and their faults."""

    def __init__(self, run: ChaosRun) -> None:
        self.run = run
        self.settings = run.settings
        self.rng = random.Random(f"{run.settings.seed}/share")
        self.slots: list[ShareIncarnation] = []
        self.gone: list[ShareIncarnation] = []
        self.faults: list[str] = []
        self.produced = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        cluster = self.run.cluster
        cluster.create_topic(SHARE_TOPIC, SHARE_PARTITIONS)
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id="chaos-share-admin")
        try:  # through the wire, as an operator would
            answer = admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, SHARE_GROUP, configs={
                "share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": str(LOCK_MS),
                "share.delivery.count.limit": str(DELIVERY_LIMIT)})])
            assert answer == {"group": {SHARE_GROUP: "OK"}}, answer
        finally:
            admin.close()
        self.slots = [self._incarnation(i, 0) for i in range(SHARE_MEMBERS)]
        for target in (self._produce, self._fault_loop):
            thread = threading.Thread(target=target, name=f"chaos-share-{target.__name__}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _incarnation(self, slot: int, number: int) -> ShareIncarnation:
        return ShareIncarnation(slot, number, self.settings, self.run.cluster.bootstrap_servers, self.run.log_dir)

    def _produce(self) -> None:
        seq = 0
        while not self._stop.wait(self.settings.produce_every_s):
            for p in range(SHARE_PARTITIONS):
                self.run.cluster.produce(SHARE_TOPIC, [f"{p}:{seq}".encode()], partition=p)
                self.produced += 1
            seq += 1

    # -- faults ----------------------------------------------------------------------------------
    def _fault_loop(self) -> None:
        while not self._stop.wait(self.rng.uniform(2.0, 6.0)):
            kind = self.rng.choice(("kill", "kill", "pause", "long_pause", "restart", "rule"))
            slot = self.rng.randrange(len(self.slots))
            getattr(self, f"_{kind}")(slot)

    def _replace(self, slot: int) -> None:
        self.gone.append(self.slots[slot])
        self.slots[slot] = self._incarnation(slot, len(self.gone))

    def _kill(self, slot: int) -> None:
        self.faults.append(f"SIGKILL {self.slots[slot].name}")
        self.slots[slot].kill()
        self._stop.wait(self.rng.uniform(0.2, 2.0))
        self._replace(slot)

    def _pause(self, slot: int, hold_s: float | None = None) -> None:
        victim, hold = self.slots[slot], hold_s or self.rng.uniform(0.5, 3.0)
        self.faults.append(f"SIGSTOP {victim.name} for {hold:.1f} s")
        victim.proc.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        self._stop.wait(hold)
        victim.proc.send_signal(signal.SIGCONT)
        victim.paused.append((stopped, time.monotonic()))

    def _long_pause(self, slot: int) -> None:  # past the record lock: its records go to the others
        self._pause(slot, LOCK_MS / 1000 + self.rng.uniform(1.0, 4.0))

    def _restart(self, slot: int) -> None:
        self.faults.append(f"close {self.slots[slot].name} and start again")
        self.slots[slot].close(timeout_s=20)
        self._replace(slot)

    def _rule(self, slot: int) -> None:
        api = self.rng.choice(sorted(_SHARE_FAULTS))
        kind = self.rng.choice((FaultKind.ERROR, FaultKind.ERROR, FaultKind.DROP))
        rule = FaultRule(int(api), kind, self.rng.randint(1, 3), error_code=self.rng.choice(_SHARE_FAULTS[api]))
        self.faults.append(f"{kind.value} {api.name} x{rule.count}" + (
            f" {rule.error_code.name}" if kind is FaultKind.ERROR else ""))
        self.run.cluster.inject_fault(rule)  # the run's episodes may clear it early: a shorter fault

    # -- the end ---------------------------------------------------------------------------------
    def finish(self) -> None:
        """Stop the faults and the producer, let the members finish every record, close them."""
        self._stop.set()
        for thread in self._threads:
            thread.join(60)
        for slot, member in enumerate(self.slots):
            if not member.running():
                self._replace(slot)
        self.end_offsets = self.run.cluster.end_offsets(SHARE_TOPIC)
        if not wait_until(self._finished, 120, interval_s=0.5):
            raise AssertionError(f"seed {self.settings.seed}: the share group never finished its records: "
                                 f"{self.run.cluster.share_partitions(SHARE_GROUP)}, log end {self.end_offsets}")
        self.close()

    def _finished(self) -> bool:
        partitions = self.run.cluster.share_partitions(SHARE_GROUP)
        return all(partitions.get((SHARE_TOPIC, p), {}).get("start_offset") == end
                   for p, end in self.end_offsets.items())

    def close(self) -> None:
        self._stop.set()
        every: list[Callable[[], object]] = [m.close for m in [*self.slots, *self.gone]]
        for step in every:
            step()

    def incarnations(self) -> list[ShareIncarnation]:
        return [*self.gone, *self.slots]


def check_share(side: ShareSide) -> tuple[list[str], dict[str, Any]]:
    """The share invariants of the module's docstring, from the members' logs: (violations, figures)."""
    violations: list[str] = []
    deliveries: dict[tuple[int, int], list[tuple[int, str, float]]] = {}  # (count, member, time)
    accepts: dict[tuple[int, int], list[tuple[int, str, float]]] = {}  # confirmed: (count, member, answer time)
    refused = 0
    for member in side.incarnations():
        pending: dict[tuple[int, int], deque[tuple[int, str]]] = {}
        for e in member.snapshot():
            kind = e["e"]
            if kind == "error":
                violations.append(f"{member.name} failed: {e['error']}")
            elif kind == "delivered":
                deliveries.setdefault((e["p"], e["o"]), []).append((e["n"], member.name, e["t"]))
            elif kind == "acked":
                pending.setdefault((e["p"], e["o"]), deque()).append((e["n"], e["k"]))
            elif kind in ("answered", "refused"):
                key = (e["p"], e["o"])
                if not pending.get(key):
                    violations.append(f"{member.name} was answered for {key}, never acknowledged")
                    continue
                count, how = pending[key].popleft()
                refused += kind == "refused"
                if kind == "answered" and how == "ACCEPT":
                    accepts.setdefault(key, []).append((count, member.name, e["t"]))
    late_accepts = 0
    for key, got in sorted(deliveries.items()):
        counts = [n for n, _, _ in got]
        shown = [(n, name) for n, name, _ in got]
        if len(set(counts)) != len(counts):
            violations.append(f"partition {key[0]} offset {key[1]}: one delivery count handed out twice: {shown}")
        if max(counts) > DELIVERY_LIMIT:
            violations.append(f"partition {key[0]} offset {key[1]}: delivered past the limit: {shown}")
        for count, name, answered_at in accepts.get(key, []):
            later = [(n, who) for n, who, t in got if n > count and t > answered_at]
            if later:
                violations.append(f"partition {key[0]} offset {key[1]}: accepted at delivery {count} by {name}, "
                                  f"then delivered again: {later}")
            late_accepts += any(n > count and t <= answered_at for n, _, t in got)
    for p, end in side.end_offsets.items():
        missing = [o for o in range(end) if (p, o) not in deliveries]
        if missing:
            violations.append(f"partition {p}: {len(missing)} record(s) never delivered, from {missing[:5]}")
    figures = {"share_records": sum(side.end_offsets.values()), "share_deliveries": sum(map(len, deliveries.values())),
               "share_redelivered": sum(1 for got in deliveries.values() if len(got) > 1),
               "share_accepted": len(accepts), "share_accepts_after_redelivery": late_accepts,
               "share_acknowledgements_refused": refused, "share_incarnations": len(side.incarnations()),
               "share_faults": len(side.faults)}
    return violations, figures
