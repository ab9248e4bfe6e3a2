"""Executor tasks as members of a share group (groupclient.spark.consume_share): batches accepted
when the function returns, released when it raises and delivered again, on the embedded
coordinator and on Apache Kafka 4.4."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from groupclient import ShareConsumer
from groupclient.errors import ConfigurationError
from groupclient.spark import StopWhen, consume_share
from tests.integration.peers import wait_until
from tests.spark.helpers import new_topic, produce

pytestmark = pytest.mark.integration


def share_group(bootstrap: str) -> str:
    """A share group that starts at the beginning of its topics."""
    group = f"sg-{uuid.uuid4().hex[:6]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        assert admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, group, configs={
            "share.auto.offset.reset": "earliest"})]) == {"group": {group: "OK"}}
    finally:
        admin.close()
    return group


class _Recorder:
    """Writes each batch's (partition, offset, delivery count) to a file per call; fails the first
    batch any task gets, once (the marker file), after writing it to failed.json."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def __call__(self, batch: Any) -> None:
        import os

        rows = list(zip(batch["partition"].to_pylist(), batch["offset"].to_pylist(),
                        batch["delivery_count"].to_pylist()))
        try:
            os.close(os.open(f"{self.folder}/failed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            Path(self.folder, f"{uuid.uuid4().hex}.json").write_text(json.dumps(rows))
            return
        Path(self.folder, "failed.json").write_text(json.dumps(rows))
        raise RuntimeError("the handler failed on this batch")


def nothing_left(bootstrap: str, group: str, topic: str) -> bool:
    """No record of ``topic`` is left for the share group: a new member gets none."""
    with ShareConsumer(topic, bootstrap_servers=bootstrap, group_id=group) as consumer:
        return not any(consumer.poll(timeout_ms=500) for _ in range(4))


def test_tasks_accept_what_they_processed_and_a_failed_batch_comes_again(spark: Any, bootstrap: str,
                                                                         tmp_path: Path) -> None:
    topic = new_topic(bootstrap, 2)
    group = share_group(bootstrap)
    placed = produce(bootstrap, topic, 400, 2)
    # three members on two partitions: a share group lets more members than partitions work
    reports = consume_share(spark, topic, {"bootstrap_servers": bootstrap, "group_id": group},
                            _Recorder(str(tmp_path)), stop=StopWhen(idle_ms=4000, deadline=time.time() + 120),
                            members=3, batch_records=50)
    failed = {(p, o) for p, o, _ in json.loads((tmp_path / "failed.json").read_text())}
    done = [tuple(x) for f in tmp_path.glob("*.json") if f.name != "failed.json" for x in json.loads(f.read_text())]
    assert failed and {(p, o) for p, o, _ in done} == placed, "every record processed (the failed batch again)"
    assert len(done) == len(placed), "no record processed twice once accepted"
    assert all(n >= 2 for p, o, n in done if (p, o) in failed), "the failed batch came back, counted again"
    # (records the failed task had fetched ahead and not handed out come back counted again too: the
    # broker counts an acquisition as a delivery)
    assert any(r.attempt == 1 for r in reports), "the failed task was tried again"
    assert sum(r.accepted for r in reports) == len(placed) and sum(r.acknowledgement_errors for r in reports) == 0
    assert {r.stop_reason for r in reports} == {"no record for 4000 ms"}
    assert wait_until(lambda: nothing_left(bootstrap, group, topic), 30)


def test_bad_arguments_are_refused_on_the_driver(spark: Any, embedded: Any) -> None:
    config = {"bootstrap_servers": embedded.bootstrap_servers, "group_id": "g"}
    with pytest.raises(ConfigurationError, match="at_end"):
        consume_share(spark, "t", config, print, stop=StopWhen(at_end=True))
    with pytest.raises(ConfigurationError, match="leave share_acknowledgement_mode out"):
        consume_share(spark, "t", {**config, "share_acknowledgement_mode": "implicit"}, print,
                      stop=StopWhen(idle_ms=100))
    with pytest.raises(ConfigurationError, match="group_id"):
        consume_share(spark, "t", {"bootstrap_servers": "127.0.0.1:1"}, print, stop=StopWhen(idle_ms=100))
