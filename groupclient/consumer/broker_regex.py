"""A ``subscribe(pattern=...)`` under ``group_protocol='consumer'`` is evaluated by the broker
(KIP-848's SubscribedTopicRegex), which compiles it with RE2/J and matches whole topic names.
Python's ``re`` accepts more than RE2/J; what RE2/J would refuse or read differently is refused
here, with what to write instead, before anything is sent.

What differs:

- refused: look-around (``(?=``, ``(?!``, ``(?<=``, ``(?<!``), back-references (``\\1``,
  ``(?P=name)``), atomic groups and possessive quantifiers (``(?>``, ``a*+``), conditionals
  (``(?(1)``), the verbose, ASCII and locale flags (``(?x)``, ``(?a)``, ``(?L)``), ``\\Z``
  (RE2/J writes it ``\\z``; a whole-name match needs neither);
- the same: classes, alternation, groups and named groups (``(?P<name>...)``), counted
  repetition, ``(?i)``/``(?s)``/``(?m)``, ``\\d``, ``\\w``, ``\\s`` (topic names are ASCII);
- matching: the whole topic name must match, as with the classic protocol here and in Java.
"""

from __future__ import annotations

import re

from ..errors import ConfigurationError
from ..protocol.re2j import READ_OTHERWISE, lacking


def broker_regex(pattern: str) -> str:
    """``pattern`` as the broker's RE2/J reads it, or ConfigurationError saying what RE2/J lacks."""
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ConfigurationError(f"bad topic pattern {pattern!r}: {exc}") from None
    what = lacking(pattern, READ_OTHERWISE)
    if what is not None:
        raise ConfigurationError(
            f"the topic pattern {pattern!r} uses {what}, which the broker's RE2/J regular expressions do not "
            "have; under group_protocol='consumer' the broker evaluates the pattern: rewrite it without "
            "them, subscribe to topic names, or use group_protocol='classic'")
    return pattern

