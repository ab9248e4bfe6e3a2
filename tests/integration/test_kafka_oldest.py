"""The oldest Apache Kafka the client is tested against (tests/kafka/broker.py's OLDEST_VERSION,
4.1.1): the rest of the suite runs on Kafka 4.4, which answers the consumer protocol differently
(docs/coordinator.md tables how), so each group protocol gets one smoke test here: two groupclient
members in their own processes share a topic's partitions, consume every record once between
them, never own a partition at the same instant, and commit exactly what they consumed."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.integration import external
from tests.integration.ownership import double_ownership
from tests.integration.peers import PeerSet, all_consumed, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.kafka]
PARTITIONS = 4


@pytest.fixture(scope="module")
def oldest_bootstrap() -> Iterator[str]:
    from tests.conftest import need_java
    from tests.kafka.broker import OLDEST_VERSION, KafkaBroker

    need_java()
    with KafkaBroker(version=OLDEST_VERSION) as broker:
        yield broker.bootstrap


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_group_shares_consumes_and_commits_on_the_oldest_kafka(oldest_bootstrap: str, peers: PeerSet,
                                                                 protocol: str) -> None:
    bootstrap = oldest_bootstrap
    topic, group = external.new_topic(bootstrap, PARTITIONS), f"oldest-{protocol}-{uuid.uuid4().hex[:6]}"
    counts: Counter[int] = Counter()
    expected = external.produce(bootstrap, topic, 200, PARTITIONS, counts)
    members = [peers.start("groupclient", bootstrap, group, topic, protocol=protocol) for _ in range(2)]
    assert external.peer_cover(members, PARTITIONS, 90), [m.describe() for m in members]
    expected |= external.produce(bootstrap, topic, 100, PARTITIONS, counts)
    assert wait_until(lambda: all_consumed(members, expected), 60), [m.describe() for m in members]
    assert external.commits_match(bootstrap, group, topic, PARTITIONS, counts)
    peers.stop_all()
    assert not double_ownership(members, time.monotonic())
    assert not any(m.errors for m in members), [m.describe() for m in members]
