"""Which tests run in one pytest-xdist worker, and which go out first.

pyproject.toml's addopts run the suite in pytest-xdist workers (``-n 3 --dist loadgroup``): each
test goes to whichever worker is free, but the tests that share an expensive session fixture run
in one worker, so that it starts once (:data:`GROUPS`).  Everything else is independent: its
servers listen on ports of their own, its files are under ``tmp_path``, and what it writes once
and shares (~/.cache/groupclient) is written under a lock (tests/locks.py).

The groups are handed to the scheduler by this module rather than as ``xdist_group`` marks:
pytest-xdist (3.8) tells the controller a mark's group by appending it to the test's node id, which
pytest 9.2's node ids no longer take.  So each worker writes, after collecting, the group of every
grouped test to a file the controller named (``pytest_configure_node``), and the controller's
scheduler (``pytest_xdist_make_scheduler``) reads it: pytest-xdist's LoadScopeScheduling with
those groups as scopes, which is what ``--dist loadgroup`` is.  (A test marked ``xdist_group``
still joins its group where pytest gives the mark to the node id.)  tests/conftest.py has the hooks.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

GROUPS: tuple[tuple[str, Callable[[pytest.Item], bool]], ...] = (
    # the Spark session (tests/spark/conftest.py); its tests' "kafka" params start Apache Kafka here too
    ("spark", lambda item: item.nodeid.startswith("tests/spark/")),
    # the three-node Apache Kafka cluster (kafka_cluster): a worker of its own, beside the single broker's
    ("kafka-cluster", lambda item: "kafka_cluster" in getattr(item, "fixturenames", ())),
    # Apache Kafka: the session's broker (kafka_broker, the "kafka" params), and the tests that
    # start one of their own (the jars and the compiled Java programs are shared all the same)
    ("kafka", lambda item: item.get_closest_marker("kafka") is not None),
    # what installs this checkout (pip install -e . writes groupclient.egg-info and the compiled
    # record path into it): the README's install command, and the dependency floors' environment
    ("checkout", lambda item: item.nodeid.startswith(("tests/test_dependency_floors.py::",
                                                      "tests/docs/test_install.py::test_the_readme_install_command"))),
)

# Tests of a minute or more, and the longer ones of half a minute, go out first (after the groups,
# which go out before anything else): a worker that took one last would run on alone.
LONG_FIRST = (
    "tests/chaos/test_chaos.py::",
    "tests/chaos/test_kafka_chaos.py::test_a_mixed_group",
    "tests/eos/",
    "tests/sim/test_random_schedules.py::test_500_seeded_schedules_keep_every_invariant",
    "tests/sim/test_share_groups.py::test_100_seeded_share_schedules",
    "tests/integration/test_cooperative_groups.py::test_mixed_cooperative_group_on_tansu",
    "tests/docs/test_record_path_install.py::",
    "tests/integration/test_tansu.py::",
)

WORKERINPUT_KEY = "groupclient_xdist_groups"  # the file's path, in each worker's workerinput
_FOLDER = pytest.StashKey[Path]()


def group_of(item: pytest.Item) -> str | None:
    for name, belongs in GROUPS:
        if belongs(item):
            return name
    return None


def groups_file(config: pytest.Config) -> Path:
    """On the controller: the file the workers write the groups to (made on first use)."""
    if _FOLDER not in config.stash:
        config.stash[_FOLDER] = Path(tempfile.mkdtemp(prefix="groupclient-xdist-"))
    return config.stash[_FOLDER] / "groups.json"


def remove_groups_file(config: pytest.Config) -> None:
    if _FOLDER in config.stash:
        shutil.rmtree(config.stash[_FOLDER], ignore_errors=True)


def order_and_write_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker, after collection: the long tests first (a stable sort, so that every worker
    comes to the same order, as pytest-xdist requires), and the groups written for the controller
    (every worker writes the same; each replaces the file whole)."""
    items.sort(key=lambda item: not item.nodeid.startswith(LONG_FIRST))
    path = config.workerinput.get(WORKERINPUT_KEY)  # type: ignore[attr-defined]
    if path is None:
        return
    groups = {item.nodeid: group for item in items if (group := group_of(item)) is not None}
    partial = f"{path}.{config.workerinput['workerid']}"  # type: ignore[attr-defined]
    Path(partial).write_text(json.dumps(groups))
    os.replace(partial, path)


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's LoadScopeScheduling, each group one scope and every other test its own."""
    from xdist.scheduler import LoadScopeScheduling

    path = groups_file(config)

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if "@" in nodeid:  # an xdist_group mark, where pytest-xdist could append it
                return nodeid.rsplit("@", 1)[-1]
            if self.groups is None:  # read once the workers collected: the scheduler starts then
                self.groups = json.loads(path.read_text()) if path.exists() else {}
            return self.groups.get(nodeid, nodeid)

    return GroupScheduling(config, log)
