"""The package is ``mypy --strict`` clean (configured in pyproject.toml)."""

from __future__ import annotations

import re
import subprocess
import sys
import typing
from pathlib import Path

from kafka.consumer.fetcher import ConsumerRecord as KafkaPythonsRecord

from groupclient import ConsumerRecord, GroupConsumer, TopicPartition
from groupclient.aio import AsyncGroupConsumer

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


def shown_as_now(revealed: str) -> str:
    """A type as mypy shows it now: ``X | None`` where mypy up to 1.10 (the floor) shows
    ``Union[X, None]``, and without the ``builtins.`` it put before builtin names."""
    revealed = revealed.replace("builtins.", "")
    while (start := revealed.find("Union[")) >= 0:
        depth, parts, part_start = 0, [], start + len("Union[")
        for i in range(part_start, len(revealed)):
            if revealed[i] == "[":
                depth += 1
            elif revealed[i] == "]" and depth:
                depth -= 1
            elif revealed[i] == "]":
                parts.append(revealed[part_start:i].strip())
                break
            elif revealed[i] == "," and not depth:
                parts.append(revealed[part_start:i].strip())
                part_start = i + 1
        revealed = revealed[:start] + " | ".join(parts) + revealed[i + 1:]
    return revealed


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
    shown = shown_as_now(poll_type.group(1))
    assert shown.startswith("dict[tuple[str, int, fallback=groupclient.structs.TopicPartition], "
                            "list[tuple[str, int, int, int, int, int, bytes | None, bytes | None, "), output
    assert shown.endswith("fallback=groupclient.structs.ConsumerRecord[bytes, bytes]]]]"), output
    assert re.search(r'app.py:12: note: Revealed type is "(builtins\.)?int"', output), output
    assert "error" not in output.replace("note:", ""), output


def test_a_misspelt_setting_a_wrong_type_and_a_misspelt_field_are_refused(tmp_path: Path) -> None:
    output = run_mypy_on(tmp_path, USER_MISTAKES)
    assert 'Unexpected keyword argument "bootstrap_server" for "GroupConsumer"; did you mean "bootstrap_servers"?' in output, output
    assert 'Argument "session_timeout_ms" to "GroupConsumer" has incompatible type "str"; expected "int"' in output, output
    assert '"ConsumerRecord[bytes, bytes]" has no attribute "ofset"' in output, output


# Records typed by the deserializers (issue 39).  Each reveal_type line says what mypy must show.
TYPED_RECORDS = '''
import json

from kafka import ConsumerRebalanceListener as KafkaPythonListener  # type: ignore[import-untyped]

from groupclient import (
    ConsumerRebalanceListener, ConsumerRecord, ConsumerSettings, GroupConsumer, TopicPartition)
from groupclient.aio import AsyncGroupConsumer
from groupclient.aio import ConsumerRebalanceListener as AsyncListener


def parse(data: bytes) -> dict[str, int]:  # json.loads, typed
    parsed: dict[str, int] = json.loads(data)
    return parsed


def parse_tombstones_too(data: bytes | None) -> dict[str, int]:  # AsyncGroupConsumer's get None too
    return {} if data is None else parse(data)


class Keys:  # a kafka-python Deserializer object (duck-typed)
    def deserialize(self, topic: str, headers: list[tuple[str, bytes | None]], data: bytes) -> str:
        return data.decode()


class Commits(ConsumerRebalanceListener):
    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        print(revoked)


class KafkaPythons(KafkaPythonListener):  # type: ignore[misc]  # kafka-python is untyped
    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        print(revoked)

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        print(assigned)


class OnlyAssigned:  # any object with one of the methods
    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        print(partitions)


class Seeks(AsyncListener):
    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        print(assigned)


def total(record: ConsumerRecord[str, dict[str, int]]) -> int:
    return sum((record.value or {}).values())


def run() -> None:
    consumer = GroupConsumer("orders", key_deserializer=Keys(), value_deserializer=parse)
    reveal_type(consumer)  # GroupConsumer[str, dict[str, int]]
    consumer.subscribe(["orders"], listener=Commits())
    consumer.subscribe(["orders"], listener=KafkaPythons())
    consumer.subscribe(["orders"], listener=OnlyAssigned())
    for record in consumer:
        reveal_type(record.value)  # dict[str, int] | None
        reveal_type(record.key)  # str | None
        total(record)
    decoding = GroupConsumer("orders", value_deserializer=lambda data: data.decode())
    reveal_type(decoding)  # GroupConsumer[bytes, str]
    raw = GroupConsumer("orders", group_id="billing")
    for records in raw.poll(timeout_ms=100).values():
        for r in records:
            reveal_type(r.value)  # bytes | None
            reveal_type(r.key)  # bytes | None
    config: ConsumerSettings[bytes, dict[str, int]] = {"group_id": "billing", "value_deserializer": parse}
    reveal_type(GroupConsumer("orders", **config))  # GroupConsumer[bytes, dict[str, int]]


async def run_async() -> None:
    consumer = AsyncGroupConsumer("orders", value_deserializer=parse_tombstones_too,
                                  key_deserializer=lambda key: key.decode() if key is not None else "")
    reveal_type(consumer)  # AsyncGroupConsumer[str, dict[str, int]]
    consumer.subscribe(["orders"], listener=Seeks())
    consumer.subscribe(["orders"], listener=OnlyAssigned())
    one = await consumer.getone()
    reveal_type(one.value)  # dict[str, int] | None
    for records in (await consumer.getmany(timeout_ms=100)).values():
        for record in records:
            reveal_type(record.key)  # str | None
    async for each in consumer:
        total(each)
    raw = AsyncGroupConsumer("orders")
    async for r in raw:
        reveal_type(r.value)  # bytes | None
'''

