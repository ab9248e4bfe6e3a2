"""The layer table of docs/design.md, enforced: every module of groupclient belongs to a layer,
imports only modules of its own layer or of layers above it in the table, layers kept apart
(``APART``) do not import each other at all, and no modules import each other in a loop.
Imports are read with ``ast``, wherever they stand: inside functions and under
``if TYPE_CHECKING:`` too (a type-only import is still a dependency a reader must follow).

``python -m tests.test_layers`` prints every module's layer and imports.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "groupclient"
DESIGN = ROOT / "docs" / "design.md"

# Loops that stay, each with why (none today: add one only with a reason a reader accepts).
ALLOWED_CYCLES: dict[frozenset[str], str] = {}

# Layers of the table that must not import each other either way, although the table puts one above
# the other (a table orders its rows; it cannot say "side by side"): the three kinds of group, which
# meet only in the group coordinator below them.
APART: tuple[frozenset[str], ...] = (frozenset({"classic groups", "consumer groups"}),
                                     frozenset({"classic groups", "share groups"}),
                                     frozenset({"consumer groups", "share groups"}))


@dataclass(frozen=True)
class Layer:
    index: int
    name: str
    paths: tuple[str, ...]  # "groupclient/protocol/" (a folder) or "groupclient/clock.py" (a file)


def read_layers(text: str) -> list[Layer]:
    """The rows of the table under '## Layers' in docs/design.md: name | paths | what."""
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    layers = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not line.lstrip().startswith("|"):
            continue
        paths = tuple(re.findall(r"`(groupclient/[^`]*)`", cells[1]))
        if paths:
            layers.append(Layer(len(layers), cells[0], paths))
    return layers


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(path: Path, layers: list[Layer]) -> Layer | None:
    """The layer whose path is the longest prefix of ``path`` (a file beats its folder)."""
    rel = path.relative_to(ROOT).as_posix()
    best: tuple[int, Layer] | None = None
    for layer in layers:
        for prefix in layer.paths:
            if rel == prefix or (prefix.endswith("/") and rel.startswith(prefix)):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), layer)
    return best[1] if best else None


def imports_in(source: str, name: str, is_package: bool, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """(imported groupclient module, line) for every import statement of module ``name``."""
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "groupclient":
                    yield _resolve(alias.name, known), node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "groupclient":
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                yield (submodule if submodule in known else _resolve(target, known)), node.lineno


def _resolve(target: str, known: dict[str, Path]) -> str:
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target


def graph() -> dict[str, dict[str, int]]:
    known = modules()
    edges: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        edges[name] = {}
        for target, line in imports_in(path.read_text(), name, path.name == "__init__.py", known):
            if target != name:
                edges[name].setdefault(target, line)
    return edges


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def problems(edges: dict[str, dict[str, int]] | None = None) -> list[str]:
    """Every import against the table, or loop (in ``edges``, the package's imports by default)."""
    layers = read_layers(DESIGN.read_text())
    known = modules()
    edges = graph() if edges is None else edges
    found = []
    if not layers:
        return ["docs/design.md has no layer table under '## Layers'"]
    for name, targets in sorted(edges.items()):
        own = layer_of(known[name], layers)
        if own is None:
            found.append(f"{known[name].relative_to(ROOT)} is in no layer of docs/design.md's table")
            continue
        for target, line in sorted(targets.items()):
            theirs = layer_of(known[target], layers)
            if theirs is not None and theirs.index > own.index:
                found.append(f"{known[name].relative_to(ROOT)}:{line} ({own.name}) imports {target} "
                             f"({theirs.name}), a layer below it in the table")
            elif theirs is not None and frozenset({own.name, theirs.name}) in APART:
                found.append(f"{known[name].relative_to(ROOT)}:{line} ({own.name}) imports {target} "
                             f"({theirs.name}), a layer kept apart from it")
    for component in cycles(edges):
        if frozenset(component) not in ALLOWED_CYCLES:
            ties = [f"{a} -> {b} (line {edges[a][b]})" for a in component for b in sorted(edges[a]) if b in component]
            found.append(f"import loop of {len(component)} modules: " + "; ".join(ties))
    return found


def test_every_import_follows_the_layer_table_and_nothing_imports_in_a_loop() -> None:
    found = problems()
    assert not found, f"{len(found)} layering problems:\n" + "\n".join(found)


def test_the_layer_table_covers_what_the_package_has() -> None:
    layers = read_layers(DESIGN.read_text())
    names = [layer.name for layer in layers]
    assert len(names) >= 6 and len(set(names)) == len(names), names
    listed = {p for layer in layers for p in layer.paths}
    missing = [p for p in listed if not (ROOT / p).exists()]
    assert not missing, f"docs/design.md names paths that do not exist: {missing}"
    unknown = [pair for pair in APART if not pair <= set(names)]
    assert not unknown, f"APART names layers the table does not have: {unknown}"


def test_the_checker_sees_an_upward_import_a_type_only_one_and_a_loop() -> None:
    """The checker itself: imports inside ``if TYPE_CHECKING:`` and inside a function are seen, and
    a loop is found."""
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..consumer.fetcher import Fetcher\n"
              "def f():\n    from groupclient.spark import batch\n")
    found = set(imports_in(source, "groupclient.network.client", False, modules()))
    assert {("groupclient.consumer.fetcher", 3), ("groupclient.spark.batch", 5)} <= found
    assert cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]


def test_the_checker_keeps_the_two_kinds_of_group_apart_both_ways() -> None:
    """The table puts the classic groups above the consumer groups, yet neither may import the other."""
    edges = graph()
    edges["groupclient.coordinator.classic_group.groups"]["groupclient.coordinator.consumer_group.group"] = 1
    edges["groupclient.coordinator.consumer_group.service"]["groupclient.coordinator.classic_group.metadata"] = 2
    found = problems(edges)
    assert len(found) == 2 and all("kept apart" in f or "a layer below it" in f for f in found), found
    assert any("consumer_group/service.py:2 (consumer groups)" in f and "kept apart" in f for f in found), found


if __name__ == "__main__":
    table = read_layers(DESIGN.read_text())
    for module, targets in sorted(graph().items()):
        layer = layer_of(modules()[module], table)
        print(f"{layer.name if layer else '?':>20}  {module} -> {', '.join(sorted(targets)) or '-'}")
    print("\n".join(problems()) or "no problems")
    sys.exit(0)
