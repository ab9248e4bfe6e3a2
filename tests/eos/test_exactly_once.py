"""Exactly-once consume-transform-produce on a three-node Apache Kafka 4.4 cluster, for both
group protocols: workers (tests/eos/worker.py, the loop of docs/exactly-once.md) copy an input
topic to an output topic while the input is still being written, in transactions of which one in
four is aborted, and while the test SIGKILLs workers mid-transaction (and starts new ones) and
SIGKILLs the node that is one worker's transaction coordinator, then starts it again.  The truth
is the input as a read_committed reader sees it at the end; read the same way, the output holds
each of those records exactly once and nothing else.  The seed (EOS_SEED) picks the faults' order
and moments; it is printed.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer

from groupclient import GroupConsumer, TopicPartition
from tests.eos.worker import bounded
from tests.kafka.cluster import KafkaCluster

pytestmark = [pytest.mark.integration, pytest.mark.kafka]

WORKER = Path(__file__).resolve().parent / "worker.py"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(WORKER.parents[2]), *filter(None, [os.environ.get("PYTHONPATH")])])}
PARTITIONS = 6
WORKERS = 3


class Worker:
    """One worker process; a thread keeps its events (and a copy in ``<name>.events``)."""

    def __init__(self, slot: int, number: int, cluster: KafkaCluster, protocol: str, names: dict[str, str],
                 log_dir: Path) -> None:
        self.name = f"w{slot}.{number}"
        self.transactional_id = f"{names['group']}-{slot}"  # the slot's: a new worker fences the last
        self.stderr = open(log_dir / f"{self.name}.stderr", "w")
        self.events_path = log_dir / f"{self.name}.events"
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), "--bootstrap", cluster.bootstrap_servers, "--group", names["group"],
             "--input", names["input"], "--output", names["output"], "--client-id", self.name,
             "--transactional-id", self.transactional_id, "--protocol", protocol, "--work-ms", "30"],
            stdout=subprocess.PIPE, stderr=self.stderr, text=True, env=ENV)
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with open(self.events_path, "w") as kept:
            for line in self.proc.stdout:
                kept.write(line)
                kept.flush()
                try:
                    self.events.append(json.loads(line))
                except ValueError:
                    pass

    def count(self, event: str) -> int:
        return sum(1 for e in list(self.events) if e["e"] == event)

    def in_transaction(self) -> bool:
        """Between a begin and its end (committed or failed), as far as its events say."""
        kinds = [e["e"] for e in list(self.events) if e["e"] in ("begin", "committed", "failed")]
        return bool(kinds) and kinds[-1] == "begin"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._reader.join(10)
        self.stderr.close()


class InputWriter:
    """Writes the input in transactions of 20 records over every partition, one in four aborted,
    on a thread, until stopped.  A transaction whose end failed (a node killed under it) has an
    unknown outcome; the truth is read back from the input at the end."""

    def __init__(self, cluster: KafkaCluster, topic: str, tag: str) -> None:
        self.cluster, self.topic, self.tag = cluster, topic, tag
        self.transactions = self.failures = 0
        self.gave_up: str | None = None  # why it stopped before being asked to
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="eos-input", daemon=True)

    def _producer(self) -> KafkaProducer:
        producer = KafkaProducer(bootstrap_servers=self.cluster.bootstrap_servers, client_id=f"{self.tag}-input",
                                 transactional_id=f"{self.tag}-input", transaction_timeout_ms=10000,
                                 request_timeout_ms=10000, max_block_ms=30000)
        try:
            producer.init_transactions()
        except BaseException:
            producer.close(timeout=0)
            raise
        return producer

    def write(self, transactions: int) -> None:
        """``transactions`` of them now, on this thread (the input present before the workers)."""
        producer = self._producer()
        try:
            for _ in range(transactions):
                self._one(producer)
        finally:
            producer.close(timeout=10)

    def _one(self, producer: KafkaProducer) -> None:
        txn = self.transactions
        self.transactions += 1
        producer.begin_transaction()
        for i in range(20):
            producer.send(self.topic, value=f"{self.tag}:{txn}:{i}".encode(), partition=i % PARTITIONS)
        # bounded as the workers' are: unbounded, a call stuck on a killed node could still commit
        # after the truth was read
        if txn % 4 == 3:
            bounded(producer, lambda tm: tm.begin_abort())
        else:
            bounded(producer, lambda tm: tm.begin_commit())

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        producer = self._producer()
        while not self._stop.wait(0.05):
            try:
                self._one(producer)
            except Exception:  # a node killed under it: a new producer aborts what is left open
                self.failures += 1
                try:
                    producer.close(timeout=0)
                except Exception:  # kafka-python's close(timeout=0) raises when it cannot flush
                    pass
                replaced = self._replacement()
                if replaced is None:
                    return
                producer = replaced
        producer.close(timeout=10)

    def _replacement(self) -> KafkaProducer | None:
        """A new producer after a failed transaction, tried up to four times: its
        init_transactions() waits (30 s each, max_block_ms) while the transaction coordinator, on a
        node just restarted, ends its predecessor's transaction, which may take longer than one try.
        None when stopped meanwhile or still refused (``gave_up`` says why)."""
        for attempt in range(4):
            try:
                return self._producer()
            except Exception as exc:  # what it wrote is still read back (stable_ends)
                if self._stop.is_set() or attempt == 3:
                    self.gave_up = f"no new producer after a failed transaction, {attempt + 1} tries: {exc!r}"
                    return None
        return None

    def stop(self, check: bool = True) -> None:
        """Stop writing; with ``check``, fail if the writer's thread is still running."""
        self._stop.set()
        # a bounded end (10 s), a replacement's construction and init_transactions() (30 s, one try
        # once stopped), the sends' max_block_ms (30 s), close (10 s)
        self._thread.join(90)
        if check:
            assert not self._thread.is_alive(), "the input writer did not stop within 90 s"


