"""Crash consistency, end to end: the coordinator CLI is SIGKILLed at seeded-random points while
Produce, OffsetCommit and CreateTopics requests are in flight, then started again on the same
data dir.  Nothing acknowledged may be lost, nothing half-written may be served, and the data
dir must always start again without a hand edit.

Every random choice comes from one seed, printed by each test (pytest shows it on failure);
``CRASH_SEED=<seed>`` replays the same choices.  Where the kill lands also depends on timing, so
a replay makes the same kind of run rather than the same bytes.
"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kafka.protocol.admin.topics import CreateTopicsRequest

from tests.integration.crash import (
    CT,
    MAX_OPS_PER_WORKER,
    Progress,
    Rec,
    Server,
    Trigger,
    Work,
    build_batch,
    check_serves,
    commit,
    committed,
    crash_under_load,
    fetch,
    metadata,
    parse_batches,
    produce,
    read_log,
)
from tests.integration.wire import WireClient

pytestmark = pytest.mark.integration

ROUNDS = 6  # crashes per test: each also restarts what the previous crashes left


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    value = int(os.environ.get("CRASH_SEED") or random.SystemRandom().randrange(2**32))
    print(f"{request.node.name}: CRASH_SEED={value}")  # shown with the failure
    return value


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """``make_server(*topics)``: a server on the test's data dir, killed at the end whatever happens."""
    made: list[Server] = []

    def make(*topics: str) -> Server:
        made.append(Server(tmp_path / "data", tmp_path / "coordinator.log", list(topics)))
        return made[-1]

    try:
        yield make
    finally:
        for server in made:
            server.kill()


# -- produce ----------------------------------------------------------------------------------
PRODUCE_TOPIC = "crash-produce"


@dataclass(eq=False)  # a key by identity
class PartitionLedger:
    """What the producer of one partition knows: records it saw served, records acknowledged
    since, and the batch it sent without an answer (a crash cut it off)."""

    partition: int
    producer_id: int  # -1: a plain producer; otherwise idempotent, and it retries after a crash
    verified: dict[int, Rec] = field(default_factory=dict)
    acked: dict[int, Rec] = field(default_factory=dict)
    pending: tuple[int, list[Rec]] | None = None  # (first sequence, records)
    next_seq: int = 0
    made: int = 0

    def new_records(self, rng: random.Random) -> list[Rec]:
        records = []
        # now and then a value of many pages, so the kill can land inside one write (one per
        # batch at most: a batch stays under message.max.bytes)
        big = rng.randrange(8) if rng.random() < 0.3 else -1
        for index in range(rng.randint(1, 8)):
            self.made += 1
            size = rng.randint(200_000, 900_000) if index == big else rng.randint(0, 300)
            records.append((f"p{self.partition}-{self.made}".encode(), rng.randbytes(size)))
        return records

    def sent(self, first_seq: int, records: list[Rec]) -> bytes:
        self.pending = (first_seq, records)
        return build_batch(records, self.producer_id, first_seq)

    def answered(self, base: int) -> None:
        assert self.pending is not None
        first_seq, records = self.pending
        self.pending = None
        self.next_seq = max(self.next_seq, first_seq + len(records))
        for offset, record in enumerate(records, start=base):
            self.acked[offset] = record


def send(wire: WireClient, batches: dict[PartitionLedger, tuple[int, list[Rec]]]) -> dict[PartitionLedger, int]:
    """One Produce request, one batch per partition (Kafka allows no more since Produce v3)."""
    data = {(PRODUCE_TOPIC, ledger.partition): ledger.sent(*batch) for ledger, batch in batches.items()}
    bases = produce(wire, data)
    for ledger in batches:
        ledger.answered(bases[(PRODUCE_TOPIC, ledger.partition)])
    return {ledger: bases[(PRODUCE_TOPIC, ledger.partition)] for ledger in batches}


def wire_worker(bootstrap: str, step: Callable[[WireClient, Progress], None]) -> Work:
    """A worker on its own connection: ``step`` (which acknowledges what it did) again and
    again until told to stop, at most MAX_OPS_PER_WORKER times."""
    def work(progress: Progress, stop: threading.Event) -> None:
        wire = WireClient(bootstrap)
        try:
            for _ in range(MAX_OPS_PER_WORKER):
                if stop.is_set():
                    return
                step(wire, progress)
        finally:
            wire.close()
    return work


def producer(bootstrap: str, ledgers: list[PartitionLedger], rng: random.Random) -> Work:
    """A worker writing each request to all of ``ledgers``' partitions: a crash may cut such a
    request off after some of its partitions were written."""
    def step(wire: WireClient, progress: Progress) -> None:
        send(wire, {ledger: (ledger.next_seq, ledger.new_records(rng)) for ledger in ledgers})
        progress.ack()
    return wire_worker(bootstrap, step)


