"""The lowest versions pyproject.toml allows, installed and tested.

Every lower bound the project declares is one that is tested: this builds a virtual environment
on the lowest Python ``requires-python`` allows, with every runtime dependency, every test tool
and the spark, otel and bench extras at the lowest version its bound allows (``uv``'s ``--resolution lowest-direct``: the
dependencies' own dependencies at whatever pip picks), and groupclient itself on top.  The
suite's ``tests/test_dependency_floors.py`` runs the unit and simulation tests and
``groupclient demo`` in it; the normal run uses the newest versions.

By hand: ``python -m tests.floors`` builds the environment and prints its interpreter;
``python -m tests.floors --pins`` only prints what it would install.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from tests.locks import file_lock

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "groupclient"


def pyproject() -> dict[str, object]:
    import tomllib  # Python 3.11+: the suite itself runs on the newest Python; the floor run only runs SUITES

    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def lowest(specifier: SpecifierSet) -> str:
    """The version a ``>=`` (or ``==``) bound names: the lowest the specifier allows."""
    for spec in specifier:
        if spec.operator in (">=", "==", "~="):
            return spec.version
    raise ValueError(f"no lower bound in {specifier!r}: every dependency must declare one")


def floor_pins(extras: tuple[str, ...] = ("test", "spark", "otel", "bench")) -> list[str]:
    """``name==lowest`` (with its environment marker) for every runtime dependency and every
    dependency of ``extras``."""
    project = pyproject()["project"]
    assert isinstance(project, dict)
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    pins = []
    for text in requirements:
        requirement = Requirement(text)
        pin = f"{requirement.name}=={lowest(requirement.specifier)}"
        if requirement.marker is not None:
            pin += f"; {requirement.marker}"
        pins.append(pin)
    return pins


def build_pins() -> list[str]:
    """``name==lowest`` for every requirement of pyproject.toml's [build-system]: the floor
    environment builds groupclient (and its compiled record path) with them, not with the newest
    that build isolation would fetch."""
    build = pyproject()["build-system"]
    assert isinstance(build, dict)
    return [f"{Requirement(text).name}=={lowest(Requirement(text).specifier)}" for text in build["requires"]]


def python_floor() -> str:
    project = pyproject()["project"]
    assert isinstance(project, dict)
    return lowest(SpecifierSet(str(project["requires-python"])))


def find_python(version: str) -> Path | None:
    """An interpreter of ``version`` (e.g. "3.10"): on PATH, or one pyenv installed."""
    candidates = [shutil.which(f"python{version}")]
    pyenv_root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates += sorted(glob.glob(f"{pyenv_root}/versions/{version}.*/bin/python{version}"), reverse=True)
    for candidate in candidates:
        if not candidate:
            continue
        done = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip() == version:
            return Path(candidate)
    return None


def environment(python: Path, pins: list[str]) -> Path:
    """A virtual environment with ``pins`` and groupclient (editable) installed: its interpreter.
    Built once per interpreter and pin list, then reused."""
    key = hashlib.sha256(json.dumps([str(python), pins]).encode()).hexdigest()[:12]
    home = CACHE / f"floors-{key}"
    interpreter = home / "bin" / "python"
    # one builder at a time: the suite's pytest-xdist workers (and a second run on the machine)
    # wait for the environment rather than install into it at the same time
    with file_lock(CACHE / "floors.lock"):
        if not (home / "ready").exists():
            for old in CACHE.glob("floors-*"):  # environments of earlier pin lists
                shutil.rmtree(old, ignore_errors=True)
            subprocess.run([str(python), "-m", "venv", str(home)], check=True)
            pip = [str(interpreter), "-m", "pip", "--disable-pip-version-check", "install", "-q"]
            subprocess.run([*pip, "--prefer-binary", *pins], check=True)  # pyspark is published as a source archive
            (home / "ready").write_text("\n".join(pins) + "\n")
        # groupclient itself, from this checkout, every time (the checkout may have moved), built by
        # the lowest build requirements (pins holds them: environment(python, floor_pins() + build_pins()))
        subprocess.run([str(interpreter), "-m", "pip", "--disable-pip-version-check", "install", "-q", "--no-deps",
                        "--no-build-isolation", "-e", str(ROOT)], check=True)
    return interpreter


def installed(interpreter: Path) -> dict[str, str]:
    """Distribution name (normalized) -> version, as the environment has them."""
    script = ("import json, importlib.metadata as m; "
              "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))")
    done = subprocess.run([str(interpreter), "-c", script], capture_output=True, text=True, check=True)
    return {_normal(name): version for name, version in json.loads(done.stdout).items()}


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.floors", description=__doc__.splitlines()[0])
    parser.add_argument("--pins", action="store_true", help="only print the pins")
    args = parser.parse_args(argv)
    pins = floor_pins() + build_pins()
    print(f"python {python_floor()}")
    print("\n".join(pins))
    if args.pins:
        return 0
    python = find_python(python_floor())
    if python is None:
        print(f"no python{python_floor()} found (PATH, pyenv)", file=sys.stderr)
        return 1
    print(environment(python, pins))
    return 0


if __name__ == "__main__":
    sys.exit(main())
