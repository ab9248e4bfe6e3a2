"""Ways to run a documentation code block, as written, against real parts.

- :class:`Python`: the block is executed in a namespace a context prepares (a cluster to talk to,
  the files it opens, the names it takes as given, like ``handle``); the only change to its text is
  a broker address written as ``127.0.0.1:9092`` or ``broker:9092`` becoming the live one.
- :class:`Transcript`: ``$ command`` lines run in one bash session, each output compared with the
  lines under it (ids, times, ports and, where said, numbers made neutral; spaces collapsed).
- :class:`Server`: a command that serves until Ctrl-C: started, its first line read, stopped with
  SIGINT, and its exit code and shutdown line checked.
- :class:`Synopsis`: a usage line; every ``--option`` in it must be in the command's ``--help``.
- :class:`Mirrored`: a block that cannot run here as written (``pip install`` from the index, a
  600 s run); named tests do what it says, and must name the block in their source.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.docs.blocks import ROOT, Block

ADDRESSES = ("127.0.0.1:9092", "broker:9092", "broker:9093")


class Enough(Exception):
    """Raised by a stand-in (``print``, ``handle``) once the block has done what was expected:
    ends a ``for record in consumer`` loop that would otherwise run for ever."""


@dataclass
class Prepared:
    """What a context gives a Python block: its namespace, the live broker address (if any), and a
    check to run after it."""

    namespace: dict[str, Any] = field(default_factory=dict)
    address: str | None = None
    after: Callable[[dict[str, Any]], None] | None = None
    watchdog: Callable[[dict[str, Any]], None] | None = None  # called if the block runs too long
    replace: dict[str, str] = field(default_factory=dict)  # other changes, each said where it is made


Context = Callable[[Path], AbstractContextManager[Prepared]]


@dataclass(frozen=True)
class Python:
    """Execute the block in ``context``'s namespace."""

    context: Context
    timeout_s: float = 60.0

    def run(self, block: Block, tmp_path: Path) -> None:
        self.execute(block, tmp_path)

    def execute(self, block: Block, tmp_path: Path) -> dict[str, Any]:
        """Run the block; its namespace afterwards."""
        with self.context(tmp_path) as prepared:
            text = block.text
            if prepared.address is not None:
                for address in ADDRESSES:
                    text = text.replace(address, prepared.address)
            for old, new in prepared.replace.items():
                assert old in text, f"{block.key}: {old!r} is no longer in the block"
                text = text.replace(old, new)
            code = compile(text, f"<{block.key}>", "exec")
            namespace = {"__name__": "__doc_block__", **prepared.namespace}
            stop = threading.Event()
            if prepared.watchdog is not None:
                watchdog = prepared.watchdog

                def watch() -> None:
                    if not stop.wait(self.timeout_s):
                        watchdog(namespace)

                threading.Thread(target=watch, daemon=True).start()
            try:
                exec(code, namespace)
            except Enough:
                pass
            finally:
                stop.set()
            if prepared.after is not None:
                prepared.after(namespace)
            return namespace


# -- commands --------------------------------------------------------------------------------

# a consumer-protocol member's id: 16 random bytes in URL-safe base64, 22 characters (a word of
# that length with a lower-case letter and an upper-case letter or digit: not a header or option)
_MEMBER_ID = re.compile(r"(?<![\w-])[A-Za-z0-9_-]{22}(?![\w-])")


def _member_id(match: re.Match[str]) -> str:
    word = match.group(0)
    ours = re.search(r"[a-z]", word) is not None and re.search(r"[A-Z0-9]", word) is not None
    return "<member-id>" if ours else word


def _normal(text: str, numbers: bool) -> list[str]:
    """Lines with what differs from run to run made neutral, and runs of spaces collapsed."""
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", text)
    text = _MEMBER_ID.sub(_member_id, text)
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}", "<when>", text)
    text = re.sub(r"\b\d\d:\d\d:\d\d\.\d{3}\b", "<time>", text)
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", text)
    text = re.sub(r'"port": \d+', '"port": <port>', text)
    if numbers:
        text = re.sub(r"\d+(\.\d+)?", "<n>", text)
    return [" ".join(line.split()) for line in text.strip("\n").splitlines()]


