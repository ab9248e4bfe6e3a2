"""The package is ``mypy --strict`` clean (configured in pyproject.toml)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_strict_is_clean() -> None:
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


USER_CODE = '''
from groupclient import ConsumerRecord, ConsumerSettings, GroupConsumer, TopicPartition

def run() -> None:
    config: ConsumerSettings = {"bootstrap_servers": "127.0.0.1:9092", "group_id": "billing",
                                "auto_offset_reset": "earliest"}
    consumer = GroupConsumer("orders", **config)
    batches = consumer.poll(timeout_ms=100)
    reveal_type(batches)
    for records in batches.values():
        for record in records:
            reveal_type(record.offset)
            consumer.seek(TopicPartition(record.topic, record.partition), record.offset + 1)
    consumer.close()
'''

USER_MISTAKES = '''
from groupclient import GroupConsumer

def run() -> None:
    a = GroupConsumer("orders", bootstrap_server="127.0.0.1:9092")
    b = GroupConsumer("orders", session_timeout_ms="10000")
    for record in b:
        print(record.ofset)
'''


def run_mypy_on(tmp_path: Path, source: str) -> str:
    """mypy --strict on a user's module, finding groupclient as installed (the README's
    ``pip install -e .`` included), not from this checkout's directory."""
    (tmp_path / "app.py").write_text(source)
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "app.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    return done.stdout + done.stderr


def test_a_users_code_gets_the_settings_and_records_typed(tmp_path: Path) -> None:
    output = run_mypy_on(tmp_path, USER_CODE)
    assert "Cannot find implementation or library stub" not in output, output
    # mypy shows a NamedTuple as its fields' tuple with the class as "fallback" (builtins. before
    # builtin names up to mypy 1.10)
    poll_type = re.search(r'app.py:9: note: Revealed type is "(.*)"', output)
    assert poll_type, output
    shown = poll_type.group(1).replace("builtins.", "")
    assert shown.startswith("dict[tuple[str, int, fallback=groupclient.structs.TopicPartition], "
                            "list[tuple[str, int, int, int, int, int, Any, Any, "), output
    assert shown.endswith("fallback=groupclient.structs.ConsumerRecord]]]"), output
    assert re.search(r'app.py:12: note: Revealed type is "(builtins\.)?int"', output), output
    assert "error" not in output.replace("note:", ""), output


def test_a_misspelt_setting_a_wrong_type_and_a_misspelt_field_are_refused(tmp_path: Path) -> None:
    output = run_mypy_on(tmp_path, USER_MISTAKES)
    assert 'Unexpected keyword argument "bootstrap_server" for "GroupConsumer"; did you mean "bootstrap_servers"?' in output, output
    assert 'Argument "session_timeout_ms" to "GroupConsumer" has incompatible type "str"; expected "int"' in output, output
    assert '"ConsumerRecord" has no attribute "ofset"' in output, output
