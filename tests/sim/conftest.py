"""Simulated groups are closed after each test, so no simulated thread outlives it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from groupclient.testing import GroupSimulation


@pytest.fixture
def make_sim() -> Iterator[Callable[..., GroupSimulation]]:
    sims: list[GroupSimulation] = []

    def make(**kw: Any) -> GroupSimulation:
        sim = GroupSimulation(**kw)
        sims.append(sim)
        return sim

    yield make
    for sim in sims:
        sim.close()
