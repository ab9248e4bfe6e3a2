"""A ``subscribe(pattern=...)`` under ``group_protocol='consumer'`` is evaluated by the broker
(KIP-848's SubscribedTopicRegex), which compiles it with RE2/J and matches whole topic names.
The pattern is checked here as RE2/J reads it (protocol/re2j.py: RE2, with RE2/J's differences),
and one the broker would refuse is refused before anything is sent, in RE2/J's words.

RE2/J is not Python's ``re``.  What it lacks: look-around (``(?=``, ``(?!``, ``(?<=``, ``(?<!``),
back-references (``\\1``, ``(?P=name)``), atomic groups and possessive quantifiers, conditionals,
comments, the verbose, ASCII and locale flags, ``\\Z`` (RE2/J writes it ``\\z``; a whole-name
match needs neither), named characters (``\\N{...}``).  What it has that ``re`` has not: ``\\Q...\\E``
(a literal), POSIX classes (``[[:digit:]]``), Unicode classes (``\\pL``), flags anywhere
(``orders-(?i)EU``).  And what both accept but read otherwise: ``a{,3}`` is the literal text
``a{,3}`` to RE2/J (``re`` reads ``a{0,3}``).  The classic protocol's patterns are the client's own,
matched with ``re``, as kafka-python's.
"""

from __future__ import annotations

from ..errors import ConfigurationError
from ..protocol.re2j import Re2jSyntaxError, compile_re2j


def broker_regex(pattern: str) -> str:
    """``pattern``, once RE2/J would compile it, or ConfigurationError saying why it would not."""
    try:
        compile_re2j(pattern)
    except Re2jSyntaxError as exc:
        raise ConfigurationError(
            f"the topic pattern {pattern!r} is not a regular expression the broker's RE2/J reads "
            f"({exc.description}); under group_protocol='consumer' the broker evaluates the pattern: "
            "write it in RE2/J's syntax (no look-around or back-references), subscribe to topic names, "
            "or use group_protocol='classic'") from None
    return pattern
