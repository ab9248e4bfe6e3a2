"""The ListGroups handler answers as Kafka 4.1.1 does (checked against a real broker): every
version 0-5, states from v4 (filter trimmed, any case), the "classic" type from v5 (filter in any
case, not trimmed)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.protocol.admin.groups import ListGroupsRequest

from groupclient.coordinator.group.offsets import OffsetToCommit, commit_offsets
from groupclient.coordinator.handlers import HANDLERS
from groupclient.coordinator.share_group.service import ShareGroups
from groupclient.protocol.apis import API_SPECS, ApiKey
from groupclient.error_codes import ErrorCode

from .group_harness import Harness


def _harness() -> Harness:
    """A Stable consumer group, and a group that only has committed offsets (Empty, no type)."""
    h = Harness()
    h.stable_group(2, group="shop")
    codes = commit_offsets(h.coordinator, "offsets-only", -1, "", None, [OffsetToCommit("t", 0, 5)],
                           h.clock.wall_ms(), h.now)
    assert codes[("t", 0)] is ErrorCode.NONE
    return h


def _list(h: Harness, version: int, states: list[str] | None = None, types: list[str] | None = None) -> Any:
    request = ListGroupsRequest(version=version, states_filter=states or [], types_filter=types or [])
    node = SimpleNamespace(coordinator=h.coordinator)
    shares = ShareGroups(h.config, h.store)  # no share group: tests/integration/test_share_groups_conformance.py
    ctx = SimpleNamespace(api_version=version, node=node, now=h.now,
                          core=SimpleNamespace(share_groups=shares, coordinator_node_for=lambda group_id: node))
    response: Any = asyncio.run(HANDLERS[ApiKey.LIST_GROUPS].handle(ctx, request))  # type: ignore[arg-type]
    assert response.version == version and response.error_code == 0
    # the answer must encode at the request's version
    assert bytes(response.encode())
    return response


def _rows(response: Any) -> list[tuple[Any, ...]]:
    v = response.version
    return sorted((g.group_id, g.protocol_type) + ((g.group_state,) if v >= 4 else ())
                  + ((g.group_type,) if v >= 5 else ()) for g in response.groups)


def test_served_versions_are_kafkas() -> None:
    spec = API_SPECS[ApiKey.LIST_GROUPS]
    assert (spec.min_version, spec.max_version) == (0, 5)


@pytest.mark.parametrize("version", range(6))
def test_every_version_lists_every_group(version: int) -> None:
    rows = _rows(_list(_harness(), version))
    expected = [("offsets-only", "", "Empty", "classic"), ("shop", "consumer", "Stable", "classic")]
    assert rows == [row[: 2 + (version >= 4) + (version >= 5)] for row in expected]


@pytest.mark.parametrize(("states", "groups"), [
    (["stable"], ["shop"]), ([" Stable "], ["shop"]), (["STABLE"], ["shop"]), (["Empty"], ["offsets-only"]),
    (["Stable", "empty"], ["offsets-only", "shop"]), (["bogus"], []), ([], ["offsets-only", "shop"]),
])
def test_states_filter(states: list[str], groups: list[str]) -> None:
    assert sorted(g.group_id for g in _list(_harness(), 4, states=states).groups) == groups


@pytest.mark.parametrize(("types", "groups"), [
    (["classic"], ["offsets-only", "shop"]), (["Classic"], ["offsets-only", "shop"]),
    (["consumer", "classic"], ["offsets-only", "shop"]), (["consumer"], []), ([" classic"], []),
    (["share"], []), ([], ["offsets-only", "shop"]),
])
def test_types_filter(types: list[str], groups: list[str]) -> None:
    assert sorted(g.group_id for g in _list(_harness(), 5, types=types).groups) == groups


def test_both_filters_apply() -> None:
    assert [g.group_id for g in _list(_harness(), 5, states=["empty"], types=["CLASSIC"]).groups] == ["offsets-only"]


def test_filters_are_ignored_below_their_version() -> None:
    # a v3 request has no filter fields on the wire: whatever the object carries is not read
    h = _harness()
    assert len(_list(h, 3, states=["bogus"]).groups) == 2
    assert len(_list(h, 4, states=[], types=["bogus"]).groups) == 2


def test_error_answer_has_no_groups() -> None:
    response = HANDLERS[ApiKey.LIST_GROUPS].error_response(ListGroupsRequest(version=5, states_filter=[],
                                                                             types_filter=[]),
                                                           ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    assert (response.error_code, response.groups) == (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, [])
