"""KIP-848's ``SubscribedTopicRegex`` as the broker reads it: Kafka compiles it with RE2/J and
matches whole topic names.  Here it is compiled with RE2 (google-re2): RE2/J is RE2's Java port,
with the same syntax and matching, and the few differences are added here, all calibrated against
Kafka 4.4's answers (tests/integration/test_broker_regex.py):

- RE2/J refuses ``\\C`` (any byte) and a capture group name used twice;
- an error is described as RE2/J describes it (what Kafka's INVALID_REGULAR_EXPRESSION message
  ends with): ``missing closing )``, where RE2 says ``missing )``.

Both the consumer (refusing a pattern before it is sent) and the embedded coordinator (answering
a member's heartbeat) use :func:`compile_re2j`.
"""

from __future__ import annotations

import functools
import re
from typing import Protocol

import re2  # type: ignore[import-untyped]

# RE2's error text (before ": <the part of the pattern>") -> RE2/J's description of the same error
_DESCRIPTIONS = {
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    # RE2/J has no error of its own for a ")" without "(": Kafka 4.4 answers its internal error
    "unexpected )": "regexp/syntax: internal error",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid named capture group": "invalid named capture",
}

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print every refused pattern to the process's stderr

_ANY_BYTE = re.compile(r"\\C")
_GROUP_NAME = re.compile(r"\(\?P?<([^>]*)>")


class Re2jSyntaxError(ValueError):
    """A pattern RE2/J does not compile; ``description`` is RE2/J's words for why."""

    def __init__(self, pattern: str, description: str) -> None:
        super().__init__(f"{pattern!r}: {description}")
        self.pattern = pattern
        self.description = description


class Re2jPattern(Protocol):
    """A compiled pattern (RE2's); :func:`matches_topic` is how a topic name is matched."""

    def fullmatch(self, text: str) -> object: ...


def _escapes_blanked(pattern: str) -> str:
    """``pattern`` with each escaped backslash and escaped bracket blanked, so that ``\\\\C`` or
    ``\\(?P<a>`` is not read as an escape or a group."""
    return re.sub(r"\\\\|\\[()]", "__", pattern)


def _re2j_refuses(pattern: str) -> str | None:
    """What RE2/J refuses that RE2 compiles, in RE2/J's words, or None."""
    text = _escapes_blanked(pattern)
    if _ANY_BYTE.search(text):
        return "invalid escape sequence"
    names = _GROUP_NAME.findall(text)
    if len(names) != len(set(names)):
        return "duplicate capture group name"
    return None


@functools.lru_cache(maxsize=256)
def compile_re2j(pattern: str) -> Re2jPattern:
    """``pattern`` compiled as RE2/J compiles it, or :class:`Re2jSyntaxError`."""
    try:
        compiled: Re2jPattern = re2.compile(pattern, options=_OPTIONS)
    except re2.error as exc:
        text = exc.args[0].decode("utf-8", "replace") if isinstance(exc.args[0], bytes) else str(exc.args[0])
        code = text.split(": ", 1)[0]
        raise Re2jSyntaxError(pattern, _DESCRIPTIONS.get(code, code)) from None
    refused = _re2j_refuses(pattern)
    if refused is not None:
        raise Re2jSyntaxError(pattern, refused)
    return compiled


def matches_topic(pattern: Re2jPattern, topic: str) -> bool:
    """Whether the whole topic name matches (Java's ``Matcher.matches()``, as Kafka's)."""
    return pattern.fullmatch(topic) is not None
