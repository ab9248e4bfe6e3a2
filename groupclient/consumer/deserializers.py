"""Key and value deserializers as kafka-python accepts them, checked when the consumer is built.

A deserializer is either a plain callable ``f(data)`` or an object with kafka-python's
``Deserializer`` method ``deserialize(topic, headers, data)`` (or the older
``deserialize(topic, data)``).  Which form an object has is decided once, from its signature,
not per record by catching TypeError as kafka-python does: a TypeError raised inside a
deserializer is the deserializer's own error and reaches the caller unchanged.
"""

from __future__ import annotations

import inspect
from typing import Any

from ..errors import ConfigurationError
from .records import Deserializer, Headers


def check_deserializer(name: str, value: Any) -> None:
    """Refuse at construction what could only fail at the first record."""
    if value is None:
        return
    method = getattr(value, "deserialize", None)
    if method is not None:
        if not callable(method):
            raise ConfigurationError(f"{name}: its deserialize attribute is not callable")
        _positional_count(name, method)
        return
    if not callable(value):
        raise ConfigurationError(
            f"{name} must be a callable taking the bytes, or an object with "
            f"deserialize(topic, headers, data); got {type(value).__name__}")


def _positional_count(name: str, method: Any) -> int:
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return 3  # a builtin without a signature: assume kafka-python's current form
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return 3
    count = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)
    if count not in (2, 3):
        raise ConfigurationError(
            f"{name}.deserialize must take (topic, headers, data) or (topic, data), not {count} arguments")
    return count


def bind(name: str, value: Any, topic: str) -> Deserializer:
    """The deserializer as the record decoder calls it: ``f(data, headers)``, for one topic."""
    if value is None:
        return None
    method = getattr(value, "deserialize", None)
    if method is None:
        plain = value

        def call_plain(data: bytes | None, headers: Headers) -> Any:
            return plain(data)
        return call_plain
    if _positional_count(name, method) == 3:
        def call_with_headers(data: bytes | None, headers: Headers) -> Any:
            return method(topic, headers, data)
        return call_with_headers

    def call_without_headers(data: bytes | None, headers: Headers) -> Any:
        return method(topic, data)
    return call_without_headers
