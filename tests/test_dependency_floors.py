"""Every lower bound pyproject.toml declares is tested: the unit and simulation tests, the layer
checks, ``mypy --strict``, the TLS and SASL tests, a group with a confluent-kafka peer and
``groupclient demo`` and the async tests of the pytest plugin pass on the lowest Python and the lowest version of every runtime
dependency, test tool and the spark, otel and bench extras it allows (``tests/floors.py`` builds that environment
once per pin list, under ~/.cache/groupclient).  The rest of the suite runs on the newest versions.
What runs Spark itself (tests/spark/) runs on the newest only.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.floors import ROOT, _normal, build_pins, environment, find_python, floor_pins, installed, python_floor

pytestmark = pytest.mark.integration

# the searches run once, in the main run: the tests that draw or walk through many inputs to find a
# defect in the project's own logic (the seeded and hypothesis-drawn schedules, a loss at every step
# of a poll, the server assignors against their frozen copies; each a prefix of node ids) need no
# dependency's floor.  At the floors, what is checked is that each dependency's lowest version does
# what the code asks of it, which every other test here does.
EXPLORATIONS = ["tests/sim/test_random_schedules.py::", "tests/sim/test_loss_interleavings.py::",
                "tests/unit/test_server_assignors.py::test_the_assignors_give_exactly_what_the_frozen_copy_gives"]

SUITES = ["tests/unit", "tests/sim", "tests/test_layers.py", "tests/test_dead_code.py", "tests/test_typing.py",
          "tests/integration/test_security.py",  # cryptography's floor (test certificates)
          "tests/integration/test_peer_groups.py::test_mixed_group_kafka_python_and_confluent",  # confluent-kafka's
          "tests/integration/test_aio_plugin.py",  # pytest-asyncio's and anyio's (aiokafka's is its only version)
          "tests/test_benchmark_plots.py",  # matplotlib's (the bench extra)
          *(arg for prefix in EXPLORATIONS for arg in ("--deselect", prefix))]


@pytest.fixture(scope="module")
def interpreter() -> str:
    python = find_python(python_floor())
    if python is None:
        message = f"the dependency floors need Python {python_floor()} (on PATH or installed by pyenv)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return str(environment(python, floor_pins() + build_pins()))


def test_the_environment_has_exactly_the_declared_floors(interpreter: str) -> None:
    """The floor environment holds groupclient with its spark extra, each at its lowest version:
    what "docs/spark.md: pip install 'groupclient[spark]'" installs, at the floors."""
    have = installed(interpreter)
    for pin in floor_pins() + build_pins():
        requirement = Requirement(pin)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        wanted = next(iter(requirement.specifier)).version
        assert have.get(_normal(requirement.name)) is not None, f"{requirement.name} is not installed"
        assert requirement.specifier.contains(have[_normal(requirement.name)]), \
            f"{requirement.name} {have[_normal(requirement.name)]} installed, {wanted} wanted"
    version = subprocess.run([interpreter, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version == python_floor()


def test_the_unit_and_simulation_tests_pass_on_the_floors(interpreter: str) -> None:
    # in two pytest-xdist workers (its floor), as the main run is; mypy (tests/test_typing.py) keeps
    # its cache beside the environment, apart from the main run's, which may be running it too
    env = {**os.environ, "MYPY_CACHE_DIR": str(Path(interpreter).parents[1] / "mypy-cache")}
    done = subprocess.run([interpreter, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "-n", "2", *SUITES],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]


def test_the_demo_passes_on_the_floors(interpreter: str) -> None:
    with tempfile.TemporaryDirectory() as work:
        done = subprocess.run([interpreter, "-m", "groupclient", "demo"], cwd=work, capture_output=True, text=True,
                              timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
