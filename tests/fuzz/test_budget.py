"""The fuzz tests' budget: fixed and derandomized in CI, FUZZ_SCALE=n times larger and fresh."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHOW = "from tests.fuzz.budget import fuzz_settings; s = fuzz_settings(10); print(s.max_examples, s.derandomize)"


def settings_under(scale: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "FUZZ_SCALE"}
    if scale is not None:
        env["FUZZ_SCALE"] = scale
    done = subprocess.run([sys.executable, "-c", SHOW], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=True)
    return done.stdout.strip()


def test_fuzz_scale_runs_n_times_as_many_fresh_examples() -> None:
    """What "docs/testing.md: FUZZ_SCALE=20 python -m pytest tests/fuzz" promises: 20 times the
    examples, drawn afresh (not derandomized); without it, the CI's fixed budget."""
    assert settings_under("20") == "200 False"
    assert settings_under(None) == "10 True"
