"""What a consumer-protocol group subscribes to, resolved against the cluster's topics: names, and
patterns the coordinator resolves itself (KIP-848's ``SubscribedTopicRegex``, compiled and matched
as Kafka's RE2/J does: protocol/re2j.py).

The group epoch must move when a subscribed topic's metadata does (created, deleted, re-created
with a new id, given more partitions) and when a pattern comes to match another topic; Kafka 4.1
keeps a hash of the subscribed topics' metadata for this, here it is the metadata itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Protocol

from ...error_codes import ErrorCode
from ...protocol.re2j import Re2jPattern, Re2jSyntaxError, compile_re2j, matches_topic
from .errors import HeartbeatError

TopicId = uuid.UUID
Topics = Mapping[str, tuple[TopicId, int]]  # the cluster's topics: name -> (id, partition count)


class Subscriber(Protocol):
    """What of a member its subscription is."""

    topics: tuple[str, ...]
    regex: str | None


def compile_regex(pattern: str) -> Re2jPattern:
    """The pattern as Kafka's RE2/J compiles it; INVALID_REGULAR_EXPRESSION with RE2/J's words
    for what it would not compile (Kafka's message)."""
    try:
        return compile_re2j(pattern)
    except Re2jSyntaxError as exc:
        raise HeartbeatError(ErrorCode.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex `{pattern}` is not a "
                             f"valid regular expression: {exc.description}.") from None


# Kafka 4.1's GroupMetadataManager: patterns are resolved in the background, at most once per
# batch interval, and again when a topic was created or the refresh interval passed
REGEX_BATCH_REFRESH_INTERVAL_MS = 10_000
REGEX_REFRESH_INTERVAL_MS = 600_000  # group.consumer.regex.refresh.interval.ms


class SubscribedTopics:
    """The topics a group's members subscribe to, and their metadata when last looked at.

    Patterns are resolved by :meth:`resolve` only (the coordinator runs it off the heartbeat, as
    Kafka resolves them in the background); until then a new pattern matches nothing."""

    def __init__(self) -> None:
        self.metadata: dict[str, tuple[TopicId, int]] = {}  # subscribed and existing
        self._matches: dict[str, frozenset[str]] = {}  # pattern -> the topic names it matched
        self._resolved_at: int | None = None
        self._names_at_resolution: frozenset[str] = frozenset()
        self._seen: Topics | None = None  # the last topics looked at for new names
        self._new_topics = False
        self._refreshed_with: Topics | None = None  # the topics of the last refresh
        self._patterns: frozenset[str] = frozenset()  # the patterns in use at the last refresh

    def topics_of(self, member: Subscriber) -> frozenset[str]:
        """The names a member subscribes to, its pattern's matches included."""
        matched = self._matches.get(member.regex, frozenset()) if member.regex else frozenset()
        return frozenset(member.topics) | matched

    @property
    def matches(self) -> Mapping[str, frozenset[str]]:
        """What each pattern matched when last resolved."""
        return self._matches

    def restore(self, metadata: dict[str, tuple[TopicId, int]], matches: dict[str, frozenset[str]]) -> None:
        """Take what a journal kept; the patterns are resolved again on the next heartbeat (the
        topics created while the group was not served are not known)."""
        self.metadata = metadata
        self._matches = matches
        self._new_topics = True
        self._refreshed_with = None

    def is_resolved(self, pattern: str) -> bool:
        """Whether the pattern's matches are known."""
        return pattern in self._matches

    def refresh(self, members: Iterable[Subscriber], topics: Topics, force: bool = True) -> bool:
        """Whether the metadata of what the members subscribe to changed since last looked at.
        Without ``force`` (no member's subscription changed) only new ``topics`` are looked at:
        a heartbeat that changes nothing costs no pass over the members."""
        if not force and topics is self._refreshed_with:
            return False
        self._refreshed_with = topics
        names: set[str] = set()
        patterns: set[str] = set()
        for member in members:
            names |= self.topics_of(member)
            if member.regex:
                patterns.add(member.regex)
        self._patterns = frozenset(patterns)
        current = {name: topics[name] for name in sorted(names) if name in topics}
        if current == self.metadata:
            return False
        self.metadata = current
        return True

    def resolution_due(self, topics: Topics, now: int) -> bool:
        """Whether the patterns in use (as of the last refresh) should be resolved again: one is
        new, a topic was created since, or the refresh interval passed — and the last resolution
        is a batch interval old."""
        patterns = self._patterns
        if not patterns:
            return False
        if topics is not self._seen:
            self._seen = topics
            self._new_topics = self._new_topics or not set(topics) <= self._names_at_resolution
        if self._resolved_at is not None and now < self._resolved_at + REGEX_BATCH_REFRESH_INTERVAL_MS:
            return False
        return (bool(patterns - set(self._matches)) or self._new_topics
                or (self._resolved_at is not None and now > self._resolved_at + REGEX_REFRESH_INTERVAL_MS))

    def resolve(self, members: Iterable[Subscriber], topics: Topics, now: int) -> None:
        """Match every pattern in use against the topics' names (whole names, as RE2/J's matches())."""
        patterns = {m.regex for m in members if m.regex}
        compiled = {p: compile_regex(p) for p in patterns}
        self._matches = {p: frozenset(name for name in topics if matches_topic(compiled[p], name))
                         for p in sorted(patterns)}
        self._resolved_at = now
        self._names_at_resolution = frozenset(topics)
        self._new_topics = False
