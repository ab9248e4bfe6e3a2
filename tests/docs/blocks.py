"""The fenced code blocks of README.md and docs/*.md, each named by its file and first line.

A block's key, ``docs/cli.md: $ groupclient --version``, is what tests/docs/test_code_blocks.py
maps to the way the block is run, and what a test that mirrors a block names in its docstring.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language (``""`` for none) and its text."""

    path: str  # relative to the repository, e.g. "docs/cli.md"
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    key: str  # "docs/cli.md: <first line>", and " (2)" for the second block of a file with that line


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks_of(path: Path) -> list[Block]:
    source = path.read_text()
    found: list[Block] = []
    seen: dict[str, int] = {}
    for match in FENCE.finditer(source):
        indent = match.group("indent")
        body = "".join(line[len(indent):] if line.startswith(indent) else line
                       for line in match.group("body").splitlines(keepends=True))
        first = next((line.strip() for line in body.splitlines() if line.strip()), "")
        key = f"{path.relative_to(ROOT)}: {first}"
        seen[key] = seen.get(key, 0) + 1
        found.append(Block(str(path.relative_to(ROOT)), source.count("\n", 0, match.start()) + 1,
                           match.group("lang"), body, key if seen[key] == 1 else f"{key} ({seen[key]})"))
    return found


def all_blocks() -> list[Block]:
    return [block for path in doc_files() for block in blocks_of(path)]


def block(key: str) -> Block:
    """The block with this key (KeyError naming the key when the docs no longer have it)."""
    for found in all_blocks():
        if found.key == key:
            return found
    raise KeyError(f"no code block {key!r} in README.md or docs/*.md")
