"""Crash-test machinery: the coordinator CLI as a process to SIGKILL, load on worker threads
with the kill at a chosen point, and raw Kafka-wire requests whose answers the tests check
byte by byte (whole batches, valid CRCs)."""

from __future__ import annotations

import os
import random
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.admin.topics import CreateTopicsRequest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.group import JoinGroupRequest, OffsetCommitRequest, OffsetFetchRequest, SyncGroupRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from tests.integration.wire import WireClient

Rec = tuple[bytes, bytes]  # (key, value)
Work = Callable[["Progress", threading.Event], None]

MAX_OPS_PER_WORKER = 400  # a worker stops after this many requests even if the kill is late
LOAD_TIMEOUT_S = 20.0  # the kill comes at the latest this long after the load started
BATCH_HEADER_BYTES = 61

CT = CreateTopicsRequest.CreatableTopic
FT = FetchRequest.FetchTopic
FP = FT.FetchPartition
OCT = OffsetCommitRequest.OffsetCommitRequestTopic
OCP = OCT.OffsetCommitRequestPartition
PT = ProduceRequest.TopicProduceData
PP = PT.PartitionProduceData


# -- the server process --------------------------------------------------------------------
class Server:
    """The coordinator CLI on an ephemeral 127.0.0.1 port; its log is appended to ``log_path``
    over every start, so a failure shows what each restart found (torn tails, rewrites)."""

    def __init__(self, data_dir: Path, log_path: Path, topics: list[str]) -> None:
        self.cmd = [sys.executable, "-m", "groupclient.coordinator", "--host", "127.0.0.1", "--port", "0",
                    "--data-dir", str(data_dir), "--initial-rebalance-delay-ms", "0", "--log-level", "INFO"]
        for topic in topics:
            self.cmd += ["--topic", topic]
        self.data_dir = data_dir
        self.log_path = log_path
        self.proc: subprocess.Popen[str] | None = None
        self.bootstrap = ""

    def launch(self) -> None:
        with self.log_path.open("a") as log:
            self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=log, text=True,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def start(self, seed: int, timeout_s: float = 30.0) -> str:
        self.launch()
        assert self.proc is not None and self.proc.stdout is not None
        line = ""
        with selectors.DefaultSelector() as selector:  # a bounded wait for the one line it prints
            selector.register(self.proc.stdout, selectors.EVENT_READ)
            if selector.select(timeout_s):
                line = self.proc.stdout.readline()
        if not line.startswith("bootstrap_servers="):
            self.kill()
            pytest.fail(f"[seed {seed}] the coordinator did not start on its data dir ({line!r}):\n{self.log_tail()}")
        self.bootstrap = line.strip().split("=", 1)[1]
        return self.bootstrap

    def start_and_kill(self, trigger: Trigger, timeout_s: float = 30.0) -> bool:
        """Start, and SIGKILL while it loads its data dir the moment ``trigger`` holds;
        whether it did (else it came up, and was killed all the same)."""
        self.launch()
        assert self.proc is not None and self.proc.stdout is not None
        hit = False
        with selectors.DefaultSelector() as selector:
            selector.register(self.proc.stdout, selectors.EVENT_READ)
            deadline = time.monotonic() + timeout_s
            while not (hit := trigger.holds()) and not selector.select(0) and time.monotonic() < deadline:
                pass  # polled without pause: what it looks for may last a millisecond
        self.kill()
        return hit

    def kill(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
            if self.proc.stdout is not None:
                self.proc.stdout.close()

    def stop(self) -> int:
        """SIGTERM, as an operator would; the exit status."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(15)
        finally:
            self.kill()

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def log_count(self, text: str) -> int:
        return self.log_path.read_text(errors="replace").count(text)


# -- load, and the kill ----------------------------------------------------------------------
class Progress:
    """Acknowledged operations so far, for the killer to wait on."""

    def __init__(self, workers: int) -> None:
        self._changed = threading.Condition()
        self.acked = 0
        self.running = workers

    def ack(self) -> None:
        with self._changed:
            self.acked += 1
            self._changed.notify_all()

    def ended(self) -> None:
        with self._changed:
            self.running -= 1
            self._changed.notify_all()

    def wait_for(self, count: int, timeout_s: float) -> bool:
        """Until ``count`` acks, or every worker has ended (a failure: no point in waiting)."""
        with self._changed:
            self._changed.wait_for(lambda: self.acked >= count or not self.running, timeout_s)
            return self.acked >= count


@dataclass(frozen=True)
class Trigger:
    """A state of the data dir to SIGKILL the server in, polled without pause: the state (a
    rewrite in progress, say) may last only a millisecond."""

    what: str
    holds: Callable[[], bool]


def crash_under_load(server: Server, workers: list[Work], rng: random.Random, seed: int,
                     trigger: Trigger | None = None) -> str:
    """Run each worker on its own thread until a random number of operations is acknowledged,
    then SIGKILL the server after a random delay, or when ``trigger`` holds, while the workers
    go on sending.  Returns where the kill came, for failure messages."""
    progress, stop, killed = Progress(len(workers)), threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def run(work: Work) -> None:
        try:
            work(progress, stop)
        except OSError as exc:  # ConnectionError, a timeout: fine only once the server is gone
            if not killed.is_set():
                errors.append(exc)
        except BaseException as exc:
            errors.append(exc)
        finally:
            progress.ended()

    target = rng.randint(3, 120)
    delay_s = rng.choice([0.0, rng.uniform(0.0, 0.001), rng.uniform(0.001, 0.03)])
    threads = [threading.Thread(target=run, args=(w,), daemon=True) for w in workers]
    for thread in threads:
        thread.start()
    reached = progress.wait_for(target, LOAD_TIMEOUT_S)
    point = f"kill after {target} acks + {delay_s * 1000:.2f} ms"
    if trigger is None:
        stop.wait(delay_s)  # a timed pause for the kill point only: requests keep flowing meanwhile
    else:
        deadline = time.monotonic() + LOAD_TIMEOUT_S
        while not (hit := trigger.holds()) and progress.running and time.monotonic() < deadline:
            pass
        point = f"kill after {target} acks, {'in' if hit else 'never seeing'} {trigger.what}"
    killed.set()
    server.kill()
    stop.set()
    for thread in threads:
        thread.join(15)
        assert not thread.is_alive(), f"[seed {seed}] a load thread did not end after the kill"
    point += f" ({progress.acked} acknowledged)"
    if errors:
        raise AssertionError(f"[seed {seed}] the load failed ({point})") from errors[0]
    assert reached or progress.acked > 0, f"[seed {seed}] no load was acknowledged ({point})"
    return point


# -- requests ------------------------------------------------------------------------------
def build_batch(records: list[Rec], producer_id: int, first_seq: int) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                                        base_sequence=first_seq if producer_id >= 0 else -1, batch_size=2**21)
    for delta, (key, value) in enumerate(records):
        builder.append(delta, 1_700_000_000_000 + delta, key, value, [])
    return bytes(builder.build())


def produce(wire: WireClient, topic_records: dict[tuple[str, int], bytes]) -> dict[tuple[str, int], int]:
    """One acks=-1 Produce request; the base offset of each partition (an error fails the test)."""
    topics: dict[str, list[Any]] = {}
    for (topic, partition), records in topic_records.items():
        topics.setdefault(topic, []).append(PP(index=partition, records=records))
    resp = wire.request(ProduceRequest(version=9, transactional_id=None, acks=-1, timeout_ms=10000,
                                       topic_data=[PT(name=t, partition_data=p) for t, p in topics.items()]))
    bases = {}
    for t in resp.responses:
        for p in t.partition_responses:
            assert p.error_code == 0, (t.name, p.index, p.error_code, p.error_message)
            bases[(t.name, p.index)] = p.base_offset
    return bases


def fetch(wire: WireClient, wanted: dict[tuple[str, int], int], max_bytes: int) -> dict[tuple[str, int], Any]:
    topics: dict[str, list[Any]] = {}
    for (topic, partition), offset in wanted.items():
        topics.setdefault(topic, []).append(FP(partition=partition, current_leader_epoch=-1, fetch_offset=offset,
                                               last_fetched_epoch=-1, log_start_offset=-1,
                                               partition_max_bytes=max_bytes))
    resp = wire.request(FetchRequest(version=12, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=2**30,
                                     isolation_level=0, session_id=0, session_epoch=-1, rack_id="",
                                     topics=[FT(topic=t, partitions=p) for t, p in topics.items()],
                                     forgotten_topics_data=[]))
    return {(t.topic, p.partition_index): p for t in resp.responses for p in t.partitions}


@dataclass(frozen=True)
class Batch:
    base: int
    last: int
    records: tuple[tuple[int, Rec], ...]


def parse_batches(data: bytes, where: str) -> list[Batch]:
    """Whole, checksummed batches; anything else in a Fetch answer fails the test."""
    batches = []
    pos = 0
    while pos < len(data):
        assert len(data) - pos >= BATCH_HEADER_BYTES, f"{where}: a partial batch header was served"
        end = pos + 12 + int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
        assert pos + BATCH_HEADER_BYTES <= end <= len(data), f"{where}: a partial batch was served"
        batch = DefaultRecordBatch(data[pos:end])
        assert batch.validate_crc(), f"{where}: a batch with a bad CRC was served at offset {batch.base_offset}"
        records = tuple((r.offset, (bytes(r.key), bytes(r.value))) for r in batch)
        last = batch.base_offset + batch.last_offset_delta
        assert [o for o, _ in records] == list(range(batch.base_offset, last + 1)), f"{where}: offsets inside a batch"
        batches.append(Batch(batch.base_offset, last, records))
        pos = end
    return batches


def read_log(wire: WireClient, topic: str, partition: int, where: str) -> tuple[list[Batch], int]:
    """Every batch of a partition from offset 0, and its high watermark."""
    batches: list[Batch] = []
    offset, high_watermark = 0, 0
    for _ in range(10_000):
        part = fetch(wire, {(topic, partition): offset}, 4 << 20)[(topic, partition)]
        assert part.error_code == 0, f"{where}: Fetch at {offset} answered {part.error_code}"
        high_watermark = part.high_watermark
        got = parse_batches(bytes(part.records or b""), where)
        if not got:
            break
        batches += got
        offset = got[-1].last + 1
    return batches, high_watermark


def metadata(wire: WireClient) -> Any:
    return wire.request(MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False,
                                        include_topic_authorized_operations=False))


def commit(wire: WireClient, group: str, topic: str, offsets: dict[int, tuple[int, str]],
           generation: int = -1, member_id: str = "") -> None:
    resp = wire.request(OffsetCommitRequest(
        version=8, group_id=group, generation_id_or_member_epoch=generation, member_id=member_id,
        group_instance_id=None, topics=[OCT(name=topic, partitions=[
            OCP(partition_index=p, committed_offset=o, committed_leader_epoch=-1, committed_metadata=m)
            for p, (o, m) in offsets.items()])]))
    codes = {p.partition_index: p.error_code for t in resp.topics for p in t.partitions}
    assert set(codes.values()) == {0}, (group, codes)


def committed(wire: WireClient, group: str, topic: str, partitions: int) -> dict[int, tuple[int, str | None]]:
    resp = wire.request(OffsetFetchRequest(version=7, group_id=group, require_stable=False, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=list(range(partitions)))]))
    assert resp.error_code == 0, (group, resp.error_code)
    return {p.partition_index: (p.committed_offset, p.metadata) for t in resp.topics for p in t.partitions}


def check_serves(bootstrap: str, seed: int) -> None:
    """The restarted server does Metadata, CreateTopics, Produce, Fetch, JoinGroup/SyncGroup and
    a generation-fenced commit."""
    wire = WireClient(bootstrap)
    try:
        assert [b.node_id for b in metadata(wire).brokers] == [0], f"[seed {seed}]"
        resp = wire.request(CreateTopicsRequest(version=7, timeout_ms=5000, validate_only=False, topics=[
            CT(name="after-crashes", num_partitions=2, replication_factor=1, assignments=[], configs=[])]))
        assert resp.topics[0].error_code == 0, f"[seed {seed}]"
        assert produce(wire, {("after-crashes", 1): build_batch([(b"k", b"v")], -1, -1)}) == {("after-crashes", 1): 0}
        part = fetch(wire, {("after-crashes", 1): 0}, 1 << 20)[("after-crashes", 1)]
        assert [r for b in parse_batches(bytes(part.records), "after") for r in b.records] == [(0, (b"k", b"v"))]
        join = JoinGroupRequest(version=9, group_id="after-crashes", session_timeout_ms=10000,
                                rebalance_timeout_ms=10000, member_id="", group_instance_id=None,
                                protocol_type="consumer", reason="check",
                                protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")])
        join.member_id = wire.request(join).member_id  # MEMBER_ID_REQUIRED hands out the id
        joined = wire.request(join)
        assert joined.error_code == 0 and joined.leader == joined.member_id, f"[seed {seed}] {joined}"
        synced = wire.request(SyncGroupRequest(
            version=5, group_id="after-crashes", generation_id=joined.generation_id, member_id=joined.member_id,
            group_instance_id=None, protocol_type="consumer", protocol_name="range",
            assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"")]))
        assert synced.error_code == 0, f"[seed {seed}]"
        commit(wire, "after-crashes", "after-crashes", {1: (1, "done")}, joined.generation_id, joined.member_id)
        assert committed(wire, "after-crashes", "after-crashes", 2) == {0: (-1, ""), 1: (1, "done")}
    finally:
        wire.close()