def check_partition(wire: WireClient, ledger: PartitionLedger, rng: random.Random, where: str) -> int:
    """The log after a restart against the ledger; returns the high watermark."""
    batches, high_watermark = read_log(wire, PRODUCE_TOPIC, ledger.partition, where)
    expected_base = 0
    for batch in batches:
        assert batch.base == expected_base, f"{where}: a gap or overlap at offset {expected_base}"
        expected_base = batch.last + 1
    assert expected_base == high_watermark, f"{where}: the log ends at {expected_base}, HW {high_watermark}"
    log = {offset: record for batch in batches for offset, record in batch.records}
    for offset, record in ledger.verified.items():
        assert log.get(offset) == record, f"{where}: offset {offset}, served before the crash, is lost or changed"
    for offset, record in ledger.acked.items():
        assert log.get(offset) == record, f"{where}: acknowledged offset {offset} is lost or changed"
    known = ledger.verified.keys() | ledger.acked.keys()
    # anything else must be the whole batch that had no answer (written, unacknowledged)
    unanswered = [tuple(ledger.pending[1])] if ledger.pending else []
    for batch in batches:
        offsets = {offset for offset, _ in batch.records}
        if offsets <= known:
            continue
        assert not offsets & known, f"{where}: batch at {batch.base} mixes known and unknown records"
        content = tuple(record for _, record in batch.records)
        assert content in unanswered, f"{where}: batch at {batch.base} is no batch that was sent"
        unanswered.remove(content)
    # a Fetch from each offset not checked before answers with the batch holding it (KIP-74)
    fresh = [o for o in range(high_watermark) if o not in ledger.verified]
    for offset in fresh + rng.sample(sorted(ledger.verified), min(20, len(ledger.verified))):
        part = fetch(wire, {(PRODUCE_TOPIC, ledger.partition): offset}, 1)[(PRODUCE_TOPIC, ledger.partition)]
        first = parse_batches(bytes(part.records or b""), where)[:1]
        assert part.error_code == 0 and first and first[0].base <= offset <= first[0].last, \
            f"{where}: Fetch at offset {offset} answered {part.error_code} with {first}"
    ledger.verified, ledger.acked = log, {}
    return high_watermark


def resume_producing(wire: WireClient, ledger: PartitionLedger, high_watermark: int, where: str) -> None:
    """An idempotent producer retries its unanswered batch: a copy already in the log is not
    written twice.  Then a new batch must land at the log end."""
    if ledger.pending is not None and ledger.producer_id >= 0:
        retry = ledger.pending
        at = [offset for offset, record in ledger.verified.items() if record == retry[1][0]]
        base = send(wire, {ledger: retry})[ledger]
        assert base == (at[0] if at else high_watermark), f"{where}: the retry was answered {base}, log had {at}"
        high_watermark = max(high_watermark, base + len(retry[1]))
    ledger.pending = None  # a plain producer gives its batch up: it must never show up later
    base = send(wire, {ledger: (ledger.next_seq, ledger.new_records(random.Random(high_watermark)))})[ledger]
    assert base == high_watermark, f"{where}: a produce after the restart got offset {base}, log end {high_watermark}"


def growing(server: Server, partition: int) -> Trigger:
    """The partition's journal file growing: the kill lands right after an append, before its
    answer (written, unacknowledged), or in the middle of a large one (a torn tail)."""
    path = server.data_dir / "logs" / f"{PRODUCE_TOPIC}-{partition}.journal"
    first: list[int] = []

    def grew() -> bool:
        size = path.stat().st_size if path.exists() else 0
        first[:] = first or [size]
        return size != first[0]
    return Trigger(f"a write to partition {partition}'s journal", grew)


def test_acknowledged_records_survive_kill_9_during_produce(make_server: Callable[..., Server], seed: int) -> None:
    server, rng = make_server(f"{PRODUCE_TOPIC}:3"), random.Random(seed)
    # a plain producer on partitions 0 and 1 (each request writes both), an idempotent one on 2
    ledgers = [PartitionLedger(0, -1), PartitionLedger(1, -1), PartitionLedger(2, 4242)]
    bootstrap = server.start(seed)
    for round_no in range(ROUNDS):
        workers = [producer(bootstrap, ledgers[:2], random.Random(rng.random())),
                   producer(bootstrap, ledgers[2:], random.Random(rng.random()))]
        # every other round the kill comes the moment a partition's journal grows
        trigger = growing(server, rng.randrange(3)) if round_no % 2 else None
        point = crash_under_load(server, workers, rng, seed, trigger)
        bootstrap = server.start(seed)
        wire = WireClient(bootstrap)
        try:
            for ledger in ledgers:
                where = f"[seed {seed}] round {round_no} ({point}) partition {ledger.partition}"
                resume_producing(wire, ledger, check_partition(wire, ledger, rng, where), where)
        finally:
            wire.close()
    check_serves(bootstrap, seed)
    assert server.stop() == 0


