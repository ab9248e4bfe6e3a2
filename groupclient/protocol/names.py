"""Kafka's rule for topic names (``Topic.validate`` in Java), which kafka-python also applies to
``group_instance_id``: shared by the consumer's argument checks and the coordinator's topics."""

from __future__ import annotations

import re

MAX_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")


def name_problem(name: str | None, kind: str = "topic name") -> str | None:
    """Why ``name`` is not a legal Kafka name, or None if it is."""
    if not name:
        return f"{kind} is empty"
    if name in (".", ".."):
        return f"{kind} cannot be '.' or '..'"
    if len(name) > MAX_LENGTH:
        return f"{kind} is longer than {MAX_LENGTH} characters: {name[:40]!r}..."
    if not _LEGAL.match(name):
        return f"{kind} {name!r} is illegal: it may only contain ASCII letters, digits, '.', '_' and '-'"
    return None
