"""What "docs/performance.md" says of installing the compiled record path, run: a wheel built
where a Rust toolchain is holds it (and says which interpreters), one built where none is holds
pure Python and installs all the same, and each says which path it decodes with."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.docs.blocks import ROOT

pytestmark = pytest.mark.integration


def source(tmp_path: Path) -> Path:
    """A copy of the checkout's files (what git tracks, and new files it does not ignore): a
    build in the checkout itself could pick up an earlier build's compiled module from build/."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    copy = tmp_path / "src"
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    return copy


def wheel(tmp_path: Path, toolchain: bool) -> Path:
    """``python -m build --wheel`` of a copy of this checkout (its build isolated, as a user's
    is), with or without cargo and rustc on PATH; cargo's build directory is the checkout's, so
    the crates are not compiled again."""
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "CARGO_TARGET_DIR": str(ROOT / "native" / "target")}
    if not toolchain:
        cargo = shutil.which("cargo")
        hidden = {str(Path(cargo).parent)} if cargo else set()
        env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p not in hidden)
        for name in ("CARGO", "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN"):
            env.pop(name, None)
        assert shutil.which("cargo", path=env["PATH"]) is None
    out = tmp_path / "wheels"
    done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(source(tmp_path))],
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    [found] = out.glob("groupclient-*.whl")
    return found


def active_path(unpacked: Path) -> str:
    """``groupclient --version`` with the wheel's groupclient first on the path (the rest from this
    environment), run outside the checkout."""
    env = {**os.environ, "PYTHONPATH": str(unpacked)}
    env.pop("GROUPCLIENT_RECORD_PATH", None)
    done = subprocess.run([sys.executable, "-m", "groupclient", "--version"], cwd=unpacked.parent, env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.startswith("groupclient "), done.stdout
    return " ".join(done.stdout.split())  # argparse wraps the line at the terminal's width


def test_a_wheel_built_with_a_toolchain_holds_the_compiled_record_path(tmp_path: Path) -> None:
    """The block "docs/performance.md: python -m build --wheel --outdir dist .", with a toolchain."""
    if shutil.which("cargo") is None and not os.environ.get("CI"):
        pytest.skip("no Rust toolchain here")
    built = wheel(tmp_path, toolchain=True)
    names = zipfile.ZipFile(built).namelist()
    assert any(n.startswith("groupclient/consumer/_native.") and n.endswith(".so") for n in names), names
    assert "groupclient/consumer/_native.pyi" in names
    # one wheel per platform for every CPython from 3.10 on: the module uses the stable ABI
    assert "-cp310-abi3-" in built.name, built.name
    assert "groupclient/consumer/_native.abi3.so" in names, names
    zipfile.ZipFile(built).extractall(tmp_path / "site")
    assert "record path: native (compiled" in active_path(tmp_path / "site")


def test_without_a_toolchain_the_install_is_pure_python_and_says_so(tmp_path: Path) -> None:
    """The block "docs/performance.md: python -m build --wheel --outdir dist .", without one."""
    built = wheel(tmp_path, toolchain=False)
    names = zipfile.ZipFile(built).namelist()
    assert not any(n.startswith("groupclient/consumer/_native.") and n.endswith(".so") for n in names), names
    zipfile.ZipFile(built).extractall(tmp_path / "site")
    assert "record path: python (the compiled path is not installed" in active_path(tmp_path / "site")
