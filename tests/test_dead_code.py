"""No definition of groupclient that nothing names: every function, method and class defined in
the package is named somewhere else, in the package, its tests, benchmarks, examples or docs.
A name is counted wherever it stands (a call, an attribute, an import, a string such as an entry
point or a docs example), so this errs on the side of "used"; what it still finds is dead."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Called by a framework by name, never by our code.
CALLED_BY_NAME = {
    "streamReader": "PySpark's DataSource API (spark/datasource.py)",
    "initialOffset": "PySpark's DataSourceStreamReader API",
    "getDefaultReadLimit": "PySpark's SupportsAdmissionControl API",
    "prepareForTriggerAvailableNow": "PySpark's SupportsTriggerAvailableNow API",
    "pytest_configure": "a pytest hook (testing/pytest_plugin.py)",
}


def names_used() -> Counter[str]:
    used: Counter[str] = Counter()
    for folder in ("groupclient", "tests", "benchmarks", "examples"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Name):
                    used[node.id] += 1
                elif isinstance(node, ast.Attribute):
                    used[node.attr] += 1
                elif isinstance(node, ast.alias):
                    used[node.name.rpartition(".")[2]] += 1
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    used.update(WORD.findall(node.value))
    for path in [ROOT / "README.md", ROOT / "pyproject.toml", *(ROOT / "docs").glob("*.md")]:
        used.update(WORD.findall(path.read_text()))
    return used


def unused_definitions() -> list[str]:
    used = names_used()
    found = []
    for path in sorted((ROOT / "groupclient").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if node.name.startswith("__") or node.name in CALLED_BY_NAME or used[node.name]:
                continue
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    return found


def test_every_definition_is_named_somewhere() -> None:
    found = unused_definitions()
    assert not found, "defined and never named (remove, or list why in CALLED_BY_NAME):\n" + "\n".join(found)


def test_the_allowed_names_are_still_defined() -> None:
    defined = {node.name for path in (ROOT / "groupclient").rglob("*.py")
               for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert not set(CALLED_BY_NAME) - defined
