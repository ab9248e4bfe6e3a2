"""Hypothesis strategies for Kafka messages, built from kafka-python's JSON schemas.

``messages(cls, version)`` walks the field schema of a request or response class at one version
and draws a valid object of it: integers of each width with their extremes, strings (null where
the schema allows it, empty, long, non-ASCII, NUL), arrays (null where allowed, empty, a few
elements, sometimes many), nested and tagged structs, bytes and record batches.  Names the
tests create (topics, groups) are drawn often, so requests also get past the first "unknown
topic" check of a handler.  ``encode_request`` and ``encode_response`` frame one with its header.

Everything drawn is well-formed for the schema, unless ``nulls`` asks for nulls anywhere; what a
peer does with bytes that are not is covered by spoiling these frames (``spoilers``: cut short,
bits flipped, bytes added).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from kafka.protocol.schemas.fields import ArrayField, BaseField, SimpleField, StructArrayField, StructField
from kafka.protocol.schemas.fields.codecs import (
    UUID, BitField, Boolean, Bytes, Float64, Int8, Int16, Int32, Int64, String, UnsignedInt16,
)
from kafka.record.default_records import DefaultRecordBatchBuilder

# names the fuzzed cluster knows; see tests/fuzz/server.py
TOPICS = ("fuzz-t0", "fuzz-t1")
GROUPS = ("fuzz-g0", "fuzz-g1")
WORDS = ("", "consumer", "range", "roundrobin", "cooperative-sticky", "PLAIN", "SCRAM-SHA-256", "m-1")

_INT_CODECS: dict[type, tuple[int, int]] = {
    Int8: (-(2**7), 2**7 - 1), Int16: (-(2**15), 2**15 - 1), UnsignedInt16: (0, 2**16 - 1),
    Int32: (-(2**31), 2**31 - 1), Int64: (-(2**63), 2**63 - 1),
}
_SIZE = struct.Struct(">i")


def ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    """Extremes and small values most of the time (where handlers branch), anything in range else."""
    special = sorted({v for v in (lo, lo + 1, -2, -1, 0, 1, 2, 3, hi - 1, hi) if lo <= v <= hi})
    return st.one_of(st.sampled_from(special), st.integers(lo, hi))


def texts(vocabulary: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(vocabulary),
        st.text(max_size=12),
        st.text(st.characters(codec="utf-8", min_codepoint=0x80), min_size=1, max_size=8),  # non-ASCII, astral too
        # long: at and past Kafka's topic name limit, and multi-byte (bytes count, not characters)
        st.sampled_from(["x" * 249, "x" * 250, "\u00e9" * 200, "\U0001f600" * 100, "a\x00b", " ", "." * 2]),
    )


def record_batches() -> st.SearchStrategy[bytes]:
    """Valid v2 record batches (uncompressed) of a few records with random keys and values."""
    record = st.tuples(st.one_of(st.none(), st.binary(max_size=16)), st.one_of(st.none(), st.binary(max_size=32)))

    def build(parts: tuple[list[tuple[bytes | None, bytes | None]], int, int]) -> bytes:
        records, timestamp, producer_id = parts
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                            producer_id=producer_id, producer_epoch=-1 if producer_id < 0 else 0,
                                            base_sequence=-1 if producer_id < 0 else 0, batch_size=2**20)
        for delta, (key, value) in enumerate(records):
            builder.append(delta, timestamp, key, value, [])
        return bytes(builder.build())

    return st.tuples(st.lists(record, min_size=1, max_size=4), ints(-1, 2**41), st.sampled_from([-1, 0, 7])).map(build)


def _vocabulary(field: BaseField) -> tuple[str, ...]:
    entity = field._entity_type
    if entity == "topicName" or field.name in ("topic", "name"):
        return TOPICS + WORDS
    if entity == "groupId":
        return GROUPS + WORDS
    return WORDS + TOPICS + GROUPS


def _simple(field: SimpleField, version: int, nullable: bool) -> st.SearchStrategy[Any]:
    codec = field._type
    if codec in _INT_CODECS:
        strategy: st.SearchStrategy[Any] = ints(*_INT_CODECS[codec])
    elif codec is Boolean:
        strategy = st.booleans()
    elif codec is Float64:
        strategy = st.floats(allow_nan=False)  # NaN never equals itself: kept out of round trips
    elif codec is UUID:
        strategy = st.one_of(st.none(), st.uuids(), st.just(uuid.UUID(int=2**128 - 1)))
    elif codec is BitField:
        strategy = st.one_of(st.none(), st.sets(st.integers(0, 30), max_size=4))
    elif isinstance(codec, String):
        strategy = texts(_vocabulary(field))
    elif codec is Bytes and field.type_str == "records":
        strategy = st.one_of(record_batches(), st.binary(max_size=48))
    elif codec is Bytes:
        strategy = st.binary(max_size=48)
    else:
        raise AssertionError(f"no strategy for {field!r}")
    return st.one_of(st.none(), strategy) if nullable else strategy


_cache: dict[tuple[int, int, bool], st.SearchStrategy[Any]] = {}


def _struct(struct_field: StructField, version: int, build: Callable[..., Any], nulls: bool) -> st.SearchStrategy[Any]:
    """Objects of ``struct_field`` at ``version``: every field of that version, tagged ones too."""
    key = (id(struct_field), version, nulls)
    found = _cache.get(key)
    if found is not None:
        return found
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for field in struct_field._fields:
        if not field.for_version_q(version):
            continue
        value = _field(field, version, nulls)
        if field.tagged_field_q(version):
            value = st.one_of(st.just(field.default), value)  # a tagged field is mostly absent
        parts[field.name] = value
    strategy = st.fixed_dictionaries(parts).map(lambda values: build(version=version, **values))
    _cache[key] = strategy
    return strategy


def _many(element: st.SearchStrategy[Any], most: int) -> st.SearchStrategy[list[Any]]:
    """Long arrays, cheaply: one drawn element repeated (duplicate entries are an edge case too)."""
    return st.tuples(element, st.integers(20, most)).map(lambda drawn: [drawn[0]] * drawn[1])


def _field(field: BaseField, version: int, nulls: bool) -> st.SearchStrategy[Any]:
    nullable = field.nullable_for_version_q(version) or (nulls and not _fixed_size(field))
    if isinstance(field, StructArrayField):
        element = _struct(field.array_of, version, field.data_class, nulls)
        base: st.SearchStrategy[Any] = st.lists(element, max_size=3)
        if not any(isinstance(f, ArrayField) for f in field.array_of.untagged_fields(version)):
            base = st.one_of(base, _many(element, 100))  # long arrays at the leaves only: bounded in all
    elif isinstance(field, ArrayField):
        # never a null element: a null inside an array is not well-formed in Kafka's schemas
        element = _simple(field.array_of, version, nullable=False)
        base = st.one_of(st.lists(element, max_size=3), _many(element, 300))
    elif isinstance(field, StructField):
        base = _struct(field, version, field.data_class, nulls)
    elif isinstance(field, SimpleField):
        return _simple(field, version, nullable)
    else:
        raise AssertionError(f"no strategy for {field!r}")
    return st.one_of(st.none(), base) if nullable else base


def _fixed_size(field: BaseField) -> bool:
    """Integers, booleans, UUIDs, structs that are not nullable: a null cannot even be encoded."""
    if isinstance(field, SimpleField):
        return field._type in _INT_CODECS or field._type in (Boolean, Float64, UUID, BitField)
    return isinstance(field, StructField)


def messages(cls: Any, version: int, nulls: bool = False) -> st.SearchStrategy[Any]:
    """Objects of the request or response class ``cls`` at ``version``.  With ``nulls``, any
    string, bytes, array or struct may be null, even where the schema does not allow it: kafka-python
    reads such a message without complaint (Kafka's own parsers refuse it)."""
    return _struct(cls._struct, version, cls, nulls)


# -- frames ----------------------------------------------------------------------------------
def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def with_unknown_tag(message: Any, payload: bytes, tag: int, value: bytes) -> bytes:
    """``payload`` (the encoded ``message``, headers included) with an unknown tagged field added to
    the top-level struct, which a reader must skip (KIP-482).  Unchanged unless the version is
    flexible and the message sets no top-level tagged field: its payload then ends with the
    empty tag section (a 0 byte) this replaces."""
    version = message.version
    tagged = message._struct.tagged_fields(version)._fields
    if not message.flexible_version_q(version) or any(getattr(message, f.name) != f.default for f in tagged):
        return payload
    assert payload[-1] == 0
    return payload[:-1] + b"\x01" + uvarint(tag) + uvarint(len(value)) + value


def client_ids() -> st.SearchStrategy[str | None]:
    return st.one_of(st.none(), texts(("", "fuzz", "groupclient-1")))


def correlation_ids() -> st.SearchStrategy[int]:
    return ints(-(2**31), 2**31 - 1)


def encode_request(request: Any, correlation_id: int, client_id: str | None) -> bytes:
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(request.encode(header=True, framed=True))


def encode_response(response: Any, correlation_id: int) -> bytes:
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))


