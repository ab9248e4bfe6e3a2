"""Reading Kafka messages from a peer's bytes.

kafka-python's generated decoders, with changes that matter when the bytes come from a peer
that may be broken or hostile:

- Tagged fields (KIP-482) are read in place.  kafka-python's generated code copies the rest of
  the message for every struct that carries tagged fields, so a message of many small entries
  with a tag each costs time quadratic in its size: one 2.4 MB request kept the coordinator's
  event loop, and so every connection, busy for over ten seconds; one of 100 MB (what
  max_request_bytes lets in) would for hours.
- A message whose fields run past its end is refused (kafka-python cuts a last string or bytes
  field short without a word), and so is a varint longer than 5 bytes.
- A null where the schema does not allow one is refused, as Kafka's own parsers
  refuse it ("non-nullable field ... was serialized as null").  kafka-python reads it as None,
  which no handler written for the schema expects.

Only the decoders are replaced; the messages they build are kafka-python's own classes.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from typing import Any

from kafka.protocol.metadata.api_versions import ApiVersionsResponse
from kafka.protocol.schemas.fields import ArrayField, BaseField, SimpleField, StructArrayField, StructField
from kafka.protocol.schemas.fields.codecs import UUID, BitField, Bytes, String
from kafka.protocol.schemas.fields.codegen import CodegenContext

Decoder = Callable[[Any, int], tuple[Any, int]]  # (data, pos) -> (message, pos after it)

_decoders: dict[tuple[type, int], Decoder] = {}
_compiling = threading.Lock()


class MalformedMessage(ValueError):
    """The bytes are not a message of the schema at that version."""


def read_uvarint(data: Any, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes (Kafka's 32-bit ones) at ``pos``, and the position after it."""
    value = 0
    for shift in range(0, 35, 7):
        if pos >= len(data):
            raise MalformedMessage("a varint runs past the end of the message")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
    raise MalformedMessage("a varint is longer than 5 bytes")


def read_tagged_fields(fields: Any, data: Any, pos: int, version: int) -> tuple[dict[str, Any], int]:
    """A tagged-field section at ``pos``: {field name, or "_<tag>" for a tag this schema does not
    know: value} and the position after it.  Copies only each field's own bytes."""
    count, pos = read_uvarint(data, pos)
    found: dict[str, Any] = {}
    for _ in range(count):  # bounded by the data: each field takes two bytes at least
        tag, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        end = pos + size
        if end > len(data):
            raise MalformedMessage(f"tagged field {tag} runs past the end of the message")
        field = fields._tags.get(tag)
        if field is None:
            found[f"_{tag}"] = bytes(data[pos:end])
        else:
            # struct tags have an empty nested tag section (tagged=None), as kafka-python reads them
            found[field.name] = field.decode(io.BytesIO(data[pos:end]), version=version, compact=True, tagged=None)
        pos = end
    return found, pos


def _emit_tagged_decode_in_place(self: StructField, ctx: CodegenContext, var_name: str, indent: str,
                                 version: int) -> None:
    """StructField._emit_tagged_decode, reading the section in place (read_tagged_fields); the
    same tags and unknown_tags as kafka-python's."""
    fields_var = ctx.next_var("tf")
    ctx.globs[fields_var] = self.tagged_fields(version)
    ctx.globs["_read_tagged_fields"] = read_tagged_fields
    ctx.emit(indent, f"_tfd, pos = _read_tagged_fields({fields_var}, data, pos, {version})")
    ctx.emit(indent, "for _tk, _tv in _tfd.items():")
    ctx.emit(indent, '    if _tk.startswith("_"):')
    ctx.emit(indent, f"        if {var_name}.unknown_tags is None: {var_name}.unknown_tags = {{}}")
    ctx.emit(indent, f"        {var_name}.unknown_tags[_tk] = _tv")
    ctx.emit(indent, "    else:")
    ctx.emit(indent, f"        if {var_name}.tags is None: {var_name}.tags = set()")
    ctx.emit(indent, f"        {var_name}.tags.add(_tk)")
    ctx.emit(indent, f"        setattr({var_name}, _tk, _tv)")


def _compile(cls: Any, version: int) -> Decoder:
    struct: StructField = cls._struct
    flexible = bool(cls.flexible_version_q(version))
    ctx = CodegenContext()
    ctx.lines.append("def _decode(data, pos):")
    # kafka-python's own code generator, with the tagged-field step swapped for the duration
    # (under the lock; a kafka-python decoder compiled meanwhile by another thread just gets
    # the in-place reading too), building instances of ``cls`` (StructField.compiled_decode_from
    # likewise sets the data class for the top-level struct while generating)
    with _compiling:
        original_emit, saved_class = StructField._emit_tagged_decode, struct._data_class
        StructField._emit_tagged_decode = _emit_tagged_decode_in_place
        struct._data_class = cls
        try:
            struct.emit_decode_from(ctx, "obj", "    ", version=version, compact=flexible, tagged=flexible)
        finally:
            StructField._emit_tagged_decode = original_emit
            struct._data_class = saved_class
    ctx.emit("    ", "return obj, pos")
    exec(compile(ctx.source(), f"<groupclient-decode:{struct.name}_v{version}>", "exec"), ctx.globs)
    decoder: Decoder = ctx.globs["_decode"]
    return decoder