# -- commit ---------------------------------------------------------------------------------
# many partitions of large metadata: the group journal (compacted past 1 MiB) is rewritten
# every twenty-odd commits, and each rewrite lasts long enough to be caught in the act
COMMIT_TOPIC, COMMIT_PARTITIONS = "crash-commit", 32


def commit_value(group: str, seq: int, partition: int) -> tuple[int, str]:
    """Commit number ``seq`` of a group, for one partition: its offset and metadata both name
    it, and the metadata (up to 3 kB a partition) grows the journal into compaction fast."""
    padding = random.Random(f"{group}/{seq}").randint(0, 3000)
    return seq * 1000 + partition, f"{group}/{seq}/{partition}/" + "m" * padding


@dataclass
class CommitLedger:
    group: str
    acked: int = 0  # the last acknowledged commit (0: none yet)
    inflight: int | None = None  # sent without an answer

    def send(self, wire: WireClient, seq: int) -> None:
        self.inflight = seq
        commit(wire, self.group, COMMIT_TOPIC,
               {p: commit_value(self.group, seq, p) for p in range(COMMIT_PARTITIONS)})
        self.acked, self.inflight = seq, None

    def worker(self, bootstrap: str) -> Work:
        def step(wire: WireClient, progress: Progress) -> None:
            self.send(wire, self.acked + 1)
            progress.ack()
        return wire_worker(bootstrap, step)

    def check(self, wire: WireClient, where: str) -> None:
        """One commit request is one journal entry: all its partitions or none of them."""
        found = committed(wire, self.group, COMMIT_TOPIC, COMMIT_PARTITIONS)
        seqs = {(offset - p) // 1000 if offset >= 0 else 0 for p, (offset, _) in found.items()}
        assert len(seqs) == 1, f"{where}: {self.group} shows parts of different commits: {sorted(seqs)}"
        seq = seqs.pop()
        # the last acknowledged value, or the later one that was in flight; never older
        assert seq in (self.acked, self.inflight), \
            f"{where}: {self.group} has commit {seq}, acknowledged {self.acked}, in flight {self.inflight}"
        if seq:
            assert found == {p: commit_value(self.group, seq, p) for p in found}, f"{where}: {self.group} metadata"
        self.acked, self.inflight = seq, None


def test_acknowledged_commits_survive_kill_9_during_commit(make_server: Callable[..., Server], seed: int) -> None:
    server, rng = make_server(f"{COMMIT_TOPIC}:{COMMIT_PARTITIONS}"), random.Random(seed)
    ledgers = [CommitLedger(f"committer-{i}") for i in range(3)]
    rewrite = server.data_dir / "groups.journal.compacting"
    rewriting = Trigger("a rewrite of the group journal", rewrite.exists)

    bootstrap = server.start(seed)
    for round_no in range(ROUNDS):
        # every other round the kill comes in the middle of a compaction of the group journal,
        # and again in the one the next start does (the journal it finds is still large)
        point = crash_under_load(server, [ledger.worker(bootstrap) for ledger in ledgers], rng, seed,
                                 rewriting if round_no % 2 else None)
        if round_no % 2:
            server.start_and_kill(rewriting)
        bootstrap = server.start(seed)
        wire = WireClient(bootstrap)
        try:
            for ledger in ledgers:
                ledger.check(wire, f"[seed {seed}] round {round_no} ({point})")
                ledger.send(wire, ledger.acked + 1)  # and it takes new commits
        finally:
            wire.close()
    check_serves(bootstrap, seed)
    assert server.stop() == 0
    # the point of the rounds above: some kills did land in a rewrite (each is a few ms long)
    assert server.log_count("removing an unfinished rewrite") >= 1, \
        f"[seed {seed}] no kill caught the group journal being rewritten\n{server.log_tail()}"


# -- create ---------------------------------------------------------------------------------
@dataclass
class CreateLedger:
    """Topics one worker created (name -> partitions), and the first record it wrote to the last
    partition of each (name -> record): acknowledged, or in flight when the server died."""

    name: str
    topics: dict[str, int] = field(default_factory=dict)
    creating: dict[str, int] = field(default_factory=dict)
    records: dict[str, Rec] = field(default_factory=dict)
    writing: dict[str, Rec] = field(default_factory=dict)
    made: int = 0

    def worker(self, bootstrap: str, rng: random.Random) -> Work:
        def step(wire: WireClient, progress: Progress) -> None:
            self.create(wire, rng)
            progress.ack()
            self.write_first_records(wire)
            progress.ack()
        return wire_worker(bootstrap, step)

    def create(self, wire: WireClient, rng: random.Random) -> None:
        for _ in range(rng.randint(1, 3)):
            self.made += 1
            self.creating[f"{self.name}-{self.made}"] = rng.choice([1, 2, 3, 8, 32])
        resp = wire.request(CreateTopicsRequest(version=7, timeout_ms=5000, validate_only=False, topics=[
            CT(name=n, num_partitions=p, replication_factor=-1, assignments=[], configs=[])
            for n, p in self.creating.items()]))
        assert {t.name: t.error_code for t in resp.topics} == dict.fromkeys(self.creating, 0), resp
        self.topics.update(self.creating)
        self.creating = {}

    def write_first_records(self, wire: WireClient) -> None:
        """A record into each topic created but not yet written to (one request for all)."""
        self.writing = {name: (name.encode(), b"first") for name in self.topics if name not in self.records}
        if not self.writing:
            return
        bases = produce(wire, {(name, self.topics[name] - 1): build_batch([record], -1, -1)
                               for name, record in self.writing.items()})
        assert set(bases.values()) == {0}, bases
        self.records.update(self.writing)
        self.writing = {}

    def check(self, shown: dict[str, int], firsts: dict[str, list[Rec]], where: str) -> None:
        for name, partitions in self.topics.items():
            assert shown.get(name) == partitions, f"{where}: acknowledged {name} ({partitions}) shows {shown.get(name)}"
        for name, partitions in self.creating.items():
            # cut off: the whole topic or none of it
            assert shown.get(name) in (None, partitions), f"{where}: {name} of {partitions} shows {shown.get(name)}"
            if name in shown:
                self.topics[name] = partitions
        self.creating = {}
        for name in self.topics:
            if name in self.records:
                assert firsts[name] == [self.records[name]], f"{where}: acknowledged record of {name}: {firsts[name]}"
            else:  # never written, or written without an answer: nothing, or that one record
                assert firsts[name] in ([], [self.writing.get(name)]), f"{where}: {name} holds {firsts[name]}"
                if firsts[name]:
                    self.records[name] = firsts[name][0]
        self.writing = {}


def shown_topics(wire: WireClient, where: str) -> dict[str, int]:
    """Topic -> partitions in Metadata; a topic with an error or a missing partition fails."""
    shown = {}
    for t in metadata(wire).topics:
        indexes = sorted(p.partition_index for p in t.partitions)
        assert t.error_code == 0 and indexes == list(range(len(indexes))) and indexes, f"{where}: {t}"
        assert {(p.error_code, p.leader_id) for p in t.partitions} == {(0, 0)}, f"{where}: {t}"
        shown[t.name] = len(indexes)
    return shown


def test_created_topics_survive_kill_9_whole_or_not_at_all(make_server: Callable[..., Server], seed: int) -> None:
    server, rng = make_server(), random.Random(seed)
    ledgers = [CreateLedger(f"t{i}") for i in range(2)]
    bootstrap = server.start(seed)
    for round_no in range(ROUNDS):
        workers = [ledger.worker(bootstrap, random.Random(rng.random())) for ledger in ledgers]
        point = crash_under_load(server, workers, rng, seed)
        bootstrap = server.start(seed)
        where = f"[seed {seed}] round {round_no} ({point})"
        wire = WireClient(bootstrap)
        try:
            shown = shown_topics(wire, where)
            expected = {name for ledger in ledgers for name in [*ledger.topics, *ledger.creating]}
            assert set(shown) <= expected, f"{where}: topics nobody created: {set(shown) - expected}"
            # the first record of each topic's last partition, all in one Fetch
            parts = fetch(wire, {(name, n - 1): 0 for name, n in shown.items()}, 1 << 16)
            firsts = {name: [r for b in parse_batches(bytes(part.records or b""), where) for _, r in b.records]
                      for (name, _), part in parts.items()}
            for ledger in ledgers:
                ledger.check(shown, firsts, where)
                ledger.create(wire, rng)  # and it goes on creating and writing
                ledger.write_first_records(wire)
        finally:
            wire.close()
    check_serves(bootstrap, seed)
    assert server.stop() == 0