TYPE_MISTAKES = '''
import json

from groupclient import GroupConsumer, TopicPartition
from groupclient.aio import AsyncGroupConsumer


def parse(data: bytes) -> dict[str, int]:
    parsed: dict[str, int] = json.loads(data)
    return parsed


def parse_tombstones_too(data: bytes | None) -> dict[str, int]:
    return {} if data is None else parse(data)


def needs_int(n: int) -> None:
    print(n)


class NoListener:
    def on_partition_revoked(self, revoked: set[TopicPartition]) -> None:  # misspelt
        print(revoked)


class CoroutineListener:  # GroupConsumer would not await it
    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        print(assigned)


def run() -> None:
    consumer = GroupConsumer("orders", value_deserializer=parse)
    for record in consumer:
        if record.value is not None:
            record.value.decode()  # error: "dict[str, int]" has no attribute "decode"
            needs_int(record.value)  # error: Argument 1 to "needs_int" has incompatible type "dict[str, int]"
    for r in GroupConsumer("orders"):
        r.value.decode()  # error: Item "None" of "bytes | None" has no attribute "decode"
    consumer.subscribe(["orders"], listener=NoListener())  # error: Argument "listener" to "subscribe" of "GroupConsumer"
    consumer.subscribe(["orders"], listener=CoroutineListener())  # error: Argument "listener" to "subscribe" of "GroupConsumer"


async def run_async() -> None:
    consumer = AsyncGroupConsumer("orders", value_deserializer=parse_tombstones_too)
    record = await consumer.getone()
    if record.value is not None:
        record.value.decode()  # error: "dict[str, int]" has no attribute "decode"
    for records in (await consumer.getmany()).values():
        for r in records:
            if r.value is not None:
                needs_int(r.value)  # error: Argument 1 to "needs_int" has incompatible type "dict[str, int]"
    # parse() is not called with None, which AsyncGroupConsumer passes for a tombstone:
    AsyncGroupConsumer("orders", value_deserializer=parse)  # error: Argument "value_deserializer" to "AsyncGroupConsumer"
    consumer.subscribe(["orders"], listener=NoListener())  # error: Argument "listener" to "subscribe" of "AsyncSubscriptions"
'''


def _by_line(output: str, kind: str) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for line in output.splitlines():
        match = re.match(rf"app\.py:(\d+): {kind}: (.*?)(  \[[a-z-]+\])?$", line)
        if match:
            found.setdefault(int(match.group(1)), []).append(match.group(2))
    return found


def _expected(source: str, marker: str) -> dict[int, str]:
    """What each line of ``source`` with ``marker`` in its comment says mypy must report there."""
    return {number: line.split(marker, 1)[1].strip() for number, line in enumerate(source.splitlines(), 1)
            if marker in line}


def test_records_are_typed_by_the_deserializers_and_listeners_by_their_methods(tmp_path: Path) -> None:
    output = run_mypy_on(tmp_path, TYPED_RECORDS)
    assert " error: " not in output, output
    revealed = _by_line(output, "note")
    expected = {number: comment for number, comment in _expected(TYPED_RECORDS, "  # ").items()
                if "reveal_type(" in TYPED_RECORDS.splitlines()[number - 1]}
    assert len(expected) == 11
    for number, wanted in expected.items():
        shown = [shown_as_now(re.sub(r"Revealed type is \"(.*)\"", r"\1", note)) for note in revealed.get(number, [])]
        shown = [re.sub(r"groupclient\.(consumer\.group_consumer|aio\.consumer)\.", "", s) for s in shown]
        assert shown == [wanted], (number, wanted, output)


def test_misusing_a_typed_record_or_passing_a_bad_listener_is_refused(tmp_path: Path) -> None:
    output = run_mypy_on(tmp_path, TYPE_MISTAKES)
    errors = _by_line(output, "error")
    expected = _expected(TYPE_MISTAKES, "# error: ")
    assert len(expected) == 9
    for number, wanted in expected.items():
        assert any(e.startswith(wanted) for e in errors.get(number, [])), (number, wanted, output)
    assert set(errors) == set(expected), output


def test_the_record_type_stays_kafka_pythons_and_can_be_subscripted_at_run_time() -> None:
    assert ConsumerRecord is KafkaPythonsRecord
    assert typing.get_origin(ConsumerRecord[bytes, bytes]) is KafkaPythonsRecord

    # evaluated annotations: no ``from __future__ import annotations`` here
    namespace: dict[str, object] = {}
    exec("""
from groupclient import ConsumerRecord, GroupConsumer, TopicPartition
from groupclient.aio import AsyncGroupConsumer

def handle(record: ConsumerRecord[bytes, dict[str, int]]) -> None: ...
def drain(consumer: GroupConsumer[str, bytes]) -> dict[TopicPartition, list[ConsumerRecord[str, bytes]]]: ...
async def drain_async(consumer: AsyncGroupConsumer[bytes, bytes]) -> None: ...
""", namespace)
    hints = typing.get_type_hints(namespace["handle"])
    assert hints["record"] == ConsumerRecord[bytes, dict[str, int]]
    assert typing.get_type_hints(namespace["drain"])["consumer"] == GroupConsumer[str, bytes]
    assert typing.get_type_hints(namespace["drain_async"])["consumer"] == AsyncGroupConsumer[bytes, bytes]
    record = KafkaPythonsRecord("orders", 0, -1, 5, 0, 0, None, b"v", [], None, -1, 1, -1)
    assert isinstance(record, ConsumerRecord) and record.value == b"v"
    assert TopicPartition("orders", 0) == ("orders", 0)
