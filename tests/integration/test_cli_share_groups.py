"""``groupclient groups list|describe`` of share groups (KIP-932), run as a subprocess against the
embedded coordinator and Apache Kafka 4.4: the group (ShareGroupDescribe), its members sharing the
partitions, and each share-partition's start offset and lag (DescribeShareGroupOffsets)."""

from __future__ import annotations

import json

import pytest

from groupclient import ShareConsumer
from tests.integration.test_cli_groups import cli
from tests.integration.test_share_consumer import Cluster, drain

pytestmark = pytest.mark.integration


@pytest.fixture
def cluster(kip848_bootstrap: str) -> Cluster:
    return Cluster(kip848_bootstrap)


def test_a_share_group_is_listed_and_described_with_its_members_start_offsets_and_lag(cluster: Cluster) -> None:
    topic, group = cluster.share_topic(30)
    bootstrap = ["--bootstrap-servers", cluster.bootstrap_servers]
    consumers = [ShareConsumer(topic, bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                               client_id=f"worker-{i}", max_poll_records=10, share_acquire_mode="record_limit",
                               share_acknowledgement_mode="explicit") for i in range(2)]
    try:
        got = drain(consumers, 10, acknowledge=True)
        for consumer in consumers:
            consumer.commit_sync()
        accepted = sum(map(len, got))
        listed = cli("groups", "list", *bootstrap)
        assert listed.returncode == 0, listed.stderr
        [row] = [line.split() for line in listed.stdout.splitlines() if line.startswith(group)]
        assert row[1:4] == ["share", "Stable", "share"]

        described = cli("groups", "describe", group, *bootstrap, "--json")
        assert described.returncode == 0, described.stderr
        d = json.loads(described.stdout)
        assert (d["type"], d["state"], d["assignor"]) == ("share", "Stable", "simple")
        assert sorted(m["client_id"] for m in d["members"]) == ["worker-0", "worker-1"]
        # one partition, shared: assigned to both members at once
        assert all(m["assignment"] == [{"topic": topic, "partition": 0}] for m in d["members"])
        [offsets] = d["offsets"]
        # the start offset (the JSON's committed_offset): past what was accepted, as the broker last
        # wrote the share-partition's state (Kafka reports it one write behind, and so does the
        # embedded coordinator)
        start = offsets["committed_offset"]
        assert 0 <= start <= accepted and offsets["log_end_offset"] == 30, offsets
        assert offsets["lag"] == 30 - accepted and d["total_lag"] == 30 - accepted, (offsets, accepted)

        text = cli("groups", "describe", group, *bootstrap)
        assert text.returncode == 0, text.stderr
        assert "START-OFFSET" in text.stdout and "worker-0" in text.stdout and "worker-1" in text.stdout
    finally:
        for consumer in consumers:
            consumer.close()
