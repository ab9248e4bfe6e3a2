"""What pyproject.toml declares, held against what the code imports.

The README's test command installs groupclient with some extras into a fresh environment
(``.ci/run``); anything else the suite imports is there only by accident (installed by hand, or
pulled in by another package) and breaks a user's run of that command.  So:

- every third-party module imported by ``groupclient/``, ``tests/``, ``examples/``, the docs'
  Python blocks and the scripts the docs' blocks run (``python benchmarks/trace_picture.py``), and
  by ``benchmarks/`` (the suite runs their ``--help``), must come from a distribution declared in
  ``[project] dependencies`` or in an extra the README's test command installs;
- a module only ``benchmarks/`` imports must come from ``[project] dependencies`` or the ``bench``
  extra, so that ``pip install -e '.[bench]'`` is what the benchmarks need beyond the rest.

A module is resolved to the distributions whose files hold it (longest dotted prefix first, so
``opentelemetry.sdk`` is opentelemetry-sdk's and ``opentelemetry.trace`` opentelemetry-api's).
A module no installed distribution holds, or one held only by undeclared distributions, is a
:class:`Finding` that says where it is imported and what to declare.

By hand: ``python -m tests.declared`` prints the findings (exit 1 if any).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from tests.docs.blocks import ROOT, Block, all_blocks

BASE = "[project] dependencies"
BENCH = "bench"
SCANNED = ("groupclient", "tests", "examples")  # with the docs' blocks: what the suite is
BENCHMARKS = "benchmarks"
LOCAL = frozenset({"groupclient", "tests", "benchmarks", "examples"})
# a docs block line that runs a file of this repository: "nice -n 5 python benchmarks/x.py ..."
RUNS_A_FILE = re.compile(r"^\s*(?:\$ )?(?:nice -n \d+ )?python3? (?P<path>[\w./-]+\.py)\b", re.M)
# the README's test command: pip install -e '.[test,spark,otel,bench]' && python -m pytest
TEST_COMMAND = re.compile(r"^pip install -e '\.\[(?P<extras>[\w,-]+)\]' && python -m pytest$")

Index = Mapping[str, frozenset[str]]  # dotted module or package name -> normalized distribution names


@dataclass(frozen=True)
class Import:
    """One import of a third-party module: the module (the longest name the statement names) and
    where (``tests/x.py:12``, or a docs block and the file it runs)."""

    module: str
    where: str


@dataclass(frozen=True)
class Finding:
    """Imports the declared dependencies do not cover, of one distribution (or of one top-level
    module no installed distribution provides), with every place and what to do."""

    modules: tuple[str, ...]  # as ``import matplotlib`` names them (two names in a namespace: opentelemetry.sdk)
    providers: frozenset[str]  # installed distributions holding them (empty: none)
    allowed: tuple[str, ...]  # where they may be declared: BASE and extra names
    places: tuple[Import, ...]
    declared_in: tuple[str, ...] = ()  # other extras that declare them

    def __str__(self) -> str:
        where = "; ".join(found.where for found in self.places[:3])
        if len(self.places) > 3:
            where += f"; and {len(self.places) - 3} more"
        places = " or ".join(f"the {name!r} extra" if name != BASE else name for name in self.allowed)
        modules = ", ".join(self.modules)
        if not self.providers:
            return (f"{modules} is imported but no installed distribution provides it: declare the distribution "
                    f"that provides it in pyproject.toml's {places}. Imported at: {where}")
        names = ", ".join(sorted(self.providers))
        if self.declared_in:
            extras = " and ".join(f"the {name!r} extra" for name in self.declared_in)
            return (f"{names} is declared only in {extras}, but its {modules} is imported where it must be in "
                    f"pyproject.toml's {places} (the README's test command does not install {extras}): declare "
                    f"it there, or have the test command install {extras}. Imported at: {where}")
        return (f"{names} is not declared in pyproject.toml's {places}, but its {modules} is imported: it is "
                f"installed here only by hand or as another package's dependency, so a fresh install of the "
                f"README's test command may lack it; declare it there. Imported at: {where}")


def normal(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


# -- what is declared ---------------------------------------------------------------------------

def declared(pyproject: Mapping[str, object]) -> dict[str, frozenset[str]]:
    """BASE and each extra -> the distributions they declare (an extra naming this project's own
    extras, ``groupclient[otel]``, includes theirs)."""
    project = pyproject["project"]
    assert isinstance(project, dict)
    own = normal(str(project["name"]))
    raw: dict[str, list[str]] = {BASE: list(project.get("dependencies", []))}
    raw.update(project.get("optional-dependencies", {}))

    def names(group: str, seen: frozenset[str]) -> frozenset[str]:
        found: set[str] = set()
        for text in raw[group]:
            match = re.match(r"\s*([A-Za-z0-9][\w.-]*)\s*(?:\[([^\]]*)\])?", text)
            assert match, f"not a requirement: {text!r}"
            if normal(match.group(1)) == own:
                for extra in (match.group(2) or "").split(","):
                    if extra.strip() and extra.strip() not in seen:
                        found |= names(extra.strip(), seen | {extra.strip()})
            else:
                found.add(normal(match.group(1)))
        return frozenset(found)

    return {group: names(group, frozenset({group})) for group in raw}


def readme_test_extras(readme_blocks: Iterable[Block]) -> tuple[str, ...]:
    """The extras the README's test command installs."""
    for block in readme_blocks:
        match = TEST_COMMAND.match(block.text.strip())
        if match:
            return tuple(extra.strip() for extra in match.group("extras").split(","))
    raise AssertionError("README.md has no block \"pip install -e '.[EXTRAS]' && python -m pytest\"")