def _decoder(cls: Any, version: int) -> Decoder:
    key = (cls, version)
    found = _decoders.get(key)
    if found is None:
        found = _decoders[key] = _compile(cls, version)
    return found


def decode_body(cls: Any, data: Any, version: int) -> Any:
    """The message of class ``cls`` (kafka-python's request or response class, not a versioned
    one) at ``version`` that ``data`` (bytes or a memoryview, no header) holds."""
    cls = cls[None]  # a versioned class (kafka-python's Response[3]) reads as its primary class
    if not 0 <= version <= cls.max_version:
        raise MalformedMessage(f"{cls.__name__} has no version {version}")
    view = data if isinstance(data, memoryview) else memoryview(data)
    try:
        message, end = _decoder(cls, version)(view, 0)
    except MalformedMessage:
        raise
    except Exception as exc:  # struct.error, IndexError, UnicodeDecodeError...
        raise MalformedMessage(f"undecodable {cls.__name__} v{version}: {exc!r}") from None
    if end > len(view):
        raise MalformedMessage(f"{cls.__name__} v{version} runs {end - len(view)} bytes past the end of the message")
    check_nulls(message, cls._struct, version, cls.__name__)
    return message


def decode_request(cls: Any, data: Any, version: int) -> Any:
    """A request with its header, as the coordinator reads it: strictly (see the module's doc)."""
    raw = data if isinstance(data, bytes) else bytes(data)
    stream = io.BytesIO(raw)  # shares the bytes, no copy
    try:
        header = cls.parse_header(stream, version=version)
    except Exception as exc:
        raise MalformedMessage(f"undecodable {cls.__name__} v{version} header: {exc!r}") from None
    request = decode_body(cls, memoryview(raw)[stream.tell():], version)
    request._header = header
    return request


def decode_response(cls: Any, payload: Any, version: int) -> Any:
    """A response as a client reads it, strictly (see the module's doc): ``payload`` is the frame
    after its size (header and body).  An ApiVersions answer's header is always v0, and its body
    v0 when it carries an error (KIP-511), as kafka-python reads it."""
    view = payload if isinstance(payload, memoryview) else memoryview(payload)
    if len(view) < 4:
        raise MalformedMessage("a response shorter than its correlation id")
    api_versions = issubclass(cls, ApiVersionsResponse)
    start = 4
    if cls.flexible_version_q(version) and not api_versions:
        start = _skip_tagged_fields(view, start)
    if api_versions and bytes(view[4:6]) != b"\x00\x00":
        version = 0
    response = decode_body(cls, view[start:], version)
    response._header = cls.header_class(correlation_id=int.from_bytes(view[:4], "big", signed=True))
    return response


def _skip_tagged_fields(data: Any, pos: int) -> int:
    """The position after a tagged-field section that is skipped, not read (a response header's)."""
    count, pos = read_uvarint(data, pos)
    for _ in range(count):  # bounded by the data: each field takes two bytes at least
        _, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        pos += size
        if pos > len(data):
            raise MalformedMessage("tagged fields run past the end of the message")
    return pos


# -- nulls where the schema has none ---------------------------------------------------------------
def _may_be_null(field: BaseField, version: int) -> bool:
    if field.nullable_for_version_q(version):
        return True
    # kafka-python reads an all-zero UUID and an empty bit field as None
    return isinstance(field, SimpleField) and field._type in (UUID, BitField)


def check_nulls(message: Any, struct: StructField, version: int, path: str) -> None:
    """Raise MalformedMessage if a field of ``message`` (untagged, at ``version``) is null where
    the schema does not allow it, or an array of strings or bytes has a null element."""
    for field in struct.untagged_fields(version):
        value = getattr(message, field.name)
        where = f"{path}.{field.name}"
        if value is None:
            if not _may_be_null(field, version):
                raise MalformedMessage(f"non-nullable field {where} is null")
        elif isinstance(field, StructArrayField):
            for element in value:
                check_nulls(element, field.array_of, version, where)
        elif isinstance(field, ArrayField):
            if isinstance(field.array_of._type, String) or field.array_of._type is Bytes:
                if any(element is None for element in value):
                    raise MalformedMessage(f"array {where} has a null element")
        elif isinstance(field, StructField):
            check_nulls(value, field, version, where)
