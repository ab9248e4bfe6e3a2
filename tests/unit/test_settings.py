"""The one declaration of GroupConsumer's settings (groupclient/consumer/settings.py) and what is
made from it: the defaults, the checks, help(GroupConsumer), the typed constructor and the table
in docs/consumer.md."""

from __future__ import annotations

import inspect
import pydoc
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer

import groupclient
from groupclient import ConfigurationError, GroupConsumer
from groupclient.consumer.config import DEFAULTS, build_config
from groupclient.consumer.settings import ConsumerSettings, declared, markdown_table

ROOT = Path(__file__).resolve().parents[2]
# where groupclient's default is not kafka-python's, and why
# client_id: "groupclient-<version>", as kafka-python's is "kafka-python-<version>"; client_rack:
# None, where kafka-python's "" means the same (no rack; "" is taken and made None);
# default_offset_commit_callback: None, where kafka-python's is a lambda that does nothing
OWN_DEFAULTS = {"client_id", "client_rack", "default_offset_commit_callback"}


def test_every_kafka_python_setting_is_declared_with_its_default() -> None:
    theirs = KafkaConsumer.DEFAULT_CONFIG
    ours = {d.name: d.setting for d in declared()}
    assert set(theirs) <= set(ours), sorted(set(theirs) - set(ours))
    for name, setting in ours.items():
        if setting.origin == "groupclient":
            assert name not in theirs, name
            continue
        if setting.status == "used" and name not in OWN_DEFAULTS:
            default = list(setting.default) if isinstance(setting.default, tuple) else setting.default
            expected = theirs[name]
            if name == "partition_assignment_strategy":  # kafka-python's classes, ours by name
                expected = [cls.name for cls in expected]
            assert default == expected, name
    assert GroupConsumer.DEFAULT_CONFIG.keys() == set(theirs) | {
        "interceptors", "rebalance_event_callback", "group_protocol", "group_remote_assignor",
        "tracer_provider", "meter_provider", "default_api_timeout_ms"}
    assert {k: v for k, v in GroupConsumer.DEFAULT_CONFIG.items() if k in DEFAULTS} == DEFAULTS


def test_every_setting_is_documented_and_typed() -> None:
    assert set(ConsumerSettings.__annotations__) == {d.name for d in declared()}
    for d in declared():
        assert d.type_text and d.setting.section, d.name
        if d.setting.status == "used":
            assert len(d.setting.doc) > 10 and d.setting.doc.endswith("."), d.name


@pytest.mark.parametrize("name", [d.name for d in declared() if d.setting.check])
def test_the_declared_check_is_the_one_run(name: str) -> None:
    check = next(d.setting.check for d in declared() if d.name == name)
    bad: list[Any] = [-1, "10", 1.5, True] + ([0] if check == "positive" else [])
    for value in bad:
        with pytest.raises(ConfigurationError, match=name):
            build_config({name: value})
    if check == "non_negative":
        build_config({name: 0})


def test_help_documents_every_setting_with_its_type_and_default() -> None:
    text = pydoc.render_doc(GroupConsumer, renderer=pydoc.plaintext)
    first_screen = "\n".join(text.splitlines()[:40])
    for part in ("kafka-python's ``KafkaConsumer``", 'group_id="billing"', "for record in consumer",
                 "ConcurrentAccessError", "docs/consumer.md"):
        assert part in first_screen, part
    for d in declared():
        assert d.name in text, d.name
        if d.setting.status == "used":
            assert f"{d.name} ({d.type_text}, default " in text, d.name
            assert " ".join(d.setting.doc.split()[:6]) in " ".join(text.split()), d.name
    assert "**configs: 'Unpack[ConsumerSettings[K, V]]'" in str(inspect.signature(GroupConsumer))


def test_every_public_name_and_method_has_a_docstring() -> None:
    missing = [name for name in groupclient.__all__ if name != "__version__"
               and not inspect.getdoc(getattr(groupclient, name))]
    for name, member in inspect.getmembers(GroupConsumer):
        if not name.startswith("_") and callable(member) and not (inspect.getdoc(member) or "").strip():
            missing.append(f"GroupConsumer.{name}")
    assert not missing, missing


def test_the_docs_hold_the_current_settings_table() -> None:
    """docs/consumer.md's table is ``python -m groupclient.consumer.settings``'s output."""
    docs = (ROOT / "docs" / "consumer.md").read_text()
    assert markdown_table() in docs, "regenerate: python -m groupclient.consumer.settings"
