"""The compiled record path (native/) and the Python one decode the same bytes into the same
records (type, fields, equality, repr, pickling), and bytes that are not a batch into the same
CorruptRecordError naming the partition and the batch's offset, after the same batches before
it.  Which path runs is GROUPCLIENT_RECORD_PATH's choice (groupclient.consumer.record_path)."""

from __future__ import annotations

import gc
import os
import pickle
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.errors import CorruptRecordError
from kafka.record.util import calc_crc32c

from groupclient.consumer import record_path, records
from groupclient.consumer.records import decode_batches, next_offset
from groupclient.errors import ConfigurationError, RecordDeserializationError
from tests.record_paths import native_module, on_path
from tests.unit.test_record_decoding import RECORDS, batch, legacy, recompressed

Outcome = tuple[list[list[tuple[Any, ...]]], "tuple[str, str] | None"]


def decoded(path: str, data: bytes, fetch_offset: int = 0, *, kd: Any = None, vd: Any = None,
            check_crcs: bool = True, aiokafka: bool = False) -> Outcome:
    """Each batch's records (type, fields, headers' type) on ``path``, then the error that ended
    them (its type and text), as the fetcher sees them."""
    batches: list[list[tuple[Any, ...]]] = []
    with on_path(path):
        try:
            for found in decode_batches(data, fetch_offset, "t", 3, kd, vd, check_crcs, aiokafka):
                batches.append([(type(r), tuple(r), type(r.headers)) for r in found])
        except Exception as exc:  # what the fetcher would keep and raise
            before = getattr(exc, "records_before", None)
            if before is not None:
                batches.append([(type(r), tuple(r), type(r.headers)) for r in before])
            return batches, (type(exc).__name__, str(exc))
    return batches, None


def same_on_both(data: bytes, fetch_offset: int = 0, **options: Any) -> Outcome:
    """The outcome on the compiled path, the same batch by batch, decoded ahead (one worker and
    two) and on the Python path."""
    native = decoded("native", data, fetch_offset, **options)
    for path in ("ahead", "ahead-2", "python"):
        assert decoded(path, data, fetch_offset, **options) == native, path
    return native


def with_crc(data: bytearray) -> bytes:
    """A single v2 batch whose CRC is made right again after an edit."""
    data[17:21] = calc_crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def test_the_compiled_path_is_built_where_a_toolchain_is() -> None:
    native = native_module()  # fails on a machine with cargo where the build failed
    if os.environ.get(record_path.ENVIRONMENT_VARIABLE, "auto") != "python":
        assert record_path.CHOSEN is native and record_path.active() == "native"


@pytest.mark.parametrize("compression", [0, 1, 2, 3, 4])  # none, gzip, snappy, lz4, zstd
@pytest.mark.parametrize("fetch_offset", [0, 101, 104, 107, 200])
@pytest.mark.parametrize("aiokafka", [False, True])
def test_the_same_records_on_both_paths(compression: int, fetch_offset: int, aiokafka: bool) -> None:
    data = batch(100, RECORDS, compression) + batch(105, RECORDS[:3], compression)
    batches, error = same_on_both(data, fetch_offset, aiokafka=aiokafka)
    assert error is None and sum(map(len, batches)) == len([o for o in range(100, 108) if o >= fetch_offset])


def test_records_compare_print_and_pickle_the_same() -> None:
    data = batch(0, RECORDS, 3)
    on = {}
    for path in ("native", "python"):
        with on_path(path):
            on[path] = [r for b in decode_batches(data, 0, "t", 3, None, None, True) for r in b]
    assert on["native"] == on["python"]
    assert [repr(r) for r in on["native"]] == [repr(r) for r in on["python"]]
    assert pickle.loads(pickle.dumps(on["native"])) == on["python"]
    assert [r._asdict() for r in on["native"]] == [r._asdict() for r in on["python"]]