@dataclass(frozen=True)
class Spoil:
    """One way to spoil a frame (size prefix included) inside it, keeping the size prefix true to
    the new payload so that the peer reads a whole frame: ``cut`` it short (to ``cut`` modulo its
    length), flip bits (``flips``: (position, bit), positions modulo its length), or add ``extra``
    bytes."""

    name: str
    cut: int | None = None
    flips: tuple[tuple[int, int], ...] = ()
    extra: bytes = b""

    def __call__(self, frame: bytes) -> bytes:
        payload = frame[4:]
        data = bytearray(payload if self.cut is None else payload[:self.cut % max(len(payload), 1)])
        for pos, bit in self.flips:
            if data:
                data[pos % len(data)] ^= 1 << bit
        data += self.extra
        return _SIZE.pack(len(data)) + bytes(data)


def spoilers() -> st.SearchStrategy[Spoil]:
    flips = st.lists(st.tuples(st.integers(0, 2**16), st.integers(0, 7)), min_size=1, max_size=4)
    # flips past the fixed header (api key, version, correlation id) or past a response's
    # correlation id: the frame keeps answering, or asking, the same thing
    body_flips = st.lists(st.tuples(st.integers(8, 2**12), st.integers(0, 7)), min_size=1, max_size=4)
    return st.one_of(
        st.integers(0, 2**16).map(lambda n: Spoil("truncated", cut=n)),
        flips.map(lambda f: Spoil("bit-flipped", flips=tuple(f))),
        body_flips.map(lambda f: Spoil("body-flipped", flips=tuple(f))),
        st.binary(min_size=1, max_size=16).map(lambda extra: Spoil("extended", extra=extra)),
    )
