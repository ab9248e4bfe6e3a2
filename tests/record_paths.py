"""Both record paths in one process (groupclient.consumer.record_path): the compiled one
(native/) and the pure-Python one.  ``both_record_paths`` runs a test once on each; the compiled
path must be there wherever a Rust toolchain is (CI's machines have one), so a build that failed
quietly at install fails the tests instead of testing the Python path twice."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

import pytest

from groupclient.consumer import record_path

PATHS = ("native", "python")


def native_module() -> ModuleType:
    """The compiled module; the test fails where a toolchain should have built it, and is
    skipped where none could have."""
    if record_path.NATIVE is None:
        if shutil.which("cargo") or os.environ.get("CI"):
            pytest.fail("the compiled record path (groupclient.consumer._native) is not installed, though this "
                        "machine has a Rust toolchain: reinstall (pip install -e .) and read why its build failed")
        pytest.skip("no compiled record path here: no Rust toolchain when groupclient was installed")
    return record_path.NATIVE


@contextmanager
def on_path(path: str) -> Iterator[None]:
    """Decode on ``path`` ("native" or "python") inside the block; the choice before it after."""
    saved = record_path.CHOSEN
    record_path.CHOSEN = native_module() if path == "native" else None
    try:
        yield
    finally:
        record_path.CHOSEN = saved


def choose(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """Decode on ``path`` ("native" or "python") for the rest of the test."""
    monkeypatch.setattr(record_path, "CHOSEN", native_module() if path == "native" else None)


@pytest.fixture(params=PATHS)
def both_record_paths(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The test runs on the compiled path, then on the Python one; yields the path's name."""
    choose(monkeypatch, request.param)
    yield str(request.param)