def test_frames_of_other_producers_and_log_append_time() -> None:
    import gzip as gzip_module

    import lz4.frame
    import snappy
    import zstandard

    plain = batch(7, RECORDS)
    xerial = b"\x82SNAPPY\x00" + (1).to_bytes(4, "big") * 2
    frames = [
        (4, zstandard.ZstdCompressor(write_content_size=False).compress),
        (4, lambda b: zstandard.ZstdCompressor().compress(b[:50]) + zstandard.ZstdCompressor().compress(b[50:])),
        (3, lambda b: lz4.frame.compress(b, block_linked=False, content_checksum=True)),
        (3, lambda b: lz4.frame.compress(b, store_size=False) + lz4.frame.compress(b"more")),  # the first frame
        (1, lambda b: gzip_module.compress(b, compresslevel=1) + gzip_module.compress(b"more")),  # the first member
        (2, lambda b: xerial + len(snappy.compress(b[:40])).to_bytes(4, "big") + snappy.compress(b[:40])
         + len(snappy.compress(b[40:])).to_bytes(4, "big") + snappy.compress(b[40:])),
    ]
    expected = decoded("python", plain)
    for codec, compress in frames:
        assert same_on_both(recompressed(plain, codec, compress)) == expected
    log_append = bytearray(plain)
    log_append[22] |= 0x08  # the timestamp type: log append time, the batch's max timestamp for all
    batches, _ = same_on_both(with_crc(log_append))
    assert {r[1][4] for r in batches[0]} == {int.from_bytes(plain[35:43], "big")}


def test_deserializers_and_their_errors_are_the_same() -> None:
    def value(raw: bytes | None, headers: Any) -> Any:
        if raw == b"v1":
            raise ValueError("not this one")
        return (raw, tuple(headers))

    data = batch(0, RECORDS[1:]) + batch(4, RECORDS)
    for aiokafka in (False, True):
        batches, error = same_on_both(data, kd=lambda k, h: k, vd=value, aiokafka=aiokafka)
        assert error is not None and error[0] == RecordDeserializationError.__name__ and "offset 4" in error[1]
        assert [len(b) for b in batches] == [4, 0]  # the first batch, then none of the second's before it


def test_an_interrupt_in_a_deserializer_is_not_a_record_error() -> None:
    def interrupted(raw: bytes | None, headers: Any) -> Any:
        raise KeyboardInterrupt

    for path in ("native", "python"):
        with on_path(path), pytest.raises(KeyboardInterrupt):
            list(decode_batches(batch(0, RECORDS), 0, "t", 3, None, interrupted, True))


def corrupted(kind: str) -> bytes:
    good = batch(0, RECORDS[:2])
    bad = bytearray(batch(2, RECORDS))
    if kind == "crc":
        bad[-1] ^= 0xFF
    elif kind == "codec":
        bad[22] |= 0x07  # compression codec 7: none of Kafka's
        bad = bytearray(with_crc(bad))
    elif kind == "garbage":  # compressed data that is not lz4
        bad = bytearray(recompressed(bytes(bad), 3, lambda b: b"\x04\x22\x4d\x18" + b"\x00" * 20))
    elif kind == "truncated":  # a record section cut short: its records run past the batch
        bad = bad[:-40]
        bad[8:12] = (len(bad) - 12).to_bytes(4, "big")
        bad = bytearray(with_crc(bad))
    elif kind == "varint":  # a key length of eleven bytes
        bad = bytearray(batch(2, [(b"k", b"v", [])]))
        at = 61 + 1 + 1 + 1 + 1  # length, attributes, timestamp delta, offset delta: the key length
        bad[at:at + 1] = b"\xff" * 10 + b"\x01"
        bad[8:12] = (len(bad) - 12).to_bytes(4, "big")
        bad = bytearray(with_crc(bad))
    elif kind == "short":  # a batch whose length is shorter than its header
        bad[8:12] = (20).to_bytes(4, "big")
        return good + bytes(bad[:32])
    elif kind == "negative":  # a length that would step backwards
        bad[8:12] = (-12 & 0xFFFFFFFF).to_bytes(4, "big")
    return good + bytes(bad)