def assert_same_output(command: str, expected: str, actual: str, numbers: bool = False) -> None:
    want, got = _normal(expected, numbers), _normal(actual, numbers)
    assert got == want, f"$ {command}\n--- the docs show ---\n{expected}\n--- it printed ---\n{actual}"


def parse_transcript(text: str) -> list[tuple[str, str]]:
    """``[(command, expected output), ...]`` of a block of ``$ command`` lines and their output."""
    steps: list[tuple[str, str]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], ""))
        elif steps:
            steps[-1] = (steps[-1][0], steps[-1][1] + line + "\n")
    return steps


def _environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, "COLUMNS": "80", "PYTHONUNBUFFERED": "1", **(extra or {})}
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


# A transcript's bootstrap address: `groupclient groups` commands without --bootstrap-servers
# (the docs' localhost:9092) go to the scenario's cluster
_GROUPS_TO = """groupclient() {
  if [ "$1" = groups ] && [ -n "$DOCS_BOOTSTRAP" ] && [[ " $* " != *" --bootstrap-servers "* ]]; then
    command groupclient "$@" --bootstrap-servers "$DOCS_BOOTSTRAP"
  else
    command groupclient "$@"
  fi
}
"""


@dataclass(frozen=True)
class Transcript:
    """Run each ``$ command`` in one bash session (``$?`` carries over) and compare its output
    (stdout and stderr) with the docs'.  ``scenario`` sets up what the commands look at and gives
    the bootstrap address; ``numbers=True`` also makes numbers neutral (timings, memory)."""

    scenario: Callable[[Path], AbstractContextManager[str | None]] | None = None
    numbers: bool = False
    timeout_s: float = 120.0

    def run(self, block: Block, tmp_path: Path) -> None:
        steps = parse_transcript(block.text)
        assert steps, f"{block.key}: no $ command"
        script = [_GROUPS_TO, "__rc=0"]
        for i, (command, _) in enumerate(steps):
            script += [f"printf '@@step {i}@@\\n'", "(exit $__rc)", f"{command} 2>&1", "__rc=$?"]
        if self.scenario is None:
            output = self._bash(script, None, tmp_path)
        else:
            with self.scenario(tmp_path) as address:
                output = self._bash(script, address, tmp_path)
        parts = re.split(r"^@@step \d+@@\n", output, flags=re.M)[1:]
        assert len(parts) == len(steps), output
        for (command, expected), actual in zip(steps, parts):
            assert_same_output(command, expected, actual, self.numbers)

    def _bash(self, script: list[str], address: str | None, cwd: Path) -> str:
        done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=cwd, capture_output=True, text=True,
                              timeout=self.timeout_s, env=_environment({"DOCS_BOOTSTRAP": address or ""}))
        return done.stdout + done.stderr


@dataclass(frozen=True)
class Watch:
    """A long-running ``$ command`` (``groups watch``): started in the scenario, ``during`` is
    called once its first look is printed (to change the group), then its whole output compared."""

    scenario: Callable[[Path], AbstractContextManager[Any]]
    during: Callable[[Any], None]
    first_look_lines: int
    timeout_s: float = 60.0

    def run(self, block: Block, tmp_path: Path) -> None:
        [(command, expected)] = parse_transcript(block.text)
        with self.scenario(tmp_path) as scene:
            argv = [*shlex.split(command), "--bootstrap-servers", scene.address]
            process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                       env=_environment(), cwd=tmp_path)
            try:
                assert process.stdout is not None
                lines = [process.stdout.readline() for _ in range(self.first_look_lines)]
                self.during(scene)
                rest, _ = process.communicate(timeout=self.timeout_s)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
        assert process.returncode == 0, "".join(lines) + rest
        assert_same_output(command, expected, "".join(lines) + rest)


