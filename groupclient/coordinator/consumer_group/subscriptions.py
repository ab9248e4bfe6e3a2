"""What a consumer-protocol group subscribes to, resolved against the cluster's topics: names, and
patterns the coordinator resolves itself (KIP-848's ``SubscribedTopicRegex``, Java's RE2/J syntax;
the client refuses what RE2/J would read differently, so Python's ``re`` reads the rest the same).

The group epoch must move when a subscribed topic's metadata does (created, deleted, re-created
with a new id, given more partitions) and when a pattern comes to match another topic; Kafka 4.1
keeps a hash of the subscribed topics' metadata for this, here it is the metadata itself.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Protocol

from ...error_codes import ErrorCode
from ...protocol.re2j import lacking
from .errors import HeartbeatError

TopicId = uuid.UUID
Topics = Mapping[str, tuple[TopicId, int]]  # the cluster's topics: name -> (id, partition count)


class Subscriber(Protocol):
    """What of a member its subscription is."""

    topics: tuple[str, ...]
    regex: str | None


def compile_regex(pattern: str) -> re.Pattern[str]:
    """The pattern, matched against whole topic names; INVALID_REGULAR_EXPRESSION for what Kafka's
    RE2/J would not compile."""
    what = lacking(pattern)
    try:
        if what is None:
            return re.compile(pattern)
    except re.error as exc:
        what = str(exc)
    raise HeartbeatError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                         f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {what}.")


class SubscribedTopics:
    """The topics a group's members subscribe to, and their metadata when last looked at."""

    def __init__(self) -> None:
        self.metadata: dict[str, tuple[TopicId, int]] = {}  # subscribed and existing
        self._topics: Topics = {}
        self._matches: dict[str, frozenset[str]] = {}  # pattern -> the topic names it matches

    def topics_of(self, member: Subscriber) -> frozenset[str]:
        """The names a member subscribes to, its pattern's matches included."""
        matched = self._matches.get(member.regex, frozenset()) if member.regex else frozenset()
        return frozenset(member.topics) | matched

    def refresh(self, members: Iterable[Subscriber], topics: Topics | None = None) -> bool:
        """Look again (at ``topics``, or at the topics last given); whether the metadata of what
        the members subscribe to changed."""
        members = list(members)
        if topics is not None and topics is not self._topics:
            self._topics = topics
            self._matches = {}
        for pattern in {m.regex for m in members if m.regex} - set(self._matches):
            compiled = compile_regex(pattern)
            self._matches[pattern] = frozenset(name for name in self._topics if compiled.fullmatch(name))
        names: set[str] = set()
        for member in members:
            names |= self.topics_of(member)
        current = {name: self._topics[name] for name in sorted(names) if name in self._topics}
        if current == self.metadata:
            return False
        self.metadata = current
        return True