@pytest.mark.parametrize("kind", ["crc", "codec", "garbage", "truncated", "varint", "short", "negative"])
def test_bad_input_is_the_same_corrupt_record_error_on_both_paths(kind: str) -> None:
    data = corrupted(kind)
    batches, error = same_on_both(data)
    assert error is not None and error[0] == "RequestFailedError", error
    assert "CORRUPT_MESSAGE" in error[1] and "batch at offset 2 of t-3" in error[1], error
    assert [len(b) for b in batches] == [2], "the batch before it is handed out"
    if kind in ("short", "negative"):  # a length that cannot be stepped over ends the walk there
        assert next_offset(data, 0) == 2


def finishes(call: Any, *args: Any) -> Any:
    """``call(*args)``'s outcome, failing the test (not hanging it) if it loops for 5 s."""
    outcome: list[Any] = []
    thread = threading.Thread(target=lambda: outcome.append(call(*args)), daemon=True)
    thread.start()
    thread.join(5)
    assert not thread.is_alive(), f"{call.__name__} loops on a length that steps back"
    return outcome[0]


def test_a_batch_length_that_steps_back_ends_the_walk() -> None:
    """A negative batch length made next_offset() loop in place: the fetcher hung on one bad
    answer.  It ends the walk there; decoding reports the batch."""
    data = corrupted("negative")
    assert finishes(next_offset, data, 0) == 2
    batches, error = finishes(same_on_both, data)
    assert [len(b) for b in batches] == [2] and error is not None and "says it is -12 bytes long" in error[1]


def header_key_length(value: int) -> bytes:
    """A batch at offset 2 of one record with one header, whose key length is ``value``."""
    data = bytearray(batch(2, [(b"k", b"v", [("h", b"x")])]))
    at = data.index(b"\x02h\x02x", 61)  # the header: key length 1 (zigzag 2), "h", value length 1, "x"
    data[at] = ((value << 1) ^ (value >> 63)) & 0xFF  # zigzag, one byte
    return with_crc(data)


def test_a_negative_header_key_length_is_corrupt() -> None:
    """A header key of length -1 made the Python decoder step back and read the same bytes
    again: garbage headers, and with a large header count a loop that filled memory."""
    batches, error = same_on_both(header_key_length(-1))
    assert error is not None and "CORRUPT_MESSAGE" in error[1] and "header key of length -1" in error[1]