@dataclass(frozen=True)
class Server:
    """A command that serves until Ctrl-C, on a free port (``--port 9092`` or no ``--port``
    becomes ``--port 0``; ``DIR`` a fresh directory): it must print its address first, log the
    lines the docs show while starting, and stop on SIGINT with status 0 and the shutdown line."""

    def run(self, block: Block, tmp_path: Path) -> None:
        if block.text.startswith("$ "):
            command, expected = parse_transcript(block.text)[0]
            commands = [(command, expected)]
        else:
            commands = [(line, "") for line in block.text.splitlines() if line.strip()]
        for command, expected in commands:
            self._serve(command, expected, tmp_path / f"data-{abs(hash(command))}")

    def _serve(self, command: str, expected: str, data_dir: Path) -> None:
        argv = shlex.split(command.replace("DIR", str(data_dir)))
        if "--port" in argv:
            argv[argv.index("--port") + 1] = "0"
        else:
            argv += ["--port", "0"]
        if argv[0] == "python":
            argv[0] = sys.executable
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_environment())
        try:
            assert process.stdout is not None and process.stderr is not None
            first = process.stdout.readline()
            assert first.startswith("bootstrap_servers=127.0.0.1:"), first + process.stderr.read()
            before, after = expected.split("^C\n") if "^C\n" in expected else ("", "")
            starting = [line for line in before.splitlines()[1:] if line != "..."]
            logged = [process.stderr.readline() for _ in starting]
            for want, got in zip(starting, logged):
                assert _normal(got, False) == _normal(want, False), (want, got)
            process.send_signal(signal.SIGINT)
            _, rest = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert process.returncode == 0, rest
        shutdown = [line for line in rest.splitlines() if "coordinator shutting down (SIGINT)" in line]
        assert len(shutdown) == 1, rest
        if "--data-dir" in argv:
            assert shutdown[0].endswith(f"groups and offsets kept in {data_dir}"), shutdown
        for want in after.splitlines():
            assert _normal(want, False)[0].split(": coordinator shutting down")[0] in _normal(shutdown[0], False)[0]


@dataclass(frozen=True)
class Synopsis:
    """Every ``--option`` of each usage line is one its command's ``--help`` lists."""

    def run(self, block: Block, tmp_path: Path) -> None:
        for line in block.text.replace("\\\n", " ").splitlines():
            if line.strip():
                self._check(line.strip())

    def _check(self, line: str) -> None:
        words = line.split()
        while words[0] in ("nice", "-n") or words[0].isdigit():
            words.pop(0)
        if words[0] == "flock":  # flock LOCKFILE command...: the command's options
            words = words[2:]
        prefix = []
        for word in words:
            if word.startswith(("-", "[")) and word != "-m" and not (prefix and prefix[-1] == "-m"):
                break
            prefix.append(word)
        argv = [sys.executable if prefix[0] == "python" else prefix[0], *prefix[1:], "--help"]
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120, env=_environment())
        assert done.returncode == 0, f"{' '.join(argv)}: {done.stderr}"
        options = set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", line))
        missing = sorted(o for o in options if o not in done.stdout)
        assert not missing, f"{line}: {missing} are not options of {' '.join(prefix)}"


@dataclass(frozen=True)
class Command:
    """Run the command as written but for ``changes`` (a long run made short, an output file moved
    to the test's own folder: each is ``(text, replacement)``, ``{tmp}`` in a replacement standing
    for that folder); it must exit 0."""

    changes: tuple[tuple[str, str], ...] = ()
    timeout_s: float = 300.0

    def run(self, block: Block, tmp_path: Path) -> None:
        for line in block.text.splitlines():
            for old, new in self.changes:
                assert old in line, (old, line)
                line = line.replace(old, new.replace("{tmp}", str(tmp_path)))
            argv = shlex.split(line)
            if argv[0] == "python":
                argv[0] = sys.executable
            done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=self.timeout_s,
                                  env=_environment())
            assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"


@dataclass(frozen=True)
class Mirrored:
    """Run by other tests, ``path::function`` each, whose source names the block (its key)."""

    tests: tuple[str, ...]
    why: str

    def run(self, block: Block, tmp_path: Path) -> None:
        for test in self.tests:
            path, name = test.split("::")
            tree = ast.parse((ROOT / path).read_text())
            found = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and node.name == name]
            assert found, f"{block.key}: {test} does not exist"
            source = ast.get_source_segment((ROOT / path).read_text(), found[0]) or ""
            assert " ".join(block.key.split()) in " ".join(source.split()), \
                f"{test} must name the block it mirrors: {block.key!r}"


Runner = Python | Transcript | Watch | Server | Synopsis | Command | Mirrored

