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

from groupclient.consumer import record_path, records

# "ahead": the compiled path with every answer walked by a worker thread (native/src/ahead.rs;
# records.decode_batches takes it for big compressed answers only), "ahead-2" with two workers
PATHS = ("native", "ahead", "python")
AHEAD = {"ahead": 1, "ahead-2": 2}


def native_module() -> ModuleType:
    """The compiled module; the test fails where a toolchain should have built it, and is
    skipped where none could have."""
    if record_path.NATIVE is None:
        if shutil.which("cargo") or os.environ.get("CI"):
            pytest.fail("the compiled record path (groupclient.consumer._native) is not installed, though this "
                        "machine has a Rust toolchain: reinstall (pip install -e .) and read why its build failed")
        pytest.skip("no compiled record path here: no Rust toolchain when groupclient was installed")
    return record_path.NATIVE


def _settings(path: str) -> dict[tuple[ModuleType, str], object]:
    """The module attributes that make ``path`` the one that decodes."""
    chosen: dict[tuple[ModuleType, str], object] = {
        (record_path, "CHOSEN"): None if path == "python" else native_module()}
    if path in AHEAD:
        chosen.update({(records, "AHEAD_FROM"): 0, (records, "AHEAD_UNCOMPRESSED"): True,
                       (records, "AHEAD_WORKERS"): AHEAD[path]})
    return chosen


@contextmanager
def on_path(path: str) -> Iterator[None]:
    """Decode on ``path`` ("native", "ahead", "ahead-2" or "python") inside the block; the
    choice before it after."""
    with pytest.MonkeyPatch.context() as patched:
        choose(patched, path)
        yield


def choose(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """Decode on ``path`` ("native", "ahead", "ahead-2" or "python") for the rest of the test."""
    for (module, name), value in _settings(path).items():
        monkeypatch.setattr(module, name, value)


@pytest.fixture(params=PATHS)
def both_record_paths(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The test runs on the compiled path, then on the Python one; yields the path's name."""
    choose(monkeypatch, request.param)
    yield str(request.param)