@pytest.mark.parametrize("codec", ["lz4", "snappy", "xerial"])
def test_a_frame_declaring_more_than_it_can_hold_is_corrupt_and_not_allocated(codec: str) -> None:
    """A frame whose header declares a terabyte: python-lz4 allocated what an lz4 frame declares
    before decoding it (MemoryError), and the snappy decoders said nothing but that they failed.
    Now the batch is corrupt at once, saying what the frame declares."""
    import lz4.frame
    import snappy

    plain = batch(2, RECORDS[:2])
    if codec == "lz4":
        frame = bytearray(lz4.frame.compress(plain[61:], store_size=True))
        frame[6:14] = (1 << 40).to_bytes(8, "little")  # the content size
        frame[14] = (xxh32(bytes(frame[4:14])) >> 8) & 0xFF  # the header checksum, made right
        data = recompressed(plain, 3, lambda b: bytes(frame))
    else:
        block = bytearray(snappy.compress(plain[61:]))
        block[:5] = b"\xff\xff\xff\xff\x0f"  # a length of 2**32 - 1, in place of the real one
        body = bytes(block) if codec == "snappy" else (
            b"\x82SNAPPY\x00" + (1).to_bytes(4, "big") * 2 + len(block).to_bytes(4, "big") + bytes(block))
        data = recompressed(plain, 2, lambda b: body)
    batches, error = same_on_both(data)
    assert error is not None and "declares" in error[1] and "batch at offset 2 of t-3" in error[1], error


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 (lz4 frames' checksum), for inputs under 16 bytes."""
    primes = (2654435761, 2246822519, 3266489917, 668265263, 374761393)
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    assert len(data) < 16
    h = (seed + primes[4] + len(data)) & mask
    i = 0
    while i + 4 <= len(data):
        h = (rotl((h + int.from_bytes(data[i:i + 4], "little") * primes[2]) & mask, 17) * primes[3]) & mask
        i += 4
    for byte in data[i:]:
        h = (rotl((h + byte * primes[4]) & mask, 11) * primes[0]) & mask
    h ^= h >> 15
    h = (h * primes[1]) & mask
    h ^= h >> 13
    h = (h * primes[2]) & mask
    return h ^ (h >> 16)


def test_a_negative_xerial_block_length_is_corrupt() -> None:
    import snappy

    plain = batch(2, RECORDS[:2])
    block = snappy.compress(plain[61:])
    body = b"\x82SNAPPY\x00" + (1).to_bytes(4, "big") * 2 + (-4 & 0xFFFFFFFF).to_bytes(4, "big") + block
    batches, error = finishes(same_on_both, recompressed(plain, 2, lambda b: body))
    assert error is not None and "cut short or negative" in error[1], error


def test_a_corrupt_record_error_is_kafka_pythons_class() -> None:
    with pytest.raises(CorruptRecordError):
        list(decode_batches(corrupted("crc"), 0, "t", 3, None, None, True))


def test_the_old_message_formats_go_through_the_python_path() -> None:
    data = batch(0, RECORDS[:2]) + legacy(1, 2, [(b"a", b"1"), (None, b"2")]) + batch(4, RECORDS[:1])
    batches, error = same_on_both(data)
    assert error is None and [len(b) for b in batches] == [2, 1, 1, 1]  # a batch per old-format message


def test_records_are_not_followed_by_the_collector_on_the_compiled_path() -> None:
    with on_path("native"):
        plain = [r for b in decode_batches(batch(0, RECORDS), 0, "t", 3, None, None, True, True) for r in b]
        kept = [r for b in decode_batches(batch(0, RECORDS), 0, "t", 3, None, lambda v, h: {"v": v}, True, True)
                for r in b]
        listed = [r for b in decode_batches(batch(0, RECORDS), 0, "t", 3, None, None, True) for r in b]
    assert not any(gc.is_tracked(r) for r in plain), "bytes, str, int, None and tuples of them"
    assert all(gc.is_tracked(r) for r in kept), "a dict (even one the collector skips now) may come to refer to it"
    assert not any(gc.is_tracked(r) or gc.is_tracked(r.headers) for r in listed), "kafka-python's list too"


def decode_anything(path: str, data: bytes, fetch_offset: int, check_crcs: bool) -> Outcome:
    return decoded(path, data, fetch_offset, check_crcs=check_crcs, vd=lambda v, h: v)


# repeated bytes, so that batches compress (a producer leaves a batch uncompressed when that is smaller)
_REPEATED = st.builds(lambda part, times: part * times, st.binary(max_size=20), st.integers(1, 15))
_BATCHES = st.lists(st.lists(st.tuples(st.none() | _REPEATED, st.none() | _REPEATED,
                                       st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)),
                                                max_size=2)),
                             min_size=1, max_size=12), min_size=1, max_size=3)


def built(batches: list[list[Any]], compression: int) -> bytes:
    data, base = b"", 0
    for records in batches:
        data += batch(base, records, compression)
        base += len(records)
    return data


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_BATCHES, st.sampled_from([0, 1, 2, 3, 4]), st.integers(0, 40), st.booleans())
def test_any_records_the_same_on_both_paths(batches: list[list[Any]], compression: int, fetch_offset: int,
                                            aiokafka: bool) -> None:
    same_on_both(built(batches, compression), fetch_offset, aiokafka=aiokafka)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_BATCHES, st.sampled_from([0, 1, 2, 3, 4]), st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)),
                                                      max_size=4),
       st.none() | st.integers(0, 10**6), st.booleans())
def test_any_damage_gives_the_same_outcome_on_both_paths(batches: list[list[Any]], compression: int,
                                                         edits: list[tuple[int, int]], cut: int | None,
                                                         check_crcs: bool) -> None:
    """Bytes changed and the end cut anywhere: the same records and the same error (never a hang,
    never a crash)."""
    data = bytearray(built(batches, compression))
    for at, value in edits:
        data[at % len(data)] = value
    if cut is not None:
        data = data[:cut % (len(data) + 1)]
    native = decode_anything("native", bytes(data), 0, check_crcs)
    assert native == decode_anything("python", bytes(data), 0, check_crcs)
    assert native == decode_anything("ahead", bytes(data), 0, check_crcs)
    assert native == decode_anything("ahead-2", bytes(data), 0, check_crcs)