def stable_ends(cluster: KafkaCluster, topic: str, timeout_s: float = 60) -> dict[TopicPartition, int]:
    """The topic's end offsets once every transaction in it is decided: the last stable offsets
    (read_committed) equal to the high watermarks.  A commit is answered before its markers are
    written, and a transaction left open by a dead producer is aborted only at its timeout (10 s),
    so a read before then would miss records that become visible later."""
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    readers = [GroupConsumer(bootstrap_servers=cluster.bootstrap_servers, isolation_level=level,
                             client_id=f"eos-{level}") for level in ("read_committed", "read_uncommitted")]
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            stable, high = (reader.end_offsets(partitions) for reader in readers)
            if stable == high:
                return stable
            assert time.monotonic() < deadline, f"{topic}: transactions undecided after {timeout_s} s: {stable} < {high}"
            time.sleep(0.5)
    finally:
        for reader in readers:
            reader.close()


def read_committed(cluster: KafkaCluster, topic: str, timeout_s: float = 60) -> Counter[bytes]:
    """Every value of the topic a read_committed reader sees, up to the last stable offsets."""
    reader = GroupConsumer(bootstrap_servers=cluster.bootstrap_servers, isolation_level="read_committed",
                           auto_offset_reset="earliest", client_id="eos-reader")
    try:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        reader.assign(partitions)
        ends = reader.end_offsets(partitions)  # the last stable offsets, under read_committed
        seen: Counter[bytes] = Counter()
        deadline = time.monotonic() + timeout_s
        while any(reader.position(tp) < end for tp, end in ends.items()):
            assert time.monotonic() < deadline, f"{topic} was not read to {ends} in {timeout_s} s"
            for records in reader.poll(timeout_ms=500).values():
                seen.update(r.value for r in records)
        return seen
    finally:
        reader.close()


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_every_input_is_written_exactly_once_through_worker_and_broker_kills(
        kafka_cluster: KafkaCluster, protocol: str, tmp_path: Path) -> None:
    """The loop of "docs/exactly-once.md: from kafka import KafkaProducer" (tests/eos/worker.py),
    three workers at once, through kills of workers and of a transaction coordinator's node."""
    seed = int(os.environ.get("EOS_SEED") or random.SystemRandom().randrange(2**32))
    rng = random.Random(seed)
    print(f"exactly-once seed {seed} (EOS_SEED={seed} replays its faults), {protocol} protocol")
    tag = f"eos-{protocol}-{seed % 100000}"
    names = {"group": tag, "input": f"{tag}-in", "output": f"{tag}-out"}
    kafka_cluster.create_topic(names["input"], PARTITIONS)
    kafka_cluster.create_topic(names["output"], PARTITIONS)
    writer = InputWriter(kafka_cluster, names["input"], tag)
    writer.write(20)  # some input before the workers; the rest while they work and fail
    writer.start()
    workers = [Worker(slot, 0, kafka_cluster, protocol, names, tmp_path) for slot in range(WORKERS)]
    gone: list[Worker] = []
    faults: Counter[str] = Counter()

    def wait_for(condition: Any, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert time.monotonic() < deadline, f"seed {seed}: {what} within {timeout_s} s (logs in {tmp_path})"
            errors = [e for w in workers + gone for e in list(w.events) if e["e"] == "error"]
            assert not errors, f"seed {seed}: a worker failed: {errors} (logs in {tmp_path})"
            time.sleep(0.02)

    def one_in_a_transaction() -> int:
        """The slot of a worker in a transaction, drawn among those that are.  Not a slot drawn
        first and waited for: a worker replacing its producer (kafka-python's init_transactions
        may take minutes while the transaction coordinator ends its predecessor's transaction)
        held a seed's schedule past 60 s in a clean-clone run."""
        deadline = time.monotonic() + 60
        for _ in range(1000):  # a worker may end its transaction between the wait and the pick
            wait_for(lambda: any(w.in_transaction() for w in workers), max(deadline - time.monotonic(), 0),
                     "a worker in a transaction")
            busy = [i for i, w in enumerate(workers) if w.in_transaction()]
            if busy:
                return rng.choice(busy)
        raise AssertionError(f"seed {seed}: no worker stayed in a transaction long enough to be picked")

    def kill_mid_transaction() -> None:
        slot = one_in_a_transaction()
        victim = workers[slot]
        victim.kill()
        faults["worker killed mid-transaction" if victim.in_transaction() else "worker killed"] += 1
        gone.append(victim)
        workers[slot] = Worker(slot, len(gone), kafka_cluster, protocol, names, tmp_path)

    def kill_transaction_coordinator() -> None:
        victim = workers[one_in_a_transaction()]
        node = kafka_cluster.coordinator_of(victim.transactional_id, key_type=1)
        kafka_cluster.kill(node)
        mid = victim.in_transaction()  # its events may lag a commit that just ended: a lower bound
        faults["transaction coordinator's node killed" + (" mid-transaction" if mid else "")] += 1
        time.sleep(rng.uniform(1, 3))
        kafka_cluster.start_node(node)

    try:
        wait_for(lambda: sum(w.count("committed") for w in workers) >= 3, 90, "three transactions committed")
        schedule = [kill_mid_transaction, kill_mid_transaction, kill_transaction_coordinator, kill_mid_transaction]
        rng.shuffle(schedule)
        for fault in schedule:
            fault()
            time.sleep(rng.uniform(0.5, 2))
        # enough input to mean something, however slowly this machine wrote it during the faults
        wait_for(lambda: writer.transactions >= 40 or writer.gave_up is not None, 180, "40 input transactions")
        writer.stop()
        stable_ends(kafka_cluster, names["input"])
        # done when the output holds every committed input: the group's offsets may stay short of
        # the input's end, before an aborted transaction's records (a poll that returns nothing
        # makes no transaction to move them)
        truth = read_committed(kafka_cluster, names["input"])
        copied: Counter[bytes] = Counter()

        def all_copied() -> bool:
            copied.clear()
            copied.update(read_committed(kafka_cluster, names["output"]))
            return set(copied) >= set(truth)
        wait_for(all_copied, 120, f"the {len(truth)} committed inputs in the output")
    finally:
        writer.stop(check=False)  # after a failure: its own is reported
        for worker in workers + gone:
            worker.close()
        for node in range(kafka_cluster.nodes):  # the session's cluster, whole for the next test
            if not kafka_cluster.alive(node):
                kafka_cluster.start_node(node)
    output = read_committed(kafka_cluster, names["output"])
    counts = {"input transactions": writer.transactions, "input records committed": sum(truth.values()),
              "outputs read_committed": sum(output.values()), "faults": dict(faults),
              "worker transactions committed": sum(w.count("committed") for w in workers + gone),
              "worker transactions failed": sum(w.count("failed") for w in workers + gone),
              "producers replaced": sum(w.count("replaced") for w in workers + gone),
              "input transactions failed": writer.failures, "input writer gave up": writer.gave_up}
    print(json.dumps(counts))
    assert set(truth.values()) == {1}, "the input's own values are unique"
    duplicated = {v: n for v, n in output.items() if n > 1}
    assert not duplicated, f"seed {seed}: written more than once: {sorted(duplicated)[:10]} ({len(duplicated)})"
    extra = set(output) - set(truth)
    assert not extra, f"seed {seed}: outputs of no committed input (aborted ones): {sorted(extra)[:10]}"
    missing = set(truth) - set(output)
    assert not missing, f"seed {seed}: {len(missing)} inputs never written: {sorted(missing)[:10]}"
    assert writer.transactions >= 40, counts
    killed = {kind: n for kind, n in faults.items() if kind.startswith("transaction coordinator")}
    assert sum(killed.values()) == 1 and faults["worker killed mid-transaction"] >= 1, counts
