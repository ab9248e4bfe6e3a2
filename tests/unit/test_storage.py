"""Journals, the group store and topic logs: persistence, torn tails, offsets, idempotence."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from groupclient.coordinator.placement import elect_leader, java_string_hashcode, offsets_partition_for
from groupclient.coordinator.storage.group_store import CommittedOffset, GroupSnapshot, GroupStore, MemberSnapshot
from groupclient.coordinator.storage.journal import Journal
from groupclient.coordinator.storage.topic_log import InvalidRecords, PartitionLog, TopicStore

from .group_harness import group_store


def batch(values: list[bytes], producer: int = -1, epoch: int = -1, seq: int = -1, ts: int = 1000) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=producer,
                                  producer_epoch=epoch, base_sequence=seq, batch_size=2**20)
    for i, v in enumerate(values):
        b.append(i, ts + i, None, v, [])
    return bytes(b.build())


def test_java_hashcode_and_placement_match_kafka() -> None:
    assert java_string_hashcode("") == 0
    assert java_string_hashcode("hello") == 99162322
    assert java_string_hashcode("polygenelubricants") == -2147483648  # Integer.MIN_VALUE
    assert offsets_partition_for("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) == 0
    assert java_string_hashcode("é") == 233
    assert offsets_partition_for("my-group", 50) == abs(java_string_hashcode("my-group")) % 50
    assert elect_leader(4, [0, 1, 2], {0, 1, 2}) == 1
    assert elect_leader(4, [0, 1, 2], {0, 2}) == 2
    assert elect_leader(4, [0, 1, 2], set()) is None


def test_journal_ignores_a_torn_tail_and_keeps_appending(tmp_path: Path) -> None:
    path = tmp_path / "j"
    j = Journal(path)
    j.append(b"one")
    j.append(b"two")
    j.close()
    with path.open("ab") as f:
        f.write(b"\x00\x00\x00\x09\x12")  # a crash in the middle of a header
    j = Journal(path)
    assert list(j.replay()) == [b"one", b"two"]
    j.append(b"three")
    j.close()
    assert list(Journal(path).replay()) == [b"one", b"two", b"three"]


def test_journal_stops_at_a_corrupt_entry(tmp_path: Path) -> None:
    path = tmp_path / "j"
    j = Journal(path)
    for word in (b"alpha", b"beta", b"gamma"):
        j.append(word)
    j.close()
    data = bytearray(path.read_bytes())
    data[8 + 5 + 8] ^= 0xFF  # flip a byte of the second payload
    path.write_bytes(bytes(data))
    assert list(Journal(path).replay()) == [b"alpha"]


def test_group_store_survives_reopen(tmp_path: Path) -> None:
    store = group_store(tmp_path)
    member = MemberSnapshot("m-1", "inst", "client", "127.0.0.1", 30000, 10000, b"\x00sub", b"\x01asg")
    store.put_group(GroupSnapshot("g", 3, "consumer", "range", "m-1", (member,)))
    store.put_offsets("g", {("t", 0): CommittedOffset(10, -1, "meta", 5), ("t", 1): CommittedOffset(3, 2, None, 6)})
    store.put_offsets("g", {("t", 0): CommittedOffset(11, -1, "", 7)})
    store.put_offsets("gone", {("t", 0): CommittedOffset(1, -1, None, 1)})
    store.delete_group("gone")
    store.close()
    again = group_store(tmp_path)
    assert again.groups["g"].members == (member,)
    assert again.offsets["g"][("t", 0)].offset == 11
    assert again.offsets["g"][("t", 1)] == CommittedOffset(3, 2, None, 6)
    assert "gone" not in again.offsets


def test_partition_log_assigns_offsets_and_reads_whole_batches() -> None:
    log = PartitionLog()
    assert log.append(batch([b"a", b"b", b"c"]), 2**20) == 0
    assert log.append(batch([b"d"]), 2**20) == 3
    assert log.high_watermark == 4
    first = batch([b"a", b"b", b"c"])
    assert log.read(1, 10) .startswith(b"\x00" * 8)  # from the batch holding offset 1, even past max_bytes
    assert len(log.read(0, 10)) == len(first)
    assert len(log.read(0, 10, at_least_one=False)) == 0
    assert log.read(3, 2**20)[:8] == (3).to_bytes(8, "big")
    assert log.read(4, 2**20) == b""
    assert log.offset_for_timestamp(1001) == (1, 1001)
    assert log.offset_for_timestamp(99999) is None


def test_partition_log_rejects_bad_batches() -> None:
    log = PartitionLog()
    good = bytearray(batch([b"x"]))
    good[-1] ^= 0x01
    with pytest.raises(InvalidRecords) as err:
        log.append(bytes(good), 2**20)
    assert err.value.error.name == "CORRUPT_MESSAGE"
    with pytest.raises(InvalidRecords):
        log.append(batch([b"x"])[:30], 2**20)
    with pytest.raises(InvalidRecords) as err:
        log.append(batch([b"x" * 100]), 50)
    assert err.value.error.name == "MESSAGE_TOO_LARGE"
    assert log.high_watermark == 0


def test_idempotent_producer_retries_are_deduplicated() -> None:
    log = PartitionLog()
    assert log.append(batch([b"a", b"b"], producer=7, epoch=0, seq=0), 2**20) == 0
    assert log.append(batch([b"a", b"b"], producer=7, epoch=0, seq=0), 2**20) == 0  # retry
    assert log.high_watermark == 2
    with pytest.raises(InvalidRecords) as err:
        log.append(batch([b"z"], producer=7, epoch=0, seq=5), 2**20)
    assert err.value.error.name == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert log.append(batch([b"c"], producer=7, epoch=0, seq=2), 2**20) == 2


def test_topic_store_persists_topics_and_records(tmp_path: Path) -> None:
    store = TopicStore(tmp_path)
    store.create("orders", 2)
    store.append("orders", 1, batch([b"a", b"b"]), 2**20)
    topic_id = store.topics["orders"].topic_id
    store.close()
    again = TopicStore(tmp_path)
    assert again.topics["orders"].topic_id == topic_id
    assert again.partition("orders", 1).high_watermark == 2  # type: ignore[union-attr]
    assert again.partition("orders", 0).high_watermark == 0  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        again.create("bad name!", 1)
    with pytest.raises(KeyError):
        again.create("orders", 1)


def test_timer_queue_orders_replaces_and_cancels() -> None:
    from groupclient.coordinator.group_base.timers import TimerQueue

    q = TimerQueue()
    fired: list[str] = []
    q.schedule("a", 10, lambda t: fired.append("a"))
    q.schedule("b", 5, lambda t: fired.append("b"))
    q.schedule("a", 20, lambda t: fired.append("a2"))  # replaces a
    q.schedule("c", 7, lambda t: fired.append("c"))
    q.cancel("c")
    assert q.next_deadline() == 5
    assert q.run_due(15) == 1 and fired == ["b"]
    assert q.run_due(20) == 1 and fired == ["b", "a2"]
    assert q.next_deadline() is None
    for i in range(1000):
        q.schedule("hb", i, lambda t: None)
    assert len(q) == 1 and len(q._heap) < 300  # stale entries are compacted


# -- journal compaction -------------------------------------------------------------------------
def _commit_many(store: GroupStore[Any], count: int, group: str = "g") -> None:
    for i in range(count):
        store.put_offsets(group, {("t", p): CommittedOffset(i, -1, "meta", 1000 + i) for p in range(4)})


def test_group_journal_is_compacted_and_stays_bounded(tmp_path: Path) -> None:
    store = group_store(tmp_path)
    path = tmp_path / "groups.journal"
    member = MemberSnapshot("m-1", None, "client", "127.0.0.1", 30000, 10000, b"sub", b"asg")
    store.put_group(GroupSnapshot("g", 1, "consumer", "range", "m-1", (member,)))
    largest = 0
    for i in range(20):  # 20 x 1,000 commits of the same four partitions: ~4 MB written in all
        _commit_many(store, 1000)
        largest = max(largest, path.stat().st_size)
    assert largest <= 1024 * 1024 + 4096  # never much past the 1 MiB floor
    store.put_offsets("gone", {("t", 0): CommittedOffset(1, -1, None, 1)})
    store.delete_group("gone")
    store.close()
    again = group_store(tmp_path)
    assert again.groups["g"].members == (member,)
    assert again.offsets["g"][("t", 3)] == CommittedOffset(999, -1, "meta", 1999)
    assert "gone" not in again.group_ids()
    again.close()


def test_compaction_drops_deleted_groups_and_expired_offsets_for_good(tmp_path: Path) -> None:
    store = group_store(tmp_path, compaction_min_bytes=16 * 1024)
    store.put_offsets("deleted", {("t", 0): CommittedOffset(1, -1, None, 1)})
    store.put_group(GroupSnapshot("deleted", 1, "consumer", None, None, ()))
    store.delete_group("deleted")
    store.put_offsets("kept", {("t", 0): CommittedOffset(1, -1, None, 1), ("t", 1): CommittedOffset(2, -1, None, 1)})
    store.delete_offsets("kept", [("t", 0)])
    _commit_many(store, 500, group="busy")  # forces several compactions
    assert (tmp_path / "groups.journal").stat().st_size < 16 * 1024 + 1024
    store.close()
    again = group_store(tmp_path, compaction_min_bytes=16 * 1024)
    assert "deleted" not in again.group_ids()
    assert list(again.offsets["kept"]) == [("t", 1)]
    assert again.offsets["busy"][("t", 0)].offset == 499
    again.close()


def test_a_compacted_journal_still_ignores_a_torn_tail(tmp_path: Path) -> None:
    store = group_store(tmp_path, compaction_min_bytes=16 * 1024)
    _commit_many(store, 500)
    store.put_offsets("late", {("t", 0): CommittedOffset(7, -1, None, 1)})
    store.close()
    with (tmp_path / "groups.journal").open("ab") as f:
        f.write(b"\x00\x00\x01\x00\xde\xad")  # a crash in the middle of the next append
    again = group_store(tmp_path, compaction_min_bytes=16 * 1024)
    assert again.offsets["g"][("t", 2)].offset == 499
    assert again.offsets["late"][("t", 0)].offset == 7
    again.put_offsets("after", {("t", 0): CommittedOffset(8, -1, None, 1)})
    again.close()
    assert group_store(tmp_path).offsets["after"][("t", 0)].offset == 8


def test_a_journal_grown_while_compaction_was_off_is_compacted_on_open(tmp_path: Path) -> None:
    path = tmp_path / "groups.journal"
    raw = Journal(path)
    record = (b'{"type":"offsets","group_id":"g","offsets":[["t",0,{"offset":1,"leader_epoch":-1,'
              b'"metadata":null,"commit_timestamp_ms":1}]]}')
    for _ in range(20_000):  # about 2.5 MB of the same commit, as an older version would leave it
        raw.append(record)
    raw.close()
    (tmp_path / "groups.journal.compacting").write_bytes(b"half a rewrite from a crash")
    store = group_store(tmp_path)
    assert path.stat().st_size < 1024
    assert not (tmp_path / "groups.journal.compacting").exists()
    assert store.offsets["g"][("t", 0)].offset == 1
    store.close()


def test_a_topic_with_the_longest_legal_name_is_stored_and_read_back(tmp_path: Path) -> None:
    """249 characters is a legal topic name, but "<name>-<partition>.journal.compacting" would
    pass the 255-byte file name limit: such a partition's journal is named after the topic id."""
    name = "t" * 249
    store = TopicStore(tmp_path)
    store.create(name, 2)
    store.append(name, 1, batch([b"a", b"b"]), 2**20)
    store.close()
    again = TopicStore(tmp_path)
    assert again.partition(name, 1).high_watermark == 2  # type: ignore[union-attr]
    assert all(len(p.name) + len(".compacting") <= 255 for p in (tmp_path / "logs").iterdir())
    again.close()


def test_an_empty_cluster_id_left_by_a_crash_is_replaced(tmp_path: Path) -> None:
    from groupclient.coordinator.core import _cluster_id

    (tmp_path / "cluster_id").write_text("")  # a crash between creating the file and writing it
    first = _cluster_id(tmp_path, random.Random(1))
    assert first.startswith("groupclient-") and _cluster_id(tmp_path, random.Random(2)) == first
    assert not (tmp_path / "cluster_id.partial").exists()