# -- what is installed --------------------------------------------------------------------------

def installed_index(distributions: Iterable[metadata.Distribution] | None = None) -> dict[str, frozenset[str]]:
    """Every module, package and namespace directory the installed distributions hold (from their
    RECORD, or top_level.txt where there is none), with the distributions that hold it."""
    found: dict[str, set[str]] = {}
    for dist in metadata.distributions() if distributions is None else distributions:
        name = normal(dist.metadata["Name"] or "")
        for dotted in _modules_of(dist):
            found.setdefault(dotted, set()).add(name)
    return {dotted: frozenset(names) for dotted, names in found.items()}


def _modules_of(dist: metadata.Distribution) -> Iterator[str]:
    files = dist.files
    if files is None:
        yield from (line.strip() for line in (dist.read_text("top_level.txt") or "").splitlines() if line.strip())
        return
    for file in files:
        parts = file.parts
        if not parts or parts[0] == ".." or not parts[-1].endswith((".py", ".so", ".pyd", ".pyi")):
            continue
        stem = parts[-1].split(".")[0]
        dirs = list(parts[:-1])
        if not all(part.isidentifier() for part in dirs):
            continue
        for depth in range(1, len(dirs) + 1):
            yield ".".join(dirs[:depth])
        if stem != "__init__" and stem.isidentifier():
            yield ".".join([*dirs, stem])


def providers(module: str, index: Index) -> frozenset[str]:
    """The distributions holding ``module``: its own entry, else its longest dotted prefix's."""
    parts = module.split(".")
    for depth in range(len(parts), 0, -1):
        found = index.get(".".join(parts[:depth]))
        if found:
            return found
    return frozenset()


# -- what is imported ---------------------------------------------------------------------------

def imported_names(source: str, filename: str) -> Iterator[tuple[str, int]]:
    """``(module, line)`` for every absolute import in the source: ``import a.b``, ``from a import
    b`` (as ``a.b``: the check takes ``a`` where ``a.b`` is a name, not a module), and the
    literal-string forms ``importlib.import_module``, ``pytest.importorskip`` and ``__import__``."""
    tree = ast.parse(source, filename)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                yield (node.module if alias.name == "*" else f"{node.module}.{alias.name}"), node.lineno
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) and _call_name(node.func) in (
                    "import_module", "importorskip", "__import__"):
            yield node.args[0].value, node.lineno


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def third_party(module: str, importer: Path | None) -> bool:
    """Not the standard library's, not this repository's, not a script's sibling module (a script
    run as ``python benchmarks/x.py`` imports ``brokers`` from its own folder)."""
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or top in LOCAL:
        return False
    if importer is not None:
        folder = importer.parent
        if (folder / f"{top}.py").exists() or (folder / top / "__init__.py").exists():
            return False
    return True


