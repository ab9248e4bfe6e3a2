"""The stable point the peer tests wait for (tests/integration/peers.py): the coordinator's owner
sets, one per peer, an exact cover, and the peers' own views the same sets."""

from __future__ import annotations

from tests.integration.peers import stable_cover


def test_the_coordinators_cover_with_the_peers_views_matching_is_stable() -> None:
    assert stable_cover({"a": {0, 1}, "b": {2, 3}}, [{2, 3}, {0, 1}], 4)


def test_a_peer_still_holding_an_earlier_generations_partitions_is_not() -> None:
    """The coordinator has split the four partitions, but the old leader still says it has them all
    and the newcomer has nothing yet: the views cover the partitions exactly, yet are not stable."""
    assert not stable_cover({"a": {0, 1}, "b": {2, 3}}, [set(), {0, 1, 2, 3}], 4)


def test_a_coordinator_cover_missing_a_peer_or_a_partition_is_not() -> None:
    assert not stable_cover({"a": {0, 1, 2, 3}}, [{0, 1, 2, 3}, set()], 4)
    assert not stable_cover({"a": {0, 1}, "b": {2}}, [{0, 1}, {2}], 4)
    assert not stable_cover(None, [], 4)
