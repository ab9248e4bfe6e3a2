"""Which record decoder runs: the compiled one or the pure-Python one.

``pip install groupclient`` (or ``pip install -e .``) builds the compiled record path,
``groupclient.consumer._native`` (Rust, native/), where a Rust toolchain is present, and
installs pure Python where none is; both decode the same batches into the same records and
raise the same errors (records.py, tests/unit/test_record_paths.py).  The compiled path decodes
a batch's CRC, decompression and records in one call, with the interpreter lock released for
everything that touches no Python object.

The environment variable ``GROUPCLIENT_RECORD_PATH``, read once at import, chooses:

- ``auto`` (or unset): the compiled path when it is installed, else the Python one;
- ``native``: the compiled path, and an import error saying how to build it when it is not;
- ``python``: the Python path, compiled or not (to compare, or to rule the compiled one out).

``groupclient --version`` and :func:`active` say which one runs.
"""

from __future__ import annotations

import os
from types import ModuleType

from ..errors import ConfigurationError

ENVIRONMENT_VARIABLE = "GROUPCLIENT_RECORD_PATH"
CHOICES = ("auto", "native", "python")


def _load_native() -> ModuleType | None:
    try:
        from . import _native  # _native.pyi types it; absent where no toolchain built it
    except ImportError:
        return None
    module: ModuleType = _native
    return module


def _choose(choice: str, native: ModuleType | None) -> ModuleType | None:
    """The compiled module to decode with, or None for the Python path."""
    choice = choice.strip().lower() or "auto"
    if choice not in CHOICES:
        raise ConfigurationError(
            f"{ENVIRONMENT_VARIABLE}={choice!r} is not a record path: set it to one of {', '.join(CHOICES)}, "
            "or unset it")
    if choice == "python":
        return None
    if choice == "native" and native is None:
        raise ConfigurationError(
            f"{ENVIRONMENT_VARIABLE}=native, but the compiled record path is not installed: install a Rust "
            "toolchain (https://rustup.rs) and reinstall groupclient (pip install --force-reinstall --no-binary "
            "groupclient groupclient, or pip install -e . in a checkout), or unset the variable")
    return native


NATIVE = _load_native()  # the compiled module, whether chosen or not
CHOSEN = _choose(os.environ.get(ENVIRONMENT_VARIABLE, "auto"), NATIVE)


def active() -> str:
    """``"native"`` or ``"python"``: the record path this process decodes with."""
    return "native" if CHOSEN is not None else "python"


def describe() -> str:
    """One line for ``groupclient --version``: the path, and why when it is the Python one."""
    if CHOSEN is not None:
        return f"record path: native (compiled, {CHOSEN.VERSION})"
    if NATIVE is not None:
        return f"record path: python ({ENVIRONMENT_VARIABLE}=python; the compiled path is installed)"
    return "record path: python (the compiled path is not installed: no Rust toolchain when it was built)"
