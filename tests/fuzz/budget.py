"""How much the fuzz tests run.

In CI: a fixed number of derandomized examples per test, so every run sees the same inputs and
the folder stays within its time budget.  FUZZ_SCALE=<n> runs n times as many examples, freshly
random each run: for fuzzing longer on a developer's machine.
"""

from __future__ import annotations

import os
from hypothesis import HealthCheck, settings

SCALE = int(os.environ.get("FUZZ_SCALE", "0") or 0)


def fuzz_settings(examples: int) -> settings:
    return settings(max_examples=examples * max(SCALE, 1), deadline=None, derandomize=not SCALE, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
