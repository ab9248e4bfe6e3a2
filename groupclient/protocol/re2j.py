"""What a broker's RE2/J regular expressions lack that Python's ``re`` has: KIP-848's
``SubscribedTopicRegex`` is compiled by the broker with RE2/J, so the consumer refuses these before
sending a pattern, and the embedded coordinator refuses them as Kafka's RE2/J would.

Both read the rest the same (classes, alternation, groups and ``(?P<name>...)``, counted
repetition, ``(?i)``/``(?s)``/``(?m)``, ``\\d``, ``\\w``, ``\\s`` over ASCII topic names).
"""

from __future__ import annotations

import re

# (what Python reads and RE2/J refuses or reads otherwise, what it is called)
READ_OTHERWISE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\(\?<?[=!]"), "look-ahead and look-behind"),
    (re.compile(r"\\[1-9]|\(\?P="), "back-references"),
    (re.compile(r"\(\?>|[*+?}]\+"), "atomic groups and possessive quantifiers"),
    (re.compile(r"\(\?\("), "conditionals"),
    (re.compile(r"\(\?[imsuxaL-]*[xaL][imsuxaL-]*[:)]"), "the x (verbose), a (ASCII) and L (locale) flags"),
    (re.compile(r"\\Z"), r"\Z (a whole-name match needs no anchor; RE2/J writes the end \z)"),
)

# what RE2/J refuses outright that Python's ``re`` also has
REFUSED: tuple[tuple[re.Pattern[str], str], ...] = READ_OTHERWISE + (
    (re.compile(r"\\N\{"), r"named characters (\N{...})"),
    (re.compile(r"\(\?#"), "comments ((?#...))"),
)


def without_escaped_backslashes(pattern: str) -> str:
    """The pattern with ``\\\\`` (a literal backslash) blanked, so ``\\\\1`` is not read as a
    back-reference; escaped brackets are blanked too (``\\(?=`` is literal text)."""
    return re.sub(r"\\\\|\\[()]", "__", pattern)


def lacking(pattern: str, table: tuple[tuple[re.Pattern[str], str], ...] = REFUSED) -> str | None:
    """What of ``table`` the pattern uses (the first found), or None."""
    text = without_escaped_backslashes(pattern)
    return next((what for finder, what in table if finder.search(text)), None)
