"""The installation blocks of the docs, run: the README's command in a fresh virtual environment
(the package, its command, its types and its pytest plugin as a user gets them), the CI's test
command, and an assignor published under the documented entry point."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

from tests.docs.blocks import ROOT, block, blocks_of

pytestmark = pytest.mark.integration

USER_CODE = '''
from groupclient import GroupConsumer

def main() -> None:
    consumer = GroupConsumer("orders", bootstrap_server="127.0.0.1:9092", group_id="billing")
    for record in consumer:
        print(record.offset + 1)
'''


def test_the_readme_install_command_in_a_fresh_environment(tmp_path: Path) -> None:
    """Runs "README.md: pip install -e . && groupclient demo" as written in a new virtual
    environment, then what a user does next: mypy --strict on their code finds the package and its
    types (a misspelt setting is refused), and with "docs/pytest-plugin.md: pip install groupclient
    pytest" done, pytest loads the plugin from its entry point and runs the marker example
    "docs/pytest-plugin.md: @pytest.mark.groupclient_cluster(nodes=3, topics={"orders": 6},
    initial_rebalance_delay_ms=0)"."""
    home = tmp_path / "venv"
    venv.create(home, with_pip=True)
    bin_dir = home / "bin"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(home),
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for name in ("PYTHONPATH", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_ADDOPTS"):
        env.pop(name, None)
    command = block("README.md: pip install -e . && groupclient demo").text.strip()
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert done.stdout.strip().endswith("OK"), done.stdout
    assert "INFO" not in done.stderr, done.stderr  # quiet by default

    (tmp_path / "app.py").write_text(USER_CODE)
    typed = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--python-executable", str(bin_dir / "python"),
                            "--no-error-summary", "app.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert "Cannot find implementation or library stub" not in typed.stdout, typed.stdout
    assert 'Unexpected keyword argument "bootstrap_server"' in typed.stdout, typed.stdout
    assert typed.stdout.count("error:") == 1, typed.stdout  # record.offset is an int: nothing else

    plugin_install = block("docs/pytest-plugin.md: pip install groupclient pytest").text.strip()
    assert plugin_install == "pip install groupclient pytest"
    done = subprocess.run(["pip", "install", "-q", "pytest"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr  # groupclient itself is installed above, from this checkout
    marker_example = block('docs/pytest-plugin.md: @pytest.mark.groupclient_cluster(nodes=3, topics={"orders": 6}, '
                           'initial_rebalance_delay_ms=0)').text
    (tmp_path / "test_marker.py").write_text("import pytest\n\n\n" + marker_example)
    ran = subprocess.run([str(bin_dir / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_marker.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0 and "1 passed" in ran.stdout, ran.stdout + ran.stderr


def test_ci_runs_the_readme_test_command() -> None:
    """"README.md: pip install -e '.[test,spark,otel,bench]' && python -m pytest" is the command .ci/run
    runs, word for word, in a virtual environment it makes afresh (so the CI's run of this suite is
    the block's run on a fresh machine), and "docs/testing.md: pip install -e '.[test,spark,otel,bench]'
    && python -m pytest" says the same."""
    command = block("README.md: pip install -e '.[test,spark,otel,bench]' && python -m pytest").text.strip()
    ci = (ROOT / ".ci" / "run").read_text()
    assert f'\nREADME_COMMAND="{command}"\n' in ci
    assert '"${CI_PYTHON:-python3}" -m venv "$venv"' in ci and '. "$venv/bin/activate"' in ci
    assert block("docs/testing.md: pip install -e '.[test,spark,otel,bench]' && python -m pytest").text.strip() == command


def test_an_assignor_published_with_the_documented_entry_point_is_found_by_name(tmp_path: Path) -> None:
    """'docs/assignors.md: [project.entry-points."groupclient.assignors"]': a package that declares
    it (its metadata as an installer writes it from that table), with the docs' own assignor, is
    found by its name in partition_assignment_strategy."""
    from groupclient.assignors.registry import published_assignors, resolve_assignors

    blocks = blocks_of(ROOT / "docs" / "assignors.md")
    assignor = next(b for b in blocks if "class OneTopicPerMember" in b.text).text
    declared = tomllib.loads(block('docs/assignors.md: [project.entry-points."groupclient.assignors"]').text)
    entry_points = declared["project"]["entry-points"]
    package = tmp_path / "mypackage"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "assignors.py").write_text(assignor)
    metadata = tmp_path / "mypackage-1.0.dist-info"
    metadata.mkdir()
    (metadata / "METADATA").write_text("Metadata-Version: 2.1\nName: mypackage\nVersion: 1.0\n")
    (metadata / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in names.items())
        for group, names in entry_points.items()))
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    try:
        assert "one-topic-per-member" in published_assignors()
        [found] = resolve_assignors(["one-topic-per-member"])
        assert type(found).__name__ == "OneTopicPerMember" and found.name == "one-topic-per-member"
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "mypackage" or m.startswith("mypackage.")]:
            del sys.modules[name]
        importlib.invalidate_caches()


def test_the_plugin_example_is_an_excerpt_of_the_file_the_suite_runs() -> None:
    """"docs/pytest-plugin.md: import time" shows parts of examples/pytest_plugin/test_consumer_app.py
    (which tests/integration/test_pytest_plugin.py runs): its lines come in the file, in order."""
    shown = [line for line in block("docs/pytest-plugin.md: import time").text.splitlines() if line.strip()]
    source = (ROOT / "examples" / "pytest_plugin" / "test_consumer_app.py").read_text().splitlines()
    position = 0
    for line in shown:
        assert line in source[position:], f"not in the example file (in this order): {line!r}"
        position = source.index(line, position) + 1