def imports_of_file(path: Path, where: str | None = None) -> list[Import]:
    """The third-party imports of one Python file (``where`` prefixes each place)."""
    relative = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    found = []
    for module, line in imported_names(path.read_text(), str(path)):
        if third_party(module, path):
            place = f"{relative}:{line}"
            found.append(Import(module, f"{where}, which runs {place}" if where else place))
    return found


def imports_of_tree(folder: Path) -> list[Import]:
    return [found for path in sorted(folder.rglob("*.py")) for found in imports_of_file(path)]


def imports_of_blocks(blocks: Iterable[Block]) -> list[Import]:
    """The third-party imports of the docs' Python blocks."""
    return [Import(module, f"{block.path}:{block.line} (a code block) line {block.line + line}")
            for block in blocks if block.lang == "python"
            for module, line in imported_names(block.text, block.key) if third_party(module, None)]


def imports_of_what_blocks_run(blocks: Iterable[Block], root: Path = ROOT) -> list[Import]:
    """The third-party imports of the repository's files that the docs' other blocks run with
    ``python path.py`` (a benchmark, say)."""
    found: list[Import] = []
    for block in blocks:
        for match in RUNS_A_FILE.finditer(block.text) if block.lang != "python" else ():
            script = root / match.group("path")
            if script.exists():
                found += imports_of_file(script, f"{block.path}:{block.line} (a code block)")
    return found


# -- the check ----------------------------------------------------------------------------------

def findings(imports: Iterable[Import], allowed: tuple[str, ...], groups: Mapping[str, frozenset[str]],
             index: Index) -> list[Finding]:
    """The modules that no distribution of the ``allowed`` groups holds, each with where it is imported."""
    covered = frozenset().union(*(groups[group] for group in allowed))
    missing: dict[frozenset[str], list[Import]] = {}
    for found in imports:
        held_by = providers(found.module, index)
        if not held_by & covered:
            missing.setdefault(held_by or frozenset({"?" + found.module.split(".")[0]}), []).append(found)
    out = []
    for key, places in missing.items():
        held_by = frozenset(name for name in key if not name.startswith("?"))
        out.append(Finding(tuple(dict.fromkeys(_label(found.module, index) for found in places)), held_by, allowed,
                           tuple({found.where: found for found in places}.values()),
                           tuple(group for group, names in groups.items() if names & held_by)))
    return out


def _label(module: str, index: Index) -> str:
    """The top-level name, or its first two names where several distributions share the top one
    (a namespace package such as ``opentelemetry``)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(index.get(parts[0], ())) > 1 and len(parts) > 1 else parts[0]


@dataclass(frozen=True)
class Check:
    """The two rules of this module's docstring, over this repository as it is."""

    groups: Mapping[str, frozenset[str]]
    test_extras: tuple[str, ...]
    suite: list[Import]  # groupclient/, tests/, examples/ and the docs' Python blocks
    run_by_docs: list[Import]  # what the files the docs' blocks run import
    benchmarks: list[Import]
    index: Index

    @classmethod
    def of_repository(cls, root: Path = ROOT) -> Check:
        blocks = all_blocks()
        return cls(groups=declared(tomllib.loads((root / "pyproject.toml").read_text())),
                   test_extras=readme_test_extras(b for b in blocks if b.path == "README.md"),
                   suite=[i for folder in SCANNED for i in imports_of_tree(root / folder)] + imports_of_blocks(blocks),
                   run_by_docs=imports_of_what_blocks_run(blocks, root),
                   benchmarks=imports_of_tree(root / BENCHMARKS), index=installed_index())

    def undeclared_in_the_test_command(self) -> list[Finding]:
        """Rule one: what the suite imports, runs or asks ``--help`` of."""
        return findings(self.suite + self.run_by_docs + self.benchmarks, (BASE, *self.test_extras), self.groups,
                        self.index)

    def undeclared_in_bench(self) -> list[Finding]:
        """Rule two: what only the benchmarks import."""
        elsewhere = frozenset().union(*(providers(found.module, self.index) for found in self.suite))
        only_benchmarks = [found for found in self.benchmarks if not providers(found.module, self.index) & elsewhere]
        return findings(only_benchmarks, (BASE, BENCH), self.groups, self.index)


def main() -> int:
    check = Check.of_repository()
    problems = check.undeclared_in_the_test_command() + check.undeclared_in_bench()
    print("\n".join(map(str, problems)) or "every import is declared")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