def test_the_environment_variable_chooses_and_a_bad_value_says_what_to_set() -> None:
    assert record_path._choose("python", object()) is None  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="one of auto, native, python"):
        record_path._choose("fast", None)
    with pytest.raises(ConfigurationError, match="Rust toolchain"):
        record_path._choose("native", None)


@pytest.mark.parametrize("choice", ["python", "auto"])
def test_groupclient_version_says_which_path_decodes(choice: str) -> None:
    native_module()
    env = {**os.environ, record_path.ENVIRONMENT_VARIABLE: choice}
    out = subprocess.run([sys.executable, "-m", "groupclient", "--version"], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert ("record path: python" if choice == "python" else "record path: native") in out, out



def threads() -> int:
    """This process's threads, Rust's included (threading.enumerate() sees Python's only)."""
    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_a_big_compressed_answer_is_decoded_ahead_and_its_worker_ends_with_it() -> None:
    module = native_module()
    started: list[int] = []

    class Counting:  # the compiled module, counting the answers it decodes ahead
        def __getattr__(self, name: str) -> Any:
            return getattr(module, name)

        def decode_ahead(self, *args: Any) -> Any:
            started.append(len(args[0]))
            return module.decode_ahead(*args)

    records_: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]] = [
        (None, b"value %d " % i * 20, [("h", b"x")]) for i in range(400)]
    data = b"".join(batch(i * 400, records_, 3) for i in range(30))  # lz4, ~2 x 128 KiB
    assert len(data) >= records.AHEAD_FROM
    with on_path("python"):
        expected = [tuple(r) for b in decode_batches(data, 0, "t", 3, None, None, True) for r in b]
    before = threads()
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(record_path, "CHOSEN", Counting())
        assert [tuple(r) for b in decode_batches(data, 0, "t", 3, None, None, True) for r in b] == expected
        assert started == [len(data)]
        walk = decode_batches(data, 0, "t", 3, None, None, True)
        assert len(next(walk)) == 400
        assert threads() == before + 1  # the worker, holding the batches it decoded ahead
        del walk  # the answer let go part-way (a seek, a revoked partition): the worker is joined
        assert threads() == before


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_child_forked_while_an_answer_is_decoded_ahead_decodes_the_rest_itself() -> None:
    """A fork copies only the forking thread: the child has no worker, and must not wait for one,
    nor join the parent's on letting the answer go, nor take a lock a worker may have held at the
    fork (letting the answer go dropped the channels' receivers, whose lock a worker sending at
    that instant held: the child hung, once in about ten runs of the suite).  Forked at several
    points of the answer, so a worker is caught mid-send more often than by one fork."""
    records_: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]] = [
        (None, b"value %d " % i * 20, []) for i in range(400)]
    data = b"".join(batch(i * 400, records_, 3) for i in range(30))
    with on_path("python"):
        expected = [r.offset for b in decode_batches(data, 0, "t", 3, None, None, True) for r in b]
    deadline = time.monotonic() + 60  # bounded: every child together
    for taken in (1, 2, 5, 9, 17, 28):
        with on_path("ahead"):
            walk = decode_batches(data, 0, "t", 3, None, None, True)
            first = [r.offset for _, b in zip(range(taken), walk) for r in b]
            child = os.fork()
            if child == 0:  # the child: the rest of the answer, then out without the parent's exit handlers
                try:
                    rest = [r.offset for b in walk for r in b]
                    del walk
                    os._exit(0 if first + rest == expected else 1)
                finally:
                    os._exit(2)
            rest = [r.offset for b in walk for r in b]
        assert first + rest == expected
        while True:
            done, status = os.waitpid(child, os.WNOHANG)
            if done:
                assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (taken, status)
                break
            if time.monotonic() > deadline:
                os.kill(child, 9)
                os.waitpid(child, 0)
                pytest.fail(f"the child forked after {taken} batches hung decoding the rest of the answer")
            threading.Event().wait(0.05)
